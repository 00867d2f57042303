"""The user's own GPU programs: HIP executables and libraries outside the ROCm trees (llama.cpp
builds and wheels, onnxruntime-rocm, JAX's ROCm plugins, CuPy for ROCm, PyTorch's own
``libtorch_hip``), which GPU targets their kernels were built for, and the build that fixes one
that cannot run on a detected card.

Tensile files do not help here: a program whose own ``.hip_fatbin`` lacks gfx906 fails on an
MI50 whatever rocBLAS carries (``hipErrorInvalidDeviceFunction`` / "no kernel image"). The
kernels are read by structure (``codeobj.inspect.inspect_file``: bundle entry tables and the
head of each compressed bundle, never a whole decompression), so a 187 MB ``libggml-hip`` costs
milliseconds.

Where programs are looked for (bounded globs, no walk of home folders): every Python
environment ``trees.pythonenv`` finds (the packages below and every ``*.libs`` folder that
auditwheel filled), and the usual install places of source builds (``/usr/local``, ``/opt/*``,
``~/*/build/bin`` of llama.cpp checkouts, Ollama's bundle folders).

    rep = find_programs(Root("/"), [TargetId.parse("gfx906")])
    [(p.name, p.path, p.cells["gfx906"].status) for p in rep.programs]
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose.audit import Cell, CellStatus, _cell, first_sight
from rocmrevive.diagnose.libraries import KnownLibrary
from rocmrevive.rootfs import Root

BREAKS = ("its own GPU kernels have no code for this card: it stops with hipErrorInvalidDeviceFunction "
          "('invalid device function' / 'no kernel image is available'), whatever rocBLAS carries; "
          "rocmrevive's Tensile files do not help")


@dataclass(frozen=True)
class ProgramKind:
    key: str
    name: str
    fix: str                 # {targets}: ';'-joined processors, {targets_comma}: ','-joined
    package: str | None = None   # the Python distribution, when it is one

    def fix_for(self, processors: list[str]) -> str:
        return self.fix.format(targets=";".join(processors), targets_comma=",".join(processors),
                               first=processors[0])


LLAMA_CPP = ProgramKind(
    "llama.cpp", "llama.cpp",
    "rebuild llama.cpp for the cards: cmake -S llama.cpp -B build -DGGML_HIP=ON "
    "-DAMDGPU_TARGETS=\"{targets}\" -DGPU_TARGETS=\"{targets}\" -DCMAKE_BUILD_TYPE=Release && "
    "cmake --build build -j (then run build/bin/llama-*; `rocmrevive audit` re-reads it); on Debian, the "
    "libggml0-backend-hip package (0.27.0-1 lists gfx803 to gfx1102, gfx906 among them) is such a build")
LLAMA_CPP_PYTHON = ProgramKind(
    "llama-cpp-python", "llama-cpp-python (llama.cpp)",
    "reinstall it built for the cards: CMAKE_ARGS=\"-DGGML_HIP=ON -DAMDGPU_TARGETS={targets} "
    "-DGPU_TARGETS={targets}\" pip install --force-reinstall --no-cache-dir --no-binary llama-cpp-python "
    "llama-cpp-python", "llama-cpp-python")
CYLLAMA = ProgramKind(
    "cyllama-rocm", "cyllama-rocm (llama.cpp's libggml-hip)",
    "the cyllama-rocm wheel is built for other cards only: build cyllama from source with the cards' "
    "targets (its `make build-hip`, with AMDGPU_TARGETS=\"{targets}\" / GPU_TARGETS=\"{targets}\" in the "
    "environment for llama.cpp's CMake), or use llama.cpp built with -DGGML_HIP=ON "
    "-DAMDGPU_TARGETS=\"{targets}\"", "cyllama-rocm")
ONNXRUNTIME = ProgramKind(
    "onnxruntime-rocm", "onnxruntime (ROCm execution provider)",
    "build onnxruntime for the cards: ./build.sh --config Release --build_wheel --use_rocm "
    "--rocm_home /opt/rocm --cmake_extra_defines CMAKE_HIP_ARCHITECTURES=\"{targets}\", then pip install "
    "build/Linux/Release/dist/onnxruntime_rocm-*.whl; or use the CPU/MIGraphX provider meanwhile",
    "onnxruntime-rocm")
JAX = ProgramKind(
    "jax-rocm", "JAX ROCm plugin",
    "build the jax_rocm plugin and pjrt wheels from ROCm/rocm-jax for the cards (bazel with "
    "--repo_env=TF_ROCM_AMDGPU_TARGETS={targets_comma}) and install both wheels")
CUPY = ProgramKind(
    "cupy-rocm", "CuPy for ROCm",
    "build CuPy from source for the cards: CUPY_INSTALL_USE_HIP=1 ROCM_HOME=/opt/rocm "
    "HCC_AMDGPU_TARGET={targets_comma} pip install --no-binary cupy cupy")
TORCH = ProgramKind(
    "torch", "PyTorch (libtorch_hip)",
    "install a torch ROCm wheel whose libtorch_hip embeds {first} (rocmrevive audit --tree "
    "<site-packages>/torch/lib shows it), or build PyTorch with PYTORCH_ROCM_ARCH=\"{targets}\"", "torch")
UNKNOWN = ProgramKind(
    "hip-program", "HIP program",
    "rebuild it for the cards: hipcc/clang --offload-arch={first} (CMake: -DAMDGPU_TARGETS=\"{targets}\" "
    "-DGPU_TARGETS=\"{targets}\", or CMAKE_HIP_ARCHITECTURES), or get a build that lists {first}")

# site-packages relative globs -> kind (None: decide from the file name)
SITE_GLOBS: tuple[tuple[str, ProgramKind | None], ...] = (
    ("*.libs/lib*.so*", None),
    ("llama_cpp/lib/lib*.so*", LLAMA_CPP_PYTHON),
    ("llama_cpp/lib/*/lib*.so*", LLAMA_CPP_PYTHON),
    ("onnxruntime/capi/libonnxruntime_providers_rocm*.so", ONNXRUNTIME),
    ("onnxruntime/capi/libonnxruntime_providers_migraphx*.so", ONNXRUNTIME),
    ("jax_rocm*_plugin/*.so", JAX),
    ("jax_rocm*_pjrt/*.so", JAX),
    ("jaxlib/rocm/*.so", JAX),
    ("cupy/_core/*.so", CUPY),
    ("cupy/cuda/*.so", CUPY),
    ("cupy/random/*.so", CUPY),
    ("cupy_backends/cuda/libs/*.so", CUPY),
    ("torch/lib/libtorch_hip.so", TORCH),
    ("torch/lib/libc10_hip.so", TORCH),
)
# machine-path globs of source builds and bundles -> kind (None: from the file name)
PLACE_GLOBS: tuple[tuple[str, ProgramKind | None], ...] = (
    ("/usr/local/lib/lib*.so*", None), ("/usr/local/lib64/lib*.so*", None),
    ("/usr/local/bin/llama-*", LLAMA_CPP),
    ("/opt/*/bin/llama-*", LLAMA_CPP), ("/opt/*/lib/libggml*.so*", LLAMA_CPP),
    ("/opt/*/build/bin/llama-*", LLAMA_CPP), ("/opt/*/build/bin/lib*.so*", None),
    ("/root/*/build/bin/llama-*", LLAMA_CPP), ("/root/*/build/bin/lib*.so*", None),
    ("/home/*/*/build/bin/llama-*", LLAMA_CPP), ("/home/*/*/build/bin/lib*.so*", None),
    ("/home/*/*/*/build/bin/llama-*", LLAMA_CPP), ("/home/*/*/*/build/bin/lib*.so*", None),
    ("/usr/lib/*/ggml/*/libggml-hip*.so*", LLAMA_CPP),      # Debian's libggml0-backend-hip
    ("/usr/lib/ollama/libggml-hip*.so*", LLAMA_CPP), ("/usr/lib/ollama/*/libggml-hip*.so*", LLAMA_CPP),
    ("/usr/local/lib/ollama/libggml-hip*.so*", LLAMA_CPP),
    ("/usr/local/lib/ollama/*/libggml-hip*.so*", LLAMA_CPP),
)
_PACKAGE_OF_LIBS = re.compile(r"^(.*)\.libs$")


def kind_for(path: str, hint: ProgramKind | None) -> ProgramKind:
    if hint is not None:
        return hint
    name = os.path.basename(path)
    parent = os.path.basename(os.path.dirname(path))
    m = _PACKAGE_OF_LIBS.match(parent)
    pkg = m.group(1).replace("_", "-").lower() if m else None
    if pkg == "cyllama-rocm":
        return CYLLAMA
    if pkg and pkg.startswith("onnxruntime"):
        return ONNXRUNTIME
    if pkg and pkg.startswith("cupy"):
        return CUPY
    if pkg and pkg.startswith("llama-cpp-python"):
        return LLAMA_CPP_PYTHON
    if name.startswith(("libggml", "libllama", "llama-", "libmtmd")):
        return LLAMA_CPP
    return UNKNOWN


@dataclass
class Program:
    path: str                    # machine path of the file with device code
    kind: ProgramKind
    where: str                   # the environment or install place it was found in
    processors: list[str] = field(default_factory=list)
    code_objects: int = 0
    co_versions: list[int] = field(default_factory=list)
    needs: list[str] = field(default_factory=list)    # ROCm libraries it links (DT_NEEDED)
    cells: dict[str, Cell] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def runs_everywhere(self) -> bool:
        return all(c.status == CellStatus.EMBEDDED for c in self.cells.values())

    def to_json(self) -> dict:
        return {"path": self.path, "program": self.kind.key, "name": self.kind.name,
                "package": self.kind.package, "where": self.where, "processors": self.processors,
                "code_objects": self.code_objects, "code_object_versions": self.co_versions,
                "needs": self.needs, "runs_on_all": self.runs_everywhere,
                "cells": {t: c.to_json() for t, c in self.cells.items()}, "problems": self.problems}


@dataclass
class ProgramReport:
    targets: list[TargetId]
    programs: list[Program] = field(default_factory=list)
    files_read: int = 0
    places: list[str] = field(default_factory=list)

    def cannot_run(self) -> list[tuple[Program, Cell]]:
        return [(p, c) for p in self.programs for c in p.cells.values() if c.status in (CellStatus.MISSING, CellStatus.OTHER_MODE)]

    def to_json(self) -> dict:
        return {"targets": [str(t) for t in self.targets], "programs": [p.to_json() for p in self.programs],
                "cannot_run": [{"path": p.path, "name": p.name, "program": p.kind.key, **c.to_json()}
                               for p, c in self.cannot_run()],
                "files_read": self.files_read, "places": self.places}


def _glob(root: Root, pattern: str) -> list[str]:
    base = "" if root.is_host else glob.escape(str(root.base))
    return sorted(root.machine_path(p) for p in glob.glob(base + pattern))


def candidate_files(root: Root, site_packages: list[str]) -> list[tuple[str, ProgramKind | None, str]]:
    """(machine path, kind hint, where) for every file worth reading; each real file once, links
    skipped (they name a file of the same folder, and an absolute one could leave the root)."""
    out: list[tuple[str, ProgramKind | None, str]] = []
    seen: set[tuple[int, int]] = set()

    def add(mpath: str, hint, where: str) -> None:
        if first_sight(root.path(mpath), seen):
            out.append((mpath, hint, where))

    for site in site_packages:
        for pat, hint in SITE_GLOBS:
            for p in _glob(root, f"{glob.escape(site)}/{pat}"):
                add(p, hint, site)
    for pat, hint in PLACE_GLOBS:
        for p in _glob(root, pat):
            if p.startswith("/opt/rocm"):
                continue   # the ROCm trees are `audit`'s library matrix
            add(p, hint, os.path.dirname(p))
    return out


def _needs(real: Path) -> list[str]:
    """The ROCm libraries among DT_NEEDED (only the .dynamic section and its strings are read)."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.dynamic import DynamicSection
    from elftools.elf.elffile import ELFFile

    needed: list[str] = []
    try:
        with open(real, "rb") as f:
            sec = ELFFile(f).get_section_by_name(".dynamic")
            if isinstance(sec, DynamicSection):
                needed = [t.needed for t in sec.iter_tags("DT_NEEDED")]
    except (ELFError, OSError, ValueError, KeyError):
        return []
    rocm = ("libamdhip64", "librocblas", "libhipblas", "librocsolver", "libhipblaslt", "librccl",
            "libMIOpen", "librocsparse", "libhipsparse", "librocfft", "libhipfft", "librocrand",
            "libhiprand", "libmigraphx", "libhsa-runtime64", "libroctx64", "libhiprtc")
    return [n for n in needed if n.startswith(rocm)]


