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


def test_every_file_is_read_by_its_header_and_only_device_code_deeper(machine):
    rep = P.find_programs(Root(str(machine)), [TargetId.parse("gfx906")])
    paths = {p.path for p in rep.programs}
    assert GGML in paths
    # every file of the venv, the build folder and Debian's ggml folder had its header read ...
    walked = [f for d in (SITE, "home/alice/llama.cpp/build", "usr/lib/x86_64-linux-gnu/ggml")
              for f in (machine / d).rglob("*") if f.is_file() and not f.is_symlink()]
    assert rep.files_read == len(walked) > 100
    # ... and only the three with device code were read further
    assert rep.candidates == 3 == len(rep.programs)
    assert all(not p.startswith("/opt/rocm") for p in paths)
    # cyllama's RECORD names the wheel that ships the file
    ggml = next(p for p in rep.programs if p.path == GGML)
    assert ggml.owner is not None and (ggml.owner.manager, ggml.owner.name, ggml.owner.version) == \
        ("pip", "cyllama-rocm", "0.7.0")


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


# ------------------------------------------------------------------------------------------
# device code found by content, whatever the name, folder or package (issue 27)

MI50 = "gfx906:sramecc+:xnack-"
ENV = "home/bob/env/lib/python3.12/site-packages"


def _hip_lib(out: Path, *arches: str) -> Path:
    clang = shutil.which("clang-15")
    assert clang, "clang-15 is needed (scripts/setup-system.sh installs it)"
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run([clang, "-x", "hip", *(f"--offload-arch={a}" for a in arches), "-nogpulib", "-nogpuinc",
                    "-fPIC", "-shared", "-fuse-ld=lld", str(SRC / "hip_vadd.hip"), "-o", str(out)], check=True, cwd=SRC)
    return out


def _readelf_says_device_code(path: Path) -> bool:
    """binutils' own answer, independent of rocmrevive: an AMDGPU ELF, or a host ELF with a
    .hip_fatbin section; or a bundle / CCOB by its magic."""
    with open(path, "rb") as f:
        head = f.read(24)
    if head.startswith((b"__CLANG_OFFLOAD_BUNDLE__", b"CCOB")):
        return True
    if not head.startswith(b"\x7fELF"):
        return False
    out = subprocess.run(["readelf", "-hSW", str(path)], capture_output=True, text=True).stdout
    return "AMD GPU" in out or " .hip_fatbin " in out


