"""`rocmrevive rccl install` and `rccl recipe` with Debian's real librccl1 5.4.3 on the MI50 +
RX 6900 XT box.

Debian's 5.4.3 needs Debian's HIP 5.7 runtime (libamdhip64.so.5), librocm_smi64.so.1 and glibc
2.38. So the two paths are tested on two real roots:

* refusal: the box with sid's ROCm 6.4.3 libraries in /opt/rocm-6.4.3 (roots/trixie-rocm643 of
  the host-library tests) — no libamdhip64.so.5, no librocm_smi64.so.1, and a HIP 6 runtime that
  cannot share a process with it; and this machine itself (bookworm: glibc 2.36 < 2.38);
* install + rollback: the box running Debian trixie with Debian's own ROCm 5.7 stack
  (roots/trixie-hip57, composed here from trixie's real packages), where the static check says
  it loads — and trixie's own ld.so agrees — so nothing is skipped: the ABI check passes for
  real rather than being bypassed with --skip-abi.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.rccl.install import install_rccl
from rocmrevive.rootfs import Root
from tests.cli_support import rr_parsed as rr
from tests.conftest import CACHE, REPO, TRIPLET
from tests.fixtures import fixcache
from tests.machines import machine  # noqa: F401  (pytest fixture)
from tests.machines.build import build

pytestmark = pytest.mark.debian

R543 = "librccl1_5.4.3-3+b1_amd64"
DEB543 = CACHE / "debs" / f"{R543}.deb"
FETCH = REPO / "tests/fixtures/fetch_hostlib_debs.sh"
LIB = "/opt/rocmrevive/rccl/5.4.3/lib/librccl.so.1"
# Debian trixie's ROCm 5.7 runtime and everything it loads (real packages, pinned versions)
HIP57 = ["libamdhip64-5=5.7.1-6+deb13u1", "libamd-comgr2=6.0+git20231212.4510c28+dfsg-3+b2",
         "libllvm17t64=1:17.0.6-22+b2", "libhsa-runtime64-1=6.1.2-3", "libhsakmt1=6.2.4+ds-1",
         "librocm-smi64-1=6.1.2-1", "libxml2=2.12.7+dfsg+really2.9.14-2.1+deb13u3", "liblzma5=5.8.1-1+deb13u2"]
TRIXIE_C = ["libc6=2.41-12+deb13u5", "libstdc++6=14.2.0-19", "libgcc-s1=14.2.0-19", "libnuma1=2.0.19-1",
            "libelf1t64=0.192-4", "libdrm2=2.4.124-2", "libdrm-amdgpu1=2.4.124-2", "libzstd1=1.5.7+dfsg-1",
            "zlib1g=1:1.3.dfsg+really1.3.1-1+deb13u1", "libffi8=3.4.8-2", "libedit2=3.1-20250104-1",
            "libz3-4=4.13.3-1", "libtinfo6=6.5+20250216-2", "libbsd0=0.12.2-2", "libmd0=1.1.0-2+b1"]


def _deb(spec: str) -> Path:
    name, ver = spec.split("=", 1)
    return CACHE / "debs" / f"{name}_{ver.replace(':', '%3a')}_amd64.deb"


def _fetch(args: list[str]) -> None:
    p = subprocess.run(["bash", str(FETCH), *args], capture_output=True, text=True)
    if p.returncode == 5:
        pytest.skip("no apt mirror configured on this machine")
    assert p.returncode == 0, p.stderr[-2000:]


def hip57_root() -> Path:
    """roots/trixie-hip57: Debian trixie's C/C++ runtime and its ROCm 5.7 stack, unpacked where
    trixie puts them, with the ld.so.conf libc-bin would write. Cached while its packages are the
    same and its files all there (tests/fixtures/fixcache.py)."""
    missing = [s for s in TRIXIE_C + HIP57 if not _deb(s).is_file()]
    if missing:
        _fetch([f"trixie:{s}" for s in missing])

    def build(tmp: Path) -> None:
        (tmp / "etc").mkdir(parents=True)
        for s in TRIXIE_C + HIP57:
            subprocess.run(["dpkg-deb", "-x", str(_deb(s)), str(tmp)], check=True)
        (tmp / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")

    return fixcache.build_entry(CACHE / "roots" / "trixie-hip57", {"packages": TRIXIE_C + HIP57}, build)


def rocm643_root() -> Path:
    """roots/trixie-rocm643 of the host-library tests: sid's ROCm 6.4.3 libraries in /opt/rocm-6.4.3/lib
    (the fetch script reuses it while its recorded inputs and files match)."""
    _fetch([])
    return CACHE / "roots" / "trixie-rocm643"


def overlay(machine: Path, system: Path) -> Path:
    """The machine's sysfs plus a real system's libraries (hard links; copies across file systems)."""
    for top in ("usr", "etc", "opt", "lib", "lib64"):
        src = system / top
        if not src.exists():
            continue
        r = subprocess.run(["cp", "-al", f"{src}/.", str(machine / top)], capture_output=True)
        if r.returncode:
            subprocess.run(["cp", "-a", f"{src}/.", str(machine / top)], check=True)
    return machine


def tree_hash(top: Path, skip=("var/lib/rocmrevive",)) -> str:
    h = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(top):
        rel_dir = os.path.relpath(dirpath, top)
        dirnames[:] = sorted(d for d in dirnames if os.path.join(rel_dir, d).lstrip("./") not in skip)
        for name in sorted(filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            h.update(f"{os.path.relpath(p, top)}\0{st.st_mode:o}\0".encode())
            if os.path.islink(p):
                h.update(os.readlink(p).encode())
            elif os.path.isfile(p):
                h.update(f"{st.st_ino}:{st.st_size}:{st.st_mtime_ns}".encode() if st.st_nlink > 1 else
                         hashlib.sha256(Path(p).read_bytes()).digest())
    return h.hexdigest()


@pytest.fixture(scope="module")
def r543(debian_pkgs) -> Path:
    return debian_pkgs[R543]


# ---- refusals ----------------------------------------------------------------------------

def test_refused_on_a_rocm_643_box_with_every_reason(tmp_path, r543):
    root = overlay(build("mi50-rx6900xt", tmp_path / "root"), rocm643_root())
    before = tree_hash(root)
    rc, doc, err = rr(root, "--json", "rccl", "install", "--from", str(r543), "--cache", str(tmp_path / "c"),
                      "--tree", "/opt/rocm-6.4.3")
    assert rc == 6 and doc["error"]["code"] == "VERIFY_FAILED", err
    lines = doc["error"]["details"]["abi"]["lines"]
    # the loader's own reasons, in DT_NEEDED order, naming where it looked
    assert lines[0].startswith("needs librocm_smi64.so.1, not found in /opt/rocm-6.4.3/lib, ")
    assert lines[1].startswith("needs libamdhip64.so.5, not found in /opt/rocm-6.4.3/lib, ")
    assert "/usr/lib/x86_64-linux-gnu" in lines[1]
    assert all(x.startswith(("needs ", "undefined symbol ", "… and ")) for x in lines)
    assert not any("GLIBC" in x for x in lines)                     # trixie's glibc 2.41 is enough
    assert doc["error"]["details"]["hip_conflicts"] == [
        "ROCm at /opt/rocm-6.4.3 uses libamdhip64.so.6; this RCCL binds libamdhip64.so.5: two HIP runtimes "
        "in one process do not work, so those programs cannot use it"]
    msg = doc["error"]["message"]
    assert msg.startswith("librccl.so.1 of Debian librccl1 5.4.3-3+b1 (RCCL of ROCm 5.4.3) would not load here: "
                          "needs librocm_smi64.so.1, not found in /opt/rocm-6.4.3/lib")
    assert "Nothing was changed" in msg and "rocmrevive rccl recipe" in msg
    assert tree_hash(root) == before and not (root / "opt/rocmrevive").exists()


def test_refused_on_this_host_says_why(tmp_path, r543):
    """This machine as it is (no HIP 5 runtime; bookworm's glibc 2.36): refused, in a dry run."""
    with pytest.raises(RevError) as ei:
        install_rccl(Root("/"), targets=["gfx906:sramecc+:xnack-", "gfx1030"], from_path=r543,
                     cache=tmp_path / "c", check=True)
    assert ei.value.code == "VERIFY_FAILED"
    lines = ei.value.details["abi"]["lines"]
    glibc = tuple(int(x) for x in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split(".")[:2])
    if not any(Path(d, "libamdhip64.so.5").exists() for d in ("/usr/lib/x86_64-linux-gnu", "/opt/rocm/lib")):
        assert any(x.startswith("needs libamdhip64.so.5, not found in ") for x in lines)
    if glibc < (2, 38):
        assert f"needs GLIBC_2.38 (libc.so.6), this host has up to GLIBC_{glibc[0]}.{glibc[1]}" in lines


def test_a_source_without_gfx906_and_a_prefix_inside_rocm_are_refused(tmp_path, r543):
    root = build("mi50-rx6900xt", tmp_path / "root")
    rc, doc, _ = rr(root, "--json", "rccl", "install", "--source", "debian-librccl1-7.2.4", "--from", str(r543))
    assert rc == 3 and "has no code for gfx906" in doc["error"]["message"]
    rc, doc, _ = rr(root, "--json", "rccl", "install", "--from", str(r543), "--prefix", "/opt/rocm-6.4.3/rccl")
    assert rc == 2 and "never into a ROCm tree" in doc["error"]["message"]
    rc, doc, _ = rr(root, "--json", "rccl", "install", "--target", "gfx1151", "--from", str(r543))
    assert rc == 3 and "no prebuilt RCCL rocmrevive knows carries all of gfx1151" in doc["error"]["message"]
    # gfx942 picks the 7.2.4 source; a --from folder holding another package is caught by its device code
    rc, doc, _ = rr(root, "--json", "rccl", "install", "--target", "gfx942", "--from", str(r543))
    assert rc == 6 and "has no device code for GPU0 gfx942" in doc["error"]["message"]
    assert not (root / "opt").exists()


# ---- install + rollback ------------------------------------------------------------------

def trixie_loader(root: Path, lib: Path) -> subprocess.CompletedProcess:
    """trixie's own ld.so, tracing with every relocation bound (what `ldd -r` does)."""
    ld = root / TRIPLET / "ld-linux-x86-64.so.2"
    env = {"LD_TRACE_LOADED_OBJECTS": "1", "LD_WARN": "yes", "LD_BIND_NOW": "yes"}
    return subprocess.run([str(ld), "--inhibit-cache", "--library-path", str(root / TRIPLET), str(lib)],
                          env=env, capture_output=True, text=True)


def test_install_from_the_deb_then_rollback_byte_identical(tmp_path, debian_debs):
    assert debian_debs[R543] == DEB543
    root = overlay(build("mi50-rx6900xt", tmp_path / "root"), hip57_root())
    before = tree_hash(root)
    cache = tmp_path / "cache"
    rc, doc, err = rr(root, "--json", "rccl", "install", "--from", str(DEB543), "--cache", str(cache))
    assert rc == 0, err
    assert doc["state"] == "installed" and doc["changed"] is True and doc["library"] == LIB
    assert doc["artifact"]["sha256"] == "735e8e0a69f88489bdbd0a8b69bc75a376da92f1129b9ed80a38c99726bfe3a7"
    assert doc["abi"]["ok"] and doc["abi"]["lines"] == [] and doc["hip_conflicts"] == []
    assert [c["served"] for c in doc["coverage"]] == [True, True]
    assert doc["verify_after"] == {"sha256_ok": True, "serves_all": True, "targets": doc["staged_targets"]}
    assert {e["key"]: e["value"] for e in doc["env"]} == {"VLLM_NCCL_SO_PATH": LIB,
                                                          "LD_LIBRARY_PATH": "/opt/rocmrevive/rccl/5.4.3/lib"}
    txid = doc["transaction"]["txid"]
    installed = root / LIB.lstrip("/")
    # the real loader agrees with the static check
    tr = trixie_loader(root, installed)
    assert tr.returncode == 0 and "undefined symbol" not in tr.stderr, tr.stderr
    assert f"libamdhip64.so.5 => {root / TRIPLET}/libamdhip64.so.5" in tr.stdout
    prov = json.loads((root / "opt/rocmrevive/rccl/5.4.3/rocmrevive-rccl.json").read_text())
    assert prov["needed_hip"] == "libamdhip64.so.5" and prov["source"]["version"] == "5.4.3-3+b1"

    # audit and env now point programs at it
    rc, doc, _ = rr(root, "--json", "rccl", "audit")
    mine = next(c for c in doc["copies"] if c["path"] == LIB)
    assert [ch["kind"] for ch in mine["channels"]] == ["rocmrevive"] and mine["version"] == "5.4.3"
    assert mine["serves"] == [0, 1] and rc == 0
    rc, text, _ = rr(root, "rccl", "env")
    assert f"export VLLM_NCCL_SO_PATH={LIB}\n" in text
    assert "export LD_LIBRARY_PATH=/opt/rocmrevive/rccl/5.4.3/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}\n" in text

    # again: nothing to do (no fetch: the provenance and the file's hash say so); then undo byte for byte
    rc, doc, _ = rr(root, "--json", "rccl", "install", "--from", str(tmp_path / "nowhere"), "--cache", str(cache))
    assert rc == 0 and doc["state"] == "unchanged" and doc["changed"] is False and doc["artifact"] is None
    rc, doc, err = rr(root, "--json", "rollback", txid)
    assert rc == 0 and doc["state"] == "rolled_back", err
    assert tree_hash(root) == before and not (root / "opt").exists()


def test_check_mode_does_everything_but_write(tmp_path, r543):
    root = overlay(build("mi50-rx6900xt", tmp_path / "root"), hip57_root())
    before = tree_hash(root)
    rc, doc, err = rr(root, "--json", "rccl", "install", "--from", str(r543), "--cache", str(tmp_path / "c"), "--check")
    assert rc == 20 and doc["error"]["code"] == "CHANGES_PENDING", err
    assert doc["state"] == "dry-run" and doc["abi"]["ok"] is True and doc["plan"]["create"] == 2
    assert tree_hash(root) == before


def test_skip_abi_installs_where_the_check_refuses_and_says_so(tmp_path, r543):
    root = build("mi50-rx6900xt", tmp_path / "root")
    before = tree_hash(root)
    rc, doc, err = rr(root, "--json", "rccl", "install", "--from", str(r543), "--cache", str(tmp_path / "c"),
                      "--skip-abi", "--also-name", "librccl.so")
    assert rc == 0 and doc["abi_skipped"] is True, err
    assert any(w.startswith("ABI check failed and was skipped (--skip-abi): needs librocm_smi64.so.1")
               for w in doc["warnings"])
    lib_dir = root / "opt/rocmrevive/rccl/5.4.3/lib"
    assert sorted(os.listdir(lib_dir)) == ["librccl.so", "librccl.so.1"]
    assert (lib_dir / "librccl.so").read_bytes()[:4096] == (r543 / TRIPLET / "librccl.so.1.0").read_bytes()[:4096]
    rc, doc, _ = rr(root, "--json", "rollback")
    assert rc == 0 and tree_hash(root) == before


# ---- recipe ------------------------------------------------------------------------------

def test_recipe_builds_the_union_of_processors(tmp_path):
    root = build("mi50-rx6900xt", tmp_path / "root")
    rc, doc, _ = rr(root, "--json", "rccl", "recipe")
    assert rc == 2 and "no ROCm install" in doc["error"]["message"]
    out = tmp_path / "build-rccl.sh"
    rc, doc, err = rr(root, "--json", "rccl", "recipe", "--rocm-version", "6.4.3", "-o", str(out))
    assert rc == 0, err
    assert doc["targets"] == ["gfx906", "gfx1030"] and doc["gpu_targets"] == "gfx906;gfx1030"
    assert doc["prefix"] == "/opt/rocmrevive/rccl/6.4.3-gfx906-gfx1030" and doc["ref"] == "rocm-6.4.3"
    text = out.read_text()
    assert os.access(out, os.X_OK) and text == doc["script"]
    subprocess.run(["bash", "-n", str(out)], check=True)
    assert "GPU_TARGETS='gfx906;gfx1030'\n" in text and '-DGPU_TARGETS="$GPU_TARGETS"' in text
    assert "RCCL_REF=\"${RCCL_REF:-rocm-6.4.3}\"" in text and "ROCM_PATH=/opt/rocm-6.4.3\n" in text
    assert ("rocmrevive rccl audit --no-search --lib /opt/rocmrevive/rccl/6.4.3-gfx906-gfx1030/lib/librccl.so.1"
            in text)
    # the check line is a command that works: on the machine, against a library, it answers 0 or 6
    rc, _, _ = rr(root, *doc["check"].split()[1:])
    assert rc == 3          # nothing built yet: no such library -> "no librccl found"
    rc, doc, _ = rr(root, "--json", "rccl", "recipe", "--rocm-version", "6.4.3", "--target", "gfx906:sramecc+:xnack-")
    assert doc["gpu_targets"] == "gfx906"   # only when the user asks for it


def test_recipe_uses_the_default_rocm_tree(machine):
    rc, doc, _ = rr(machine("mi50x4-switch"), "--json", "rccl", "recipe")
    assert rc == 0 and doc["rocm_path"] == "/opt/rocm-7.14.0" and doc["gpu_targets"] == "gfx906"
    assert doc["prefix"] == "/opt/rocmrevive/rccl/7.14.0-gfx906"
