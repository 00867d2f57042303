"""The user's own GPU programs in `audit` and `doctor`: the real cyllama-rocm 0.7.0 wheel (its
llama.cpp libggml-hip has gfx1100/gfx90a/gfx942 code only) unpacked into a venv of the dual-MI50
machine, and a llama.cpp-named HIP library compiled here with gfx906 that does run."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose import programs as P
from rocmrevive.rootfs import Root
from tests.conftest import REPO
from tests.fixtures.wheels import cached_wheel, unpack_wheel
from tests.machines.build import build

CYLLAMA_SHA256 = "e6ebb996d986f1add67a29300ded7781d50456c3f5311ae648f1d72a3b144b9c"
SITE = "home/alice/venv/lib/python3.12/site-packages"
GGML = f"/{SITE}/cyllama_rocm.libs/libggml-hip-1f7b8bcc.so"
SRC = REPO / "tests/fixtures/src"


def run(root: Path, *args) -> tuple[int, dict]:
    res = CliRunner().invoke(cli, ["--json", "--root", str(root), *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


@pytest.fixture(scope="session")
def cyllama_wheel() -> Path:
    return cached_wheel("cyllama-rocm", "0.7.0", CYLLAMA_SHA256, python_version="3.12")


@pytest.fixture(scope="session")
def gfx906_hip_lib(tmp_path_factory) -> Path:
    """A real HIP host library with gfx906 (and gfx90a) code, compiled by clang-15."""
    clang = shutil.which("clang-15")
    assert clang, "clang-15 is needed (scripts/setup-system.sh installs it)"
    out = tmp_path_factory.mktemp("hip") / "libggml-hip.so"
    subprocess.run([clang, "-x", "hip", "--offload-arch=gfx906", "--offload-arch=gfx90a", "-nogpulib",
                    "-nogpuinc", "-fPIC", "-shared", "-fuse-ld=lld", str(SRC / "hip_vadd.hip"), "-o", str(out)],
                   check=True, cwd=SRC)
    return out


@pytest.fixture(scope="session")
def machine(tmp_path_factory, cyllama_wheel, gfx906_hip_lib) -> Path:
    root = build("dual-mi50", tmp_path_factory.mktemp("m") / "dual-mi50")
    unpack_wheel(cyllama_wheel, root / SITE)
    bin_dir = root / "home/alice/llama.cpp/build/bin"
    bin_dir.mkdir(parents=True)
    shutil.copy(gfx906_hip_lib, bin_dir / "libggml-hip.so")
    deb = root / "usr/lib/x86_64-linux-gnu/ggml/backends0"   # where Debian's libggml0-backend-hip puts it
    deb.mkdir(parents=True)
    shutil.copy(gfx906_hip_lib, deb / "libggml-hip.so")
    return root


def test_audit_names_cyllama_libggml_hip_with_the_fix(machine):
    code, doc = run(machine, "audit")
    assert code == 0
    bad = [c for c in doc["programs_cannot_run"] if c["path"] == GGML]
    assert len(bad) == 1, doc["programs_cannot_run"]
    cell = bad[0]
    assert cell["target"] == "gfx906:sramecc+:xnack-" and cell["status"] == "missing"
    assert cell["program"] == "cyllama-rocm"
    assert "embeds gfx1100, gfx90a, gfx942" in cell["detail"]
    assert 'AMDGPU_TARGETS="gfx906"' in cell["remedy"] and "-DGGML_HIP=ON" in cell["remedy"]
    assert "librocblas.so.4" in cell["breaks"]
    prog = next(p for p in doc["programs"] if p["path"] == GGML)
    assert prog["processors"] == ["gfx1100", "gfx90a", "gfx942"]
    assert prog["code_objects"] == 420
    assert "librocblas.so.4" in prog["needs"] and "libamdhip64.so.6" in prog["needs"]
    assert prog["runs_on_all"] is False
    # the other cyllama libraries carry no device code: not programs
    assert not [p for p in doc["programs"] if "libllama-" in p["path"] or "libggml-base" in p["path"]]


def test_a_build_with_gfx906_runs_and_is_not_flagged(machine):
    _code, doc = run(machine, "audit")
    ours = next(p for p in doc["programs"] if p["path"] == "/home/alice/llama.cpp/build/bin/libggml-hip.so")
    assert ours["program"] == "llama.cpp" and ours["runs_on_all"] is True
    debian = next(p for p in doc["programs"] if p["path"] == "/usr/lib/x86_64-linux-gnu/ggml/backends0/libggml-hip.so")
    assert debian["program"] == "llama.cpp" and debian["runs_on_all"] is True
    assert ours["cells"]["gfx906:sramecc+:xnack-"]["status"] == "embedded"
    assert all(c["path"] != ours["path"] for c in doc["programs_cannot_run"])


def test_human_output_and_no_programs(machine):
    res = CliRunner().invoke(cli, ["--root", str(machine), "audit"], catch_exceptions=False)
    assert res.exit_code == 0
    out = " ".join(res.output.split())
    assert "cyllama-rocm (llama.cpp's libggml-hip)" in out and "cannot run on gfx906:sramecc+:xnack-" in out
    assert "-DAMDGPU_TARGETS=\"gfx906\"" in out
    code, doc = run(machine, "audit", "--no-programs")
    assert code == 0 and "programs" not in doc


def test_doctor_warns_about_the_program(machine):
    res = CliRunner().invoke(cli, ["--json", "--root", str(machine), "doctor"], catch_exceptions=False)
    doc = json.loads(res.output)
    found = [f for f in doc["findings"] if f["id"] == "program-missing-target"]
    assert [f["subject"] for f in found] == [GGML]
    assert found[0]["severity"] == "warning" and "AMDGPU_TARGETS" in found[0]["fix"]


def test_audit_for_a_target_the_wheel_has(machine):
    """With --target gfx90a the same library is fine: the verdict follows the card, not the file."""
    _code, doc = run(machine, "audit", "--target", "gfx90a")
    assert not [c for c in doc["programs_cannot_run"] if c["path"] == GGML]


def test_scan_is_bounded_to_known_places(machine):
    rep = P.find_programs(Root(str(machine)), [TargetId.parse("gfx906")])
    paths = {p.path for p in rep.programs}
    assert GGML in paths
    # only the .libs folder and the build folder were read, not every .so of the packages
    assert rep.files_read <= 10
    assert all(not p.startswith("/opt/rocm") for p in paths)


def test_kind_from_the_path():
    assert P.kind_for("/x/cyllama_rocm.libs/libggml-hip-1f7b8bcc.so", None) is P.CYLLAMA
    assert P.kind_for("/x/onnxruntime_rocm.libs/libfoo.so", None) is P.ONNXRUNTIME
    assert P.kind_for("/usr/local/lib/libggml-hip.so", None) is P.LLAMA_CPP
    assert P.kind_for("/usr/local/lib/libsomething.so", None) is P.UNKNOWN
    assert "gfx906;gfx1030" in P.LLAMA_CPP.fix_for(["gfx906", "gfx1030"])
    assert "HCC_AMDGPU_TARGET=gfx906,gfx1030" in P.CUPY.fix_for(["gfx906", "gfx1030"])


CUPY_SHA256 = "4912fcd48491adc332ebc7ed6f1d7487545ee2b9cf6fcc906b7827dbe182fe7f"


@pytest.fixture(scope="session")
def mixed_machine(tmp_path_factory) -> Path:
    """MI50 + RX 6900 XT with the real cupy-rocm-7-0 14.2.0 wheel (ROCm 7.0 build: its cub, thrust
    and random modules carry gfx908/90a/942/950/1030/1100/1101/1200/1201, no gfx906)."""
    whl = cached_wheel("cupy-rocm-7-0", "14.2.0", CUPY_SHA256, python_version="3.12")
    root = build("mi50-rx6900xt", tmp_path_factory.mktemp("mx") / "m")
    unpack_wheel(whl, root / "usr/local/lib/python3.12/dist-packages",
                 members=lambda n: n.startswith(("cupy/cuda/", "cupy/random/", "cupy/_core/")))
    return root


def test_cupy_runs_on_the_6900xt_but_not_on_the_mi50(mixed_machine):
    code, doc = run(mixed_machine, "audit")
    assert code == 0
    cub = next(p for p in doc["programs"] if p["path"].endswith("cupy/cuda/cub.cpython-312-x86_64-linux-gnu.so"))
    assert cub["program"] == "cupy-rocm" and "gfx1030" in cub["processors"] and "gfx906" not in cub["processors"]
    by_proc = {t.split(":")[0]: c["status"] for t, c in cub["cells"].items()}
    assert by_proc == {"gfx906": "missing", "gfx1030": "embedded"}
    bad = [c for c in doc["programs_cannot_run"] if c["program"] == "cupy-rocm"]
    assert {c["path"].rsplit("/", 1)[-1].split(".")[0] for c in bad} == {"cub", "thrust", "_generator_api"}
    assert all(c["target"].startswith("gfx906") for c in bad)
    # the fix keeps the other card: both targets
    assert "HCC_AMDGPU_TARGET=gfx906,gfx1030" in bad[0]["remedy"]


JAX_SHA256 = "56ea9cb8b20b2155307da1c7f81941d6811954d8ce3431ffe8d56aa251b725de"


def test_jax_rocm7_plugin_carries_gfx906_and_is_not_flagged(tmp_path):
    """The real jax-rocm7-plugin 0.12.0 wheel: _linalg, _prng and _solver embed 27 targets, gfx906
    among them, so on the MI50 it runs (the verdict follows the code, not the package)."""
    whl = cached_wheel("jax-rocm7-plugin", "0.12.0", JAX_SHA256, python_version="3.12")
    root = build("dual-mi50", tmp_path / "m")
    unpack_wheel(whl, root / "usr/lib/python3/dist-packages")
    code, doc = run(root, "audit")
    assert code == 0
    jax = {p["path"].rsplit("/", 1)[-1]: p for p in doc["programs"] if p["program"] == "jax-rocm"}
    assert set(jax) == {"_linalg.so", "_prng.so", "_solver.so"}
    for p in jax.values():
        assert "gfx906" in p["processors"] and len(p["processors"]) == 27
        assert p["runs_on_all"] is True
        assert p["cells"]["gfx906:sramecc+:xnack-"]["status"] == "embedded"
    assert not [c for c in doc["programs_cannot_run"] if c["program"] == "jax-rocm"]