def read_program(root: Root, mpath: str, kind: ProgramKind, where: str, targets: list[TargetId]) -> Program | None:
    """The program at ``mpath`` with its cells, or None when the file has no device code."""
    from rocmrevive.codeobj.inspect import inspect_file

    real = root.path(mpath)
    fr = inspect_file(real)
    if not fr.entries and fr.kind != "unreadable":
        return None
    prog = Program(mpath, kind, where, processors=fr.processors, code_objects=len(fr.entries),
                   co_versions=sorted({e.co_version for e in fr.entries if e.co_version is not None}),
                   problems=list(fr.problems))
    prog.needs = _needs(real) if fr.kind == "host-elf" else []
    procs = sorted({t.processor for t in targets}, key=lambda p: (p != "gfx906", p))
    known = KnownLibrary(kind.key, kind.name, r"^$", True, BREAKS, kind.fix_for(procs or ["gfx906"]))
    for t in targets:
        cell = _cell(fr, t, known, None)
        if cell.status in (CellStatus.MISSING, CellStatus.OTHER_MODE) and "librocblas" in " ".join(prog.needs):
            cell.breaks += (f"; it also links {', '.join(n for n in prog.needs if n.startswith('librocblas'))}, "
                            f"whose Tensile files `rocmrevive install` provides")
        prog.cells[str(t)] = cell
    return prog


