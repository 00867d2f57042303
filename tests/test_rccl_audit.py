"""`rocmrevive rccl audit` on the MI50 + RX 6900 XT box (issue 10's seed) with Debian's real
librccl1 5.4.3 (gfx906 and gfx1030 among ten targets) and 7.2.4 (no gfx906): which copy serves
which card, found through every channel a program uses (the ROCm tree, the system folder,
VLLM_NCCL_SO_PATH in an env file, LD_LIBRARY_PATH, a PyTorch wheel)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocmrevive.rccl.audit import audit
from rocmrevive.rootfs import Root
from tests.cli_support import rr_parsed as rr
from tests.conftest import TRIPLET
from tests.machines.build import build, link_or_copy

pytestmark = pytest.mark.debian

R543 = "librccl1_5.4.3-3+b1_amd64"
R724 = "librccl1_7.2.4-1~exp3_amd64"
SYS = "/usr/lib/x86_64-linux-gnu"


def debian_rccl_as_installed(root: Path, unpacked: Path) -> None:
    """Debian's librccl1 5.4.3 as dpkg leaves it: the file, its SONAME link, the package's file
    list and its status stanza."""
    link_or_copy(unpacked / TRIPLET / "librccl.so.1.0", root / TRIPLET / "librccl.so.1.0")
    os.symlink("librccl.so.1.0", root / TRIPLET / "librccl.so.1")
    info = root / "var/lib/dpkg/info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "librccl1:amd64.list").write_text(
        "/.\n/usr\n/usr/lib\n/usr/lib/x86_64-linux-gnu\n/usr/lib/x86_64-linux-gnu/librccl.so.1.0\n"
        "/usr/lib/x86_64-linux-gnu/librccl.so.1\n")
    status = root / "var/lib/dpkg/status"
    old = status.read_text() if status.exists() else ""
    status.write_text(old + ("\n" if old else "") + "Package: librccl1\nStatus: install ok installed\n"
                      "Architecture: amd64\nSource: rccl (5.4.3-3)\nVersion: 5.4.3-3+b1\n")


def rocm_tree_with(root: Path, unpacked: Path, version: str = "7.2.4") -> Path:
    """An /opt/rocm-X tree in AMD's layout (librccl.so.1.0.<ROCm number> + SONAME link) holding
    Debian's 7.2.4 build as its RCCL: like AMD's 7.x, it has no gfx906 code."""
    lib = root / f"opt/rocm-{version}/lib"
    n = "".join(f"{int(x):02d}" if i else x for i, x in enumerate(version.split(".")))
    link_or_copy(unpacked / TRIPLET / "librccl.so.1.0", lib / f"librccl.so.1.0.{n}")
    os.symlink(f"librccl.so.1.0.{n}", lib / "librccl.so.1")
    (root / f"opt/rocm-{version}/.info").mkdir(parents=True)
    (root / f"opt/rocm-{version}/.info/version").write_text(f"{version}-9\n")
    os.symlink(f"rocm-{version}", root / "opt/rocm")
    return lib


@pytest.fixture(scope="module")
def mixed(tmp_path_factory, debian_pkgs) -> Path:
    root = build("mi50-rx6900xt", tmp_path_factory.mktemp("mixed") / "root")
    debian_rccl_as_installed(root, debian_pkgs[R543])
    rocm_tree_with(root, debian_pkgs[R724])
    return root


def test_543_serves_both_cards_724_only_the_rx6900xt(mixed):
    rep = audit(Root(mixed))
    assert [(g.index, str(g.target)) for g in rep.gpus] == [(0, "gfx1030"), (1, "gfx906:sramecc+:xnack-")]
    by = {c.path: c for c in rep.copies}
    deb = by[f"{SYS}/librccl.so.1.0"]
    amd = by["/opt/rocm-7.2.4/lib/librccl.so.1.0.70204"]
    assert (deb.version, deb.version_source) == ("librccl1 5.4.3-3+b1", "dpkg")
    assert (amd.version, amd.version_source) == ("ROCm 7.2.4", "file name")
    assert deb.serves == [0, 1] and deb.missing == [] and deb.serves_all
    assert amd.serves == [0] and amd.missing == [1]
    assert "gfx906" in deb.targets and "gfx1030" in deb.targets and len(deb.targets) == 10
    assert "gfx906" not in amd.targets and "gfx1030" in amd.targets
    # what each binds to: the HIP runtime decides which programs can use it
    assert (deb.needed_hip, amd.needed_hip) == ("libamdhip64.so.5", "libamdhip64.so.7")
    assert [ch.kind for ch in deb.channels] == ["system"] and [ch.kind for ch in amd.channels] == ["rocm-tree"]
    assert deb.channels[0].via == f"{SYS}/librccl.so.1"   # the name the loader asks for
    assert [c.path for c in rep.serving_all] == [deb.path]


def test_cli_json_and_exit_codes(mixed):
    rc, doc, err = rr(mixed, "--json", "rccl", "audit")
    assert rc == 0, err
    assert doc["command"] == "rccl audit" and doc["error"] is None and doc["processors"] == ["gfx1030", "gfx906"]
    cells = {c["path"]: {cv["gpu"]: cv["served"] for cv in c["coverage"]} for c in doc["copies"]}
    assert cells == {f"{SYS}/librccl.so.1.0": {0: True, 1: True},
                     "/opt/rocm-7.2.4/lib/librccl.so.1.0.70204": {0: True, 1: False}}
    # --lib: the recipe's check. 7.2.4 misses the MI50 -> 6, naming the card; 5.4.3 passes
    rc, doc, _ = rr(mixed, "--json", "rccl", "audit", "--no-search", "--lib", "/opt/rocm/lib/librccl.so.1")
    assert rc == 6 and doc["error"]["code"] == "VERIFY_FAILED"
    assert "GPU1 gfx906:sramecc+:xnack-" in doc["error"]["message"]
    rc, doc, _ = rr(mixed, "--json", "rccl", "audit", "--no-search", "--lib", f"{SYS}/librccl.so.1")
    assert rc == 0 and [c["channels"][0]["kind"] for c in doc["copies"]] == ["given"]
    rc, out, _ = rr(mixed, "rccl", "audit")
    assert rc == 0 and "serves every GPU: /usr/lib/x86_64-linux-gnu/librccl.so.1.0" in out


def test_only_the_724_tree_means_no_rccl_serves_the_mi50(tmp_path, debian_pkgs):
    root = build("mi50-rx6900xt", tmp_path / "root")
    rocm_tree_with(root, debian_pkgs[R724])
    rc, doc, _ = rr(root, "--json", "rccl", "audit")
    assert rc == 6 and "no RCCL on this machine serves every GPU (gfx1030, gfx906)" in doc["error"]["message"]
    rc, doc, _ = rr(build("mi50-rx6900xt", tmp_path / "bare"), "--json", "rccl", "audit")
    assert rc == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED"


def test_vllm_env_file_ld_library_path_and_torch_wheel_channels(tmp_path, debian_pkgs):
    root = build("mi50-rx6900xt", tmp_path / "root")
    # a hand-built RCCL folder named by LD_LIBRARY_PATH, and vLLM pointed at it in a systemd unit
    link_or_copy(debian_pkgs[R543] / TRIPLET / "librccl.so.1.0", root / "srv/rccl/lib/librccl.so.1")
    unit = root / "etc/systemd/system/vllm.service"
    unit.parent.mkdir(parents=True)
    unit.write_text("[Service]\nEnvironment=\"VLLM_NCCL_SO_PATH=/srv/rccl/lib/librccl.so.1\" HIP_VISIBLE_DEVICES=0,1\n"
                    "Environment=LD_LIBRARY_PATH=/srv/rccl/lib:/opt/rocm/lib\nExecStart=/usr/bin/vllm serve\n")
    # a PyTorch wheel bundling an RCCL 7 (no gfx906), as ROCm 7 wheels do
    site = root / "home/alice/venv/lib/python3.12/site-packages"
    (root / "home/alice/venv/pyvenv.cfg").parent.mkdir(parents=True)
    (root / "home/alice/venv/pyvenv.cfg").write_text("home = /usr/bin\n")
    (site / "torch").mkdir(parents=True)
    (site / "torch/version.py").write_text("__version__ = '2.9.0+rocm7.0'\nhip = '7.0.51831'\n")
    link_or_copy(debian_pkgs[R724] / TRIPLET / "librccl.so.1.0", site / "torch/lib/librccl.so.1")

    rep = audit(Root(root), env_files=["/etc/systemd/system/vllm.service"])
    assert rep.settings["VLLM_NCCL_SO_PATH"] == {"value": "/srv/rccl/lib/librccl.so.1",
                                                 "from": "/etc/systemd/system/vllm.service"}
    by = {c.path: c for c in rep.copies}
    mine = by["/srv/rccl/lib/librccl.so.1"]
    assert [ch.kind for ch in mine.channels] == ["vllm", "ld-library-path"] and mine.serves == [0, 1]
    torch = by["/home/alice/venv/lib/python3.12/site-packages/torch/lib/librccl.so.1"]
    assert [ch.kind for ch in torch.channels] == ["python-torch"] and torch.missing == [1]
    assert torch.version == "PyTorch 2.9.0+rocm7.0"
    # a bare name in VLLM_NCCL_SO_PATH is reported: dlopen would return PyTorch's copy
    rep = audit(Root(root), vllm_nccl_so_path="librccl.so.1", search=False)
    assert any("bare name" in p for p in rep.problems)


def test_target_option_and_bad_target(mixed):
    rep = audit(Root(mixed), targets=["gfx906:sramecc-:xnack-"], libs=[f"{SYS}/librccl.so.1"], search=False)
    assert rep.devices_from == "--target" and rep.copies[0].serves == [0]   # gfx906 code is "any": loads on sramecc-
    rc, doc, _ = rr(mixed, "--json", "rccl", "audit", "--target", "gfx9x6")
    assert rc == 2 and doc["error"]["code"] == "USAGE"
