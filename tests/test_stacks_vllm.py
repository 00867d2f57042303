"""vLLM 0.32.0, 0.33.0 and 0.34.0 (the last three minor releases) on an MI50 + RX 6900 XT box, with
the releases' real wheels (`pip download --no-deps`, cached by tests/fixtures/wheels.py against the
sha256 recorded here). Only the Python files and the .dist-info are unpacked into a venv's
site-packages inside a machine folder: vLLM's Python is the same in its CUDA and ROCm builds.

* PyNccl: the release's own find_nccl_library() (imported from the unpacked wheel, with the real
  CPU torch) returns exactly the VLLM_NCCL_SO_PATH that `rocmrevive rccl env` writes, and its
  NCCLLibrary hands that path to ctypes.CDLL: an environment variable does it, no patch.
* gfx906 counted as CDNA: `patch apply vllm-rocm-gfx906-not-cdna`, verify, roll back byte for byte;
  the release's own classification lines, run before and after, say what changes.
"""
from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.install.patches import find_dist
from rocmrevive.rccl.envfile import parse_env_text
from rocmrevive.rootfs import Root
from tests.cli_support import rr_parsed as rr
from tests.conftest import TRIPLET
from tests.fixtures.wheels import cached_wheel, unpack_wheel
from tests.machines.build import build
from tests.test_patch import gnu_patched

PID = "vllm-rocm-gfx906-not-cdna"
SITE = "/home/alice/venvs/vllm/lib/python3.12/site-packages"
# sha256 of vllm-X-cp38-abi3-manylinux_2_28_x86_64.whl as the index served it
VLLM_WHEELS = {
    "0.32.0": "5e2ecdc5b0baf72921c288486417ca82778456a448e4fe60b62ee43c0dfc8611",
    "0.33.0": "4b6bdec4ab269990bf70d45a3c1e94c3760a27064513760193b26d6f0da883aa",
    "0.34.0": "79ca4b3cd74aec08c4bf476bdf0cb15735b605ae5368526a2faae1e30f044ca2",
}
VERSIONS = sorted(VLLM_WHEELS)
R543 = "librccl1_5.4.3-3+b1_amd64"
RCCL = "/opt/rccl-gfx906-gfx1030/lib/librccl.so.1"


def _python_part(name: str) -> bool:
    return name.endswith(".py") or ".dist-info/" in name


@pytest.fixture(scope="module")
def releases(tmp_path_factory) -> dict[str, Path]:
    """version -> a site-packages folder holding the release's Python files and .dist-info."""
    out = {}
    for v in VERSIONS:
        whl = cached_wheel("vllm", v, VLLM_WHEELS[v])
        out[v] = unpack_wheel(whl, tmp_path_factory.mktemp(f"vllm-{v}"), members=_python_part)
    return out


