"""`rocmrevive patch` on real vLLM release files: vllm/utils.py and the .dist-info (METADATA,
RECORD) of vLLM 0.4.1, 0.4.2 (the versions the RCCL-path patch is for) and 0.4.3 (one it does not
know), taken from the releases' wheels (`pip download --no-deps`) and cached under
/var/tmp/rocmrevive-test-cache/vllm/<version>/. Apply, verify, roll back byte for byte; refuse a
version the patch does not know and a file that is not the release's. GNU patch, where
installed, is the independent judge of the diff; the patched find_library itself is run."""
from __future__ import annotations

import ast
import functools
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import types
import zipfile
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.install.patches import (
    PatchMismatch,
    apply_hunks,
    apply_patch,
    find_dist,
    load_patches,
    parse_diff,
    patch_named,
    patch_status,
)
from rocmrevive.rootfs import Root
from tests.cli_support import rr_parsed as rr
from tests.conftest import CACHE, REPO
from tests.fixtures import fixcache

PID = "vllm-rccl-ld-library-path"
SITE = "/home/alice/venvs/vllm/lib/python3.11/site-packages"
MEMBERS = ("vllm/utils.py", "vllm-{v}.dist-info/METADATA", "vllm-{v}.dist-info/RECORD")


def vllm_release(version: str) -> Path:
    """The release's files, from its wheel (downloaded once, only the members kept)."""
    def build(out: Path) -> None:
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            p = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
                                "--python-version", "3.11", "--platform", "manylinux1_x86_64", f"vllm=={version}",
                                "-d", tmp], capture_output=True, text=True)
            wheels = list(Path(tmp).glob("vllm-*.whl"))
            assert p.returncode == 0 and wheels, f"cannot download vllm {version}: {p.stderr.strip()[-300:]}"
            with zipfile.ZipFile(wheels[0]) as z:
                for m in MEMBERS:
                    name = m.format(v=version)
                    (out / name).parent.mkdir(parents=True, exist_ok=True)
                    (out / name).write_bytes(z.read(name))

    # reused while its record (the release, the members, their sha256) matches (fixcache)
    return fixcache.build_entry(CACHE / "vllm" / version, {"release": f"vllm=={version}", "members": list(MEMBERS)},
                                build, hash_files=True)


def venv_with(root: Path, version: str) -> Path:
    """A venv in the machine whose site-packages holds the release's files as pip installed them."""
    site = root / SITE.lstrip("/")
    site.mkdir(parents=True)
    (root / "home/alice/venvs/vllm/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    src = vllm_release(version)
    for m in MEMBERS:
        name = m.format(v=version)
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src / name, site / name)
    return site


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def gnu_patched(work: Path, pid: str, rel: str, original: bytes) -> bytes:
    """The bytes GNU patch makes of ``original`` (placed at ``work/rel``) with patches/<pid>.diff."""
    (work / rel).parent.mkdir(parents=True)
    (work / rel).write_bytes(original)
    subprocess.run(["patch", "-s", "-p1", "-i", str(REPO / "patches" / f"{pid}.diff")], cwd=work, check=True)
    return (work / rel).read_bytes()


@pytest.fixture(scope="module")
def spec():
    return patch_named(load_patches(REPO / "patches"), PID)


@pytest.mark.parametrize("version", ["0.4.1", "0.4.2"])
def test_apply_verify_rollback_byte_identical(tmp_path, version):
    root = tmp_path / "m"
    site = venv_with(root, version)
    utils = site / "vllm/utils.py"
    original = utils.read_bytes()
    dist = find_dist(Root(root), SITE, "vllm")
    assert dist.version == version and dist.record["vllm/utils.py"] == sha(utils)   # the release's own file

    rc, doc, err = rr(root, "--json", "patch", "list")
    assert rc == 0, err
    (env,) = [e for e in doc["environments"] if e["patch"] == PID]
    assert (env["patch"], env["site"], env["state"], env["version"]) == (PID, SITE, "applicable", version)

    rc, doc, err = rr(root, "--json", "patch", "apply", PID)
    assert rc == 0 and doc["changed"] is True and doc["status"]["state"] == "applied", err
    patched = utils.read_bytes()
    assert b"    if env_ld_library_path:\n        # rocmrevive: LD_LIBRARY_PATH first" in patched
    assert b"        ] + locs\n" in patched and b"if not locs and env_ld_library_path" not in patched
    if shutil.which("patch"):   # GNU patch, on the release file, gives the same bytes
        assert gnu_patched(tmp_path / "gnu", PID, "vllm/utils.py", original) == patched

    rc, doc, _ = rr(root, "--json", "patch", "verify", PID)
    assert rc == 0 and doc["status"]["state"] == "applied" and doc["status"]["txid"]
    rc, doc, _ = rr(root, "--json", "patch", "apply", PID)           # idempotent
    assert rc == 0 and doc["changed"] is False and doc["transaction"] is None

    rc, doc, err = rr(root, "--json", "patch", "rollback", PID)
    assert rc == 0 and doc["changed"] is True and doc["status"]["state"] == "applicable", err
    assert utils.read_bytes() == original
    rc, doc, _ = rr(root, "--json", "patch", "verify", PID)
    assert rc == 20 and doc["error"]["code"] == "CHANGES_PENDING"
    rc, doc, _ = rr(root, "--json", "patch", "rollback", PID)         # nothing left to undo
    assert rc == 2 and "has not applied" in doc["error"]["message"]