@pytest.fixture(scope="session")
def wheels_machine(tmp_path_factory, cyllama_wheel) -> Path:
    """The dual-MI50 machine with the three real wheels (all of each) in a venv no list names."""
    root = build("dual-mi50", tmp_path_factory.mktemp("w") / "m")
    for whl in (cyllama_wheel, cached_wheel("cupy-rocm-7-0", "14.2.0", CUPY_SHA256, python_version="3.12"),
                cached_wheel("jax-rocm7-plugin", "0.12.0", JAX_SHA256, python_version="3.12")):
        unpack_wheel(whl, root / ENV)
    (root / "home/bob/env/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    return root


def test_real_wheels_every_file_with_device_code_is_listed_with_the_mi50_verdict(wheels_machine):
    root = wheels_machine
    site = root / ENV
    truth = {"/" + str(f.relative_to(root)) for f in site.rglob("*")
             if f.is_file() and not f.is_symlink() and _readelf_says_device_code(f)}
    assert len(truth) > 5
    code, doc = run(root, "audit", "--python", "/home/bob/env")
    assert code == 0
    mine = {p["path"]: p for p in doc["programs"] if p["path"].startswith(f"/{ENV}/")}
    assert set(mine) == truth
    for path, p in mine.items():
        cell = p["cells"][MI50]
        owner = p["owner"]["name"]
        assert owner in ("cyllama-rocm", "cupy-rocm-7-0", "jax-rocm7-plugin"), path
        # jax's plugin embeds gfx906; cyllama's and CuPy's kernels do not
        want = "embedded" if owner == "jax-rocm7-plugin" else "missing"
        assert cell["status"] == want and ("gfx906" in p["processors"]) == (want == "embedded"), path
        assert p["package"] == owner


def test_odd_names_and_places_and_the_package_to_replace(tmp_path):
    """A HIP executable not called llama-*, a wheel rocmrevive has no name for (inferna-rocm,
    bundling its own libggml-hip) and a file dpkg says a package ships: each is found by its
    content and the fix names what to replace."""
    root = build("dual-mi50", tmp_path / "m")
    _hip_lib(root / "opt/whisper/bin/whisper-server", "gfx90a", "gfx1030")
    site = root / ENV
    _hip_lib(site / "inferna/_native/libggml-hip.so", "gfx90a")
    info = site / "inferna_rocm-0.3.1.dist-info"
    info.mkdir(parents=True)
    (info / "RECORD").write_text("inferna/__init__.py,,\ninferna/_native/libggml-hip.so,sha256=x,1\n")
    (site / "inferna/__init__.py").write_text("")
    (root / "home/bob/env/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    _hip_lib(root / "usr/lib/ollama/rocm/libggml-hip.so", "gfx1030")
    (root / "var/lib/dpkg/info").mkdir(parents=True, exist_ok=True)
    (root / "var/lib/dpkg/info/ollama:amd64.list").write_text("/usr/lib/ollama\n/usr/lib/ollama/rocm/libggml-hip.so\n")
    code, doc = run(root, "audit", "--python", "/home/bob/env")
    assert code == 0
    bad = {c["path"]: c for c in doc["programs_cannot_run"]}
    progs = {p["path"]: p for p in doc["programs"]}
    whisper = bad["/opt/whisper/bin/whisper-server"]
    assert whisper["program"] == "hip-program" and "--offload-arch=gfx906" in whisper["remedy"]
    inferna = bad[f"/{ENV}/inferna/_native/libggml-hip.so"]
    assert inferna["program"] == "wheel:inferna-rocm" and "rebuild llama.cpp" not in inferna["remedy"]
    assert "replace the inferna-rocm 0.3.1 wheel" in inferna["remedy"] and "--no-binary inferna-rocm" in inferna["remedy"]
    assert progs[f"/{ENV}/inferna/_native/libggml-hip.so"]["owner"] == {"manager": "pip", "name": "inferna-rocm",
                                                                        "version": "0.3.1"}
    ollama = bad["/usr/lib/ollama/rocm/libggml-hip.so"]
    assert ollama["program"] == "deb:ollama" and "replace the package ollama" in ollama["remedy"]
    assert progs["/usr/lib/ollama/rocm/libggml-hip.so"]["owner"] == {"manager": "dpkg", "name": "ollama", "version": None}


def test_a_remedy_package_is_named_only_for_a_target_it_declares(machine):
    """Debian's libggml0-backend-hip lists gfx803..gfx1102: named for the MI50, not for gfx1201."""
    _code, doc = run(machine, "audit", "--target", "gfx1201")
    ours = [c for c in doc["programs_cannot_run"] if c["path"] == "/home/alice/llama.cpp/build/bin/libggml-hip.so"]
    assert ours and "libggml0-backend-hip" not in ours[0]["remedy"]
    _code, doc = run(machine, "audit", "--target", "gfx906")
    cell = next(c for c in doc["programs_cannot_run"] if c["path"] == GGML)
    assert cell["program"] == "cyllama-rocm"
    from rocmrevive.diagnose import libraries as L

    assert "libggml0-backend-hip" in P.LLAMA_CPP.fix_for(["gfx906"])
    assert "libggml0-backend-hip" not in P.LLAMA_CPP.fix_for(["gfx906", "gfx1201"])
    rccl = L.library_by_key("rccl")
    assert "librccl1 5.4.3" in rccl.workaround_for("gfx906") and "librccl1 7.2.4" not in rccl.workaround_for("gfx906")
    assert "librccl1 7.2.4" in rccl.workaround_for("gfx942") and "librccl1 5.4.3" not in rccl.workaround_for("gfx942")
    rocblas = L.library_by_key("rocblas")
    assert "librocblas4" not in rocblas.workaround_for("gfx1201") and "librocblas5" in rocblas.workaround_for("gfx1201")
    assert "Debian's librocblas" not in rocblas.workaround_for("gfx950")


def test_hostile_venv_files_never_hang_or_leave_the_root(tmp_path):
    """A user's venv is hostile input: a FIFO named like a library, a link to a HIP library
    outside the machine, a RECORD that is a FIFO, a link, or huge: the scan neither hangs nor
    follows them, and a bad RECORD only means no owner."""
    import os

    from rocmrevive.diagnose import owners as O

    root = build("dual-mi50", tmp_path / "m")
    site = root / ENV
    outside = _hip_lib(tmp_path / "outside/libggml-hip.so", "gfx90a")
    _hip_lib(site / "pkg/libk.so", "gfx90a")
    os.mkfifo(site / "pkg/libfifo.so")
    os.symlink(outside, site / "pkg/liblink.so")
    (site / "evil").mkdir()
    os.symlink(outside.parent, site / "evil/escape")
    for name, make in (("a_fifo-1.0.dist-info", lambda p: os.mkfifo(p)),
                       ("b_link-1.0.dist-info", lambda p: os.symlink("/etc/passwd", p)),
                       ("c_huge-1.0.dist-info", lambda p: p.write_bytes(b"pkg/libk.so,,\n" * (O.RECORD_MAX // 14 + 10)))):
        (site / name).mkdir()
        make(site / name / "RECORD")
    (root / "home/bob/env/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    rep = P.find_programs(Root(str(root)), [TargetId.parse(MI50)], pythons=["/home/bob/env"])
    assert [p.path for p in rep.programs] == [f"/{ENV}/pkg/libk.so"]
    assert rep.programs[0].owner is None and rep.programs[0].kind is P.UNKNOWN
    assert O.read_capped(site / "a_fifo-1.0.dist-info/RECORD", 100) is None