def venv_with(root: Path, release: Path) -> Path:
    site = root / SITE.lstrip("/")
    (root / "home/alice/venvs/vllm").mkdir(parents=True)
    (root / "home/alice/venvs/vllm/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    shutil.copytree(release, site)
    return site


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def classify(rocm_py: bytes, arch: str) -> dict:
    """Run the release's own module-level classification (from ``_ON_GFX1X =`` to ``_ON_RDNA4 =``)
    for a gcnArch string, and its supports_fp8() expression."""
    tree = ast.parse(rocm_py)
    body = [n for n in tree.body if isinstance(n, ast.Assign) and isinstance(n.targets[0], ast.Name)]
    names = [n.targets[0].id for n in body]
    part = body[names.index("_ON_GFX1X"):names.index("_ON_RDNA4") + 1]
    ns = {"_GCN_ARCH": arch}
    exec(compile(ast.Module(part, []), "rocm.py", "exec"), ns)
    fp8 = next(f for c in tree.body if isinstance(c, ast.ClassDef) for f in c.body
               if isinstance(f, ast.FunctionDef) and f.name == "supports_fp8")
    expr = fp8.body[-1].value          # `return on_cdna() or on_rdna()` (0.32: on_rdna4())
    ns.update(on_cdna=lambda: ns["_ON_CDNA"], on_rdna=lambda: ns["_ON_RDNA"], on_rdna4=lambda: ns["_ON_RDNA4"])
    return {"cdna": ns["_ON_CDNA"], "rdna": ns["_ON_RDNA"],
            "fp8": eval(compile(ast.Expression(expr), "rocm.py", "eval"), ns)}


@pytest.mark.parametrize("version", VERSIONS)
def test_patch_apply_verify_rollback_on_the_release(tmp_path, releases, version):
    root = tmp_path / "m"
    site = venv_with(root, releases[version])
    rocm = site / "vllm/platforms/rocm.py"
    original = rocm.read_bytes()
    dist = find_dist(Root(root), SITE, "vllm")
    assert dist.version == version and dist.record["vllm/platforms/rocm.py"] == sha(rocm)

    # the release as shipped: an MI50 is "CDNA" and "FP8 capable"; an RX 6900 XT is neither
    assert classify(original, "gfx906") == {"cdna": True, "rdna": False, "fp8": True}
    assert classify(original, "gfx1030") == {"cdna": False, "rdna": False, "fp8": False}

    rc, doc, err = rr(root, "--json", "patch", "list")
    assert rc == 0, err
    mine = [e for e in doc["environments"] if e["patch"] == PID]
    assert [(e["site"], e["state"], e["version"]) for e in mine] == [(SITE, "applicable", version)]
    other = [e for e in doc["environments"] if e["patch"] == "vllm-rccl-ld-library-path"]
    assert [e["state"] for e in other] == ["file-missing"]      # 0.4.x patch: vllm/utils.py is a package now

    rc, doc, err = rr(root, "--json", "patch", "apply", PID)
    assert rc == 0 and doc["changed"] is True and doc["status"]["state"] == "applied", err
    patched = rocm.read_bytes()
    if shutil.which("patch"):   # GNU patch, on the release file, gives the same bytes
        assert gnu_patched(tmp_path / "gnu", PID, "vllm/platforms/rocm.py", original) == patched
    compile(patched, "rocm.py", "exec")
    assert classify(patched, "gfx906") == {"cdna": False, "rdna": False, "fp8": False}
    for arch in ("gfx90a", "gfx942", "gfx950", "gfx908"):                 # CDNA stays CDNA
        assert classify(patched, arch) == classify(original, arch) and classify(patched, arch)["cdna"]
    for arch in ("gfx1030", "gfx1100", "gfx1201"):
        assert classify(patched, arch) == classify(original, arch)

    rc, doc, _ = rr(root, "--json", "patch", "verify", PID)
    assert rc == 0 and doc["status"]["state"] == "applied" and doc["status"]["txid"]
    rc, doc, _ = rr(root, "--json", "patch", "apply", PID)               # idempotent
    assert rc == 0 and doc["changed"] is False

    rc, doc, err = rr(root, "--json", "patch", "rollback", PID)
    assert rc == 0 and doc["status"]["state"] == "applicable", err
    assert rocm.read_bytes() == original and sha(rocm) == dist.record["vllm/platforms/rocm.py"]


def test_a_locally_edited_rocm_py_is_refused_and_left_alone(tmp_path, releases):
    root = tmp_path / "m"
    site = venv_with(root, releases["0.34.0"])
    rocm = site / "vllm/platforms/rocm.py"
    edited = rocm.read_bytes().replace(b'"gfx9", "gfx1250"', b'"gfx90a", "gfx1250"')
    rocm.write_bytes(edited)
    rc, doc, _ = rr(root, "--json", "patch", "apply", PID)
    assert rc == 6 and doc["error"]["code"] == "VERIFY_FAILED"
    assert "is neither vllm 0.34.0's file" in doc["error"]["message"]
    assert rocm.read_bytes() == edited


@pytest.mark.debian
def test_rccl_env_on_mi50_rx6900xt_is_what_pynccl_loads(tmp_path, releases, debian_pkgs):
    """The env file names Debian's real RCCL 5.4.3 (gfx906 and gfx1030 code); each release's own
    find_nccl_library(), run with the file sourced by bash, returns that path, and NCCLLibrary
    passes it to ctypes.CDLL unchanged."""
    root = build("mi50-rx6900xt", tmp_path / "m")
    lib = root / RCCL.lstrip("/")
    lib.parent.mkdir(parents=True)
    src = debian_pkgs[R543] / TRIPLET
    real = next(p for p in sorted(src.glob("librccl.so.1*")) if not p.is_symlink())
    shutil.copy2(real, lib)
    rc, text, err = rr(root, "rccl", "env", "--lib", RCCL)
    assert rc == 0, err
    env = parse_env_text(text)
    assert env["VLLM_NCCL_SO_PATH"] == RCCL
    assert "# note: vLLM 0.32-0.34 count gfx906 as CDNA" in text and f"patch apply {PID}" in text
    assert "for every GPU: run one vLLM per architecture" in text
    f = tmp_path / "rccl.env"
    f.write_text(text)
    for v in VERSIONS:
        site = releases[v]
        probe = ("import sys; sys.path.insert(0, sys.argv[1]); "
                 "from vllm.utils.nccl import find_nccl_library; print(find_nccl_library())")
        out = subprocess.run(["bash", "-c", f'source {f}; exec "$0" -c "$1" "$2"', sys.executable, probe, str(site)],
                             capture_output=True, text=True, env={"PATH": os.environ["PATH"]}, timeout=300)
        assert out.returncode == 0, out.stderr[-1500:]
        assert out.stdout.strip().splitlines()[-1] == RCCL, (v, out.stdout)
        # NCCLLibrary(so_file=None): so_file = so_file or find_nccl_library(); ctypes.CDLL(so_file)
        wrapper = ast.parse((site / "vllm/distributed/device_communicators/pynccl_wrapper.py").read_text())
        init = next(f for c in wrapper.body if isinstance(c, ast.ClassDef) and c.name == "NCCLLibrary"
                    for f in c.body if isinstance(f, ast.FunctionDef) and f.name == "__init__")
        src_init = ast.unparse(init)
        assert "so_file = so_file or find_nccl_library()" in src_init and "ctypes.CDLL(so_file)" in src_init
        envs = (site / "vllm/envs.py").read_text()
        assert "\"VLLM_NCCL_SO_PATH\": lambda: os.environ.get(\"VLLM_NCCL_SO_PATH\", None)" in envs