def test_a_version_the_patch_does_not_know_is_refused(tmp_path, spec):
    root = tmp_path / "m"
    site = venv_with(root, "0.4.3")
    utils = site / "vllm/utils.py"
    before = utils.read_bytes()
    apply_hunks(before, list(spec.hunks))        # the lines alone would match: the version gate decides
    rc, doc, _ = rr(root, "--json", "patch", "apply", PID)
    assert rc == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED"
    assert doc["error"]["message"] == ("vllm 0.4.3 is not a version this patch knows (0.4.1, 0.4.2); "
                                       "refusing to patch it")
    assert utils.read_bytes() == before and not (root / "var/lib/rocmrevive/tx").exists()


def test_a_file_that_is_not_the_releases_is_refused(tmp_path, spec):
    root = tmp_path / "m"
    site = venv_with(root, "0.4.2")
    utils = site / "vllm/utils.py"
    utils.write_bytes(utils.read_bytes() + b"\n# a local edit\n")
    st = patch_status(Root(root), spec, SITE)
    assert st.state == "modified" and "is neither vllm 0.4.2's file" in st.reason
    with pytest.raises(RevError) as ei:
        apply_patch(Root(root), spec, SITE)
    assert ei.value.code == "VERIFY_FAILED"
    rc, doc, _ = rr(root, "--json", "patch", "verify", PID)
    assert rc == 6
    # a source install (no RECORD hash for the file) is matched by the diff's lines alone
    record = site / "vllm-0.4.2.dist-info/RECORD"
    record.write_text("".join(line for line in record.read_text().splitlines(True) if not line.startswith("vllm/utils.py,")))
    utils.write_bytes(vllm_release("0.4.2").joinpath("vllm/utils.py").read_bytes())
    st = patch_status(Root(root), spec, SITE)
    assert st.state == "applicable" and st.warnings and "RECORD has no sha256" in st.warnings[0]


def _find_library(source: bytes, ldconfig_output: str):
    """vLLM's own find_library from the file, run with `ldconfig -p` answering ``ldconfig_output``."""
    tree = ast.parse(source)
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "find_library")
    mod = ast.Module(body=[fn], type_ignores=[])
    fake_subprocess = types.SimpleNamespace(check_output=lambda cmd: ldconfig_output.encode())
    ns = {"subprocess": fake_subprocess, "os": os, "lru_cache": functools.lru_cache,
          "envs": types.SimpleNamespace(LD_LIBRARY_PATH=os.environ.get("LD_LIBRARY_PATH"))}
    exec(compile(mod, "vllm/utils.py", "exec"), ns)
    return ns["find_library"]


def test_the_patched_function_takes_ld_library_path_first(tmp_path, spec, monkeypatch):
    mine = tmp_path / "rccl/lib"
    mine.mkdir(parents=True)
    (mine / "librccl.so.1").write_bytes(b"\x7fELF")
    monkeypatch.setenv("LD_LIBRARY_PATH", str(mine))
    cache = "\tlibrccl.so.1 (libc6,x86-64) => /opt/rocm-6.4.3/lib/librccl.so.1\n"
    original = vllm_release("0.4.2").joinpath("vllm/utils.py").read_bytes()
    assert _find_library(original, cache)("librccl.so.1") == "/opt/rocm-6.4.3/lib/librccl.so.1"   # the bug
    patched = apply_hunks(original, list(spec.hunks))
    assert _find_library(patched, cache)("librccl.so.1") == str(mine / "librccl.so.1")
    assert _find_library(patched, "")("librccl.so.1") == str(mine / "librccl.so.1")
    monkeypatch.delenv("LD_LIBRARY_PATH")
    assert _find_library(patched, cache)("librccl.so.1") == "/opt/rocm-6.4.3/lib/librccl.so.1"


def test_diff_reader_and_loader_refuse_bad_input(tmp_path):
    with pytest.raises(ValueError, match="counts say"):
        parse_diff("--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-a\n+b\n")
    path, hunks = parse_diff("--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n k\n-a\n+b\n")
    assert path == "x.py"
    with pytest.raises(PatchMismatch, match="matches 2 places"):
        apply_hunks(b"k\na\nk\na\n", hunks)
    assert apply_hunks(apply_hunks(b"k\na\n", hunks), hunks, reverse=True) == b"k\na\n"
    (tmp_path / "p.toml").write_text('id = "x"\npackage = "vllm"\nversions = ["1"]\nfile = "y.py"\ndiff = "p.diff"\n')
    (tmp_path / "p.diff").write_text("--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n k\n-a\n+b\n")
    with pytest.raises(RevError, match="the diff changes x.py, the patch says file = y.py"):
        load_patches(tmp_path)
    rc, doc, _ = rr(tmp_path, "--json", "patch", "apply", "no-such-patch")
    assert rc == 2 and "no patch no-such-patch" in doc["error"]["message"]