def find_programs(root: Root, targets: list[TargetId], *, pythons=(), common: bool = True,
                  progress=None) -> ProgramReport:
    """Every HIP program and library found in the Python environments and install places."""
    from rocmrevive.trees.pythonenv import find_envs

    envs, _problems = find_envs(root, pythons, common=common)
    sites = [e.site_packages for e in envs]
    rep = ProgramReport(list(targets), places=sites)
    for mpath, hint, where in candidate_files(root, sites):
        rep.files_read += 1
        prog = read_program(root, mpath, kind_for(mpath, hint), where, rep.targets)
        if progress:
            progress(1)
        if prog is not None:
            rep.programs.append(prog)
    rep.programs.sort(key=lambda p: (p.runs_everywhere, p.kind.name.lower(), p.path))
    return rep


def program_findings(rep: ProgramReport) -> list:
    """Doctor findings: one warning per program that cannot run on a detected card."""
    from rocmrevive.hardware.findings import Finding, Severity

    out = []
    for p in rep.programs:
        bad = [c for c in p.cells.values() if c.status in (CellStatus.MISSING, CellStatus.OTHER_MODE)]
        if not bad:
            continue
        cards = ", ".join(c.target for c in bad)
        out.append(Finding(
            "program-missing-target", Severity.WARNING, p.path,
            f"{p.name} {p.path} cannot run on {cards}: its kernels are for "
            f"{', '.join(p.processors) or 'no known target'} only ({p.code_objects} code objects)",
            BREAKS, bad[0].remedy, data={"program": p.kind.key, "processors": p.processors,
                                         "needs": p.needs, "targets": [c.target for c in bad]}))
    return out


__all__ = ["program_findings", "find_programs", "read_program", "candidate_files", "Program", "ProgramReport", "ProgramKind"]
