"""Issue 31: the package index's ``rocm-sdk-device-gfx906`` and ``rocm-sdk-libraries-gfx90x-dcgpu``
are 0.0.1.dev0 placeholders (about 1.6 KB, one ``__init__.py``, no device code). A real wheel of that
shape is built here (zip + .dist-info with a RECORD of sha256s, as ``pip wheel`` leaves it) and
installed, file for file as pip unpacks it, into a venv of the dual-MI50 machine: detect, doctor and
audit report it as "no device code". The verdict is the files': the same name holding a real gfx906
code object (tests/fixtures/codeobjects.py) inside a ``.kpack`` is device code, and a file swapped for
a link or FIFO is refused, never read."""
from __future__ import annotations

import base64
import hashlib
import json
import os
import zipfile
from pathlib import Path

import pytest

from rocmrevive.rootfs import Root
from rocmrevive.trees.device_wheels import find_device_wheels
from rocmrevive.trees.pythonenv import find_envs
from tests.fixtures.therock import write_kpack
from tests.fixtures.wheels import unpack_wheel
from tests.machines.build import build
from tests.test_install import rr

VENV = "/home/alice/venvs/rocm"
SITE = f"{VENV}/lib/python3.12/site-packages"
# the placeholder's one module: a docstring, as the index's 0.0.1.dev0 uploads carry
INIT = ('"""Placeholder for the ROCm SDK device package. The real package is published on AMD\'s own\n'
        'index; this name is reserved."""\n')


def make_wheel(dest: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A wheel of ``files`` (path -> bytes) with METADATA, WHEEL and a RECORD of their sha256s."""
    dist = f"{name.replace('-', '_')}-{version}.dist-info"
    members = dict(files)
    members[f"{dist}/METADATA"] = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode()
    members[f"{dist}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    rows = []
    for path, data in members.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{path},sha256={digest},{len(data)}")
    rows.append(f"{dist}/RECORD,,")
    members[f"{dist}/RECORD"] = ("\n".join(rows) + "\n").encode()
    whl = dest / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(whl, "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in members.items():
            z.writestr(path, data)
    return whl


@pytest.fixture
def machine(tmp_path):
    root = build("dual-mi50", tmp_path / "m")
    (root / VENV.lstrip("/")).mkdir(parents=True)
    (root / VENV.lstrip("/") / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    return root


def install(root: Path, whl: Path) -> Path:
    return unpack_wheel(whl, root / SITE.lstrip("/"))


def placeholders(tmp_path: Path) -> list[Path]:
    return [make_wheel(tmp_path, "rocm-sdk-device-gfx906", "0.0.1.dev0",
                       {"rocm_sdk_device_gfx906/__init__.py": INIT.encode()}),
            make_wheel(tmp_path, "rocm-sdk-libraries-gfx90x-dcgpu", "0.0.1.dev0",
                       {"rocm_sdk_libraries_gfx90x_dcgpu/__init__.py": INIT.encode()})]


def test_placeholders_are_reported_as_no_device_code(machine, tmp_path):
    whls = placeholders(tmp_path)
    assert all(1000 < w.stat().st_size < 2500 for w in whls)      # the index's ~1.6 KB shape
    for w in whls:
        install(machine, w)
    r = rr(machine, "--json", "detect")
    doc = json.loads(r.stdout)
    got = {w["name"]: w for w in doc["device_wheels"]}
    assert set(got) == {"rocm-sdk-device-gfx906", "rocm-sdk-libraries-gfx90x-dcgpu"}
    for w in got.values():
        assert w["placeholder"] is True and w["device_code"] is False and w["files"] == 1 and w["problems"] == []
    human = rr(machine, "detect").stdout
    assert "placeholder: rocm-sdk-device-gfx906 0.0.1.dev0" in human and "no device code" in human

    r = rr(machine, "--json", "doctor")
    found = [f for f in json.loads(r.stdout)["findings"] if f["id"] == "device-wheel-no-code"]
    assert len(found) == 2 and all(f["severity"] == "error" for f in found)     # the machine has MI50s
    assert f"{VENV}/bin/pip uninstall rocm-sdk-device-gfx906" in json.dumps(found)
    assert "rocm-sdk-device-gfx906 0.0.1.dev0 in " in rr(machine, "doctor").stdout

    r = rr(machine, "--json", "audit", "--python", VENV)
    doc = json.loads(r.stdout)
    assert r.returncode == 0, r.stderr
    assert {w["name"] for w in doc["device_wheels"] if w["placeholder"]} == {
        "rocm-sdk-device-gfx906", "rocm-sdk-libraries-gfx90x-dcgpu"}
    assert "placeholder: rocm-sdk-device-gfx906" in rr(machine, "audit", "--python", VENV).stdout


def test_the_verdict_is_the_files_not_the_name(machine, tmp_path, codeobjects):
    """The same name carrying a .kpack with a real gfx906 code object is device code; so is a plain
    code object under any file name."""
    co = Path(codeobjects["gfx906_sramecc_on_xnack_off_v4"].path).read_bytes()
    kp = write_kpack(tmp_path / "blas_lib_gfx906.kpack", group="blas", family="gfx906",
                     kernels={"lib/librocblas.so.5": {"gfx906": co}}).read_bytes()
    install(machine, make_wheel(tmp_path, "rocm-sdk-device-gfx906", "7.15.0a20260630",
                                {"_rocm_sdk_device_gfx906/.kpack/blas_lib_gfx906.kpack": kp,
                                 "rocm_sdk_device_gfx906/__init__.py": INIT.encode()}))
    install(machine, make_wheel(tmp_path, "amd-torch-device-gfx906", "2.14.0",
                                {"amd_torch_device_gfx906/readme.txt": co}))      # a code object by any name
    (w1, w2) = sorted(find_device_wheels(Root(machine), find_envs(Root(machine), [VENV])[0]), key=lambda w: w.name)
    assert (w1.name, w1.placeholder, w1.device_files) == ("amd-torch-device-gfx906", False,
                                                          ["amd_torch_device_gfx906/readme.txt"])
    assert (w2.name, w2.placeholder, w2.device_files) == (
        "rocm-sdk-device-gfx906", False, ["_rocm_sdk_device_gfx906/.kpack/blas_lib_gfx906.kpack"])
    doc = json.loads(rr(machine, "--json", "doctor").stdout)
    assert not [f for f in doc["findings"] if f["id"] == "device-wheel-no-code"]


def test_a_planted_link_or_fifo_is_refused_not_read(machine, tmp_path):
    for w in placeholders(tmp_path):
        install(machine, w)
    site = machine / SITE.lstrip("/")
    init = site / "rocm_sdk_device_gfx906/__init__.py"
    init.unlink()
    os.symlink("/etc/shadow", init)
    fifo = site / "rocm_sdk_libraries_gfx90x_dcgpu/__init__.py"
    fifo.unlink()
    os.mkfifo(fifo)
    got = {w.name: w for w in find_device_wheels(Root(machine), find_envs(Root(machine), [VENV])[0])}
    for name in ("rocm-sdk-device-gfx906", "rocm-sdk-libraries-gfx90x-dcgpu"):
        assert got[name].placeholder is False and got[name].files == 0 and len(got[name].problems) == 1, got[name]
    assert "FIFO" in got["rocm-sdk-libraries-gfx90x-dcgpu"].problems[0]
    doc = json.loads(rr(machine, "--json", "detect").stdout)          # not a placeholder verdict: "not read"
    assert [w["placeholder"] for w in doc["device_wheels"]] == [False, False]
