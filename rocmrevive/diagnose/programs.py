"""The user's own GPU programs: HIP executables and libraries outside the ROCm trees (llama.cpp
builds and wheels, onnxruntime-rocm, JAX's ROCm plugins, CuPy for ROCm, PyTorch's own
``libtorch_hip``), which GPU targets their kernels were built for, and the build that fixes one
that cannot run on a detected card.

Tensile files do not help here: a program whose own ``.hip_fatbin`` lacks gfx906 fails on an
MI50 whatever rocBLAS carries (``hipErrorInvalidDeviceFunction`` / "no kernel image"). Files are
found by content (``devicescan``: every file of every Python environment and install place, by its
header, whatever its name or package), then read by structure (``codeobj.inspect.inspect_file``:
bundle entry tables and the head of each compressed bundle, never a whole decompression), so a
187 MB ``libggml-hip`` costs milliseconds. The package that ships a file (pip's RECORD, dpkg's
lists: ``owners``) is what the fix tells the user to replace; a project rocmrevive knows by name
(llama.cpp, CuPy, JAX, onnxruntime, PyTorch) gets its own build recipe.

    rep = find_programs(Root("/"), [TargetId.parse("gfx906")])
    [(p.name, p.path, p.cells["gfx906"].status) for p in rep.programs]
"""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.codeobj.elf import dynamic_tags
from rocmrevive.codeobj.inspect import inspect_file, open_regular
from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose.audit import Cell, CellStatus, _cell
from rocmrevive.diagnose.devicescan import Walked, places, walk
from rocmrevive.diagnose.libraries import LIBGGML_HIP, KnownLibrary, RemedyPackage, remedy_packages
from rocmrevive.diagnose.owners import Owner, Owners
from rocmrevive.hardware.findings import Finding, Severity
from rocmrevive.rootfs import Root
from rocmrevive.trees.pythonenv import find_envs

BREAKS = ("its own GPU kernels have no code for this card: it stops with hipErrorInvalidDeviceFunction "
          "('invalid device function' / 'no kernel image is available'), whatever rocBLAS carries; "
          "rocmrevive's Tensile files do not help")


@dataclass(frozen=True)
class ProgramKind:
    key: str
    name: str
    fix: str                 # {targets}: ';'-joined processors, {targets_comma}: ','-joined
    package: str | None = None   # the Python distribution, when it is one
    packages: tuple[RemedyPackage, ...] = ()   # builds named only for processors they declare

    def fix_for(self, processors: list[str]) -> str:
        return (self.fix.format(targets=";".join(processors), targets_comma=",".join(processors),
                                first=processors[0])
                + remedy_packages(self.packages, processors))


LLAMA_CPP = ProgramKind(
    "llama.cpp", "llama.cpp",
    "rebuild llama.cpp for the cards: cmake -S llama.cpp -B build -DGGML_HIP=ON "
    "-DAMDGPU_TARGETS=\"{targets}\" -DGPU_TARGETS=\"{targets}\" -DCMAKE_BUILD_TYPE=Release && "
    "cmake --build build -j (then run build/bin/llama-*; `rocmrevive audit` re-reads it)",
    packages=(LIBGGML_HIP,))
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

# where no package's RECORD names the file: site-relative path patterns -> kind
SITE_HINTS: tuple[tuple[str, ProgramKind], ...] = (
    ("llama_cpp/*", LLAMA_CPP_PYTHON), ("onnxruntime/*", ONNXRUNTIME), ("jax_rocm*", JAX),
    ("jaxlib/rocm/*", JAX), ("cupy/*", CUPY), ("cupy_backends/*", CUPY), ("torch/lib/*", TORCH),
)
# a distribution's normalized name (a pattern) -> its kind
DIST_KINDS: tuple[tuple[str, ProgramKind], ...] = (
    ("cyllama-rocm", CYLLAMA), ("llama-cpp-python", LLAMA_CPP_PYTHON), ("onnxruntime*", ONNXRUNTIME),
    ("jax-rocm*", JAX), ("jax-cuda*-rocm*", JAX), ("jaxlib", JAX), ("cupy*", CUPY), ("torch", TORCH),
)
_PACKAGE_OF_LIBS = re.compile(r"^(.*)\.libs$")
_LLAMA_FILES = ("libggml", "libllama", "llama-", "libmtmd")


def kind_for(path: str, hint: ProgramKind | None, site: str | None = None) -> ProgramKind:
    """The kind of a file no package claims, from where it lies."""
    if hint is not None:
        return hint
    if site:
        rel = os.path.relpath(path, site)
        for pattern, kind in SITE_HINTS:
            if fnmatch.fnmatchcase(rel, pattern):
                return kind
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
    if name.startswith(_LLAMA_FILES):
        return LLAMA_CPP
    return UNKNOWN


def kind_of_owner(owner: Owner, path: str) -> ProgramKind:
    """The kind of a file a package ships: a project rocmrevive knows by its distribution, else
    that package itself is what to replace (a wheel that bundles its own llama.cpp included)."""
    if owner.manager == "pip":
        for pattern, kind in DIST_KINDS:
            if fnmatch.fnmatchcase(owner.name, pattern):
                return kind
        return wheel_kind(owner, bundles_llama=os.path.basename(path).startswith(_LLAMA_FILES))
    return debian_kind(owner)


def wheel_kind(owner: Owner, *, bundles_llama: bool) -> ProgramKind:
    """A Python package rocmrevive has no recipe for: the fix names that wheel (its name and
    version come from its dist-info folder, checked against PEP 503/440 characters)."""
    dist, ver = owner.name, f" {owner.version}" if owner.version else ""
    if bundles_llama:
        return ProgramKind(
            f"wheel:{dist}", f"{dist} (a wheel bundling llama.cpp's libggml-hip)",
            f"replace the {dist}{ver} wheel: it loads its own copy of llama.cpp, built for other cards only, so "
            f"rebuilding llama.cpp elsewhere does not change it; install a {dist} build whose kernels include "
            f"{{first}}, or build {dist} from source for the cards (CMAKE_ARGS=\"-DGGML_HIP=ON "
            f"-DAMDGPU_TARGETS={{targets}} -DGPU_TARGETS={{targets}}\" pip install --force-reinstall --no-binary "
            f"{dist} {dist}); `pip show -f {dist}` lists its files", dist)
    return ProgramKind(
        f"wheel:{dist}", f"{dist} (Python package)",
        f"replace the {dist}{ver} wheel: install a {dist} build whose kernels include {{first}}, or build "
        f"{dist} from source for the cards (hipcc --offload-arch={{first}}; CMake -DAMDGPU_TARGETS=\"{{targets}}\" "
        f"or CMAKE_HIP_ARCHITECTURES); `pip show -f {dist}` lists its files", dist)


def debian_kind(owner: Owner) -> ProgramKind:
    """A file a distribution package ships: replace that package."""
    pkg = owner.name
    return ProgramKind(
        f"deb:{pkg}", f"{pkg} (distribution package)",
        f"replace the package {pkg}: install a version of it built for {{first}} (`apt-cache show {pkg}`: its "
        f"X-Rocm-Gpu-Architecture field lists the targets), or build the program from source with "
        f"--offload-arch={{first}} (CMake -DAMDGPU_TARGETS=\"{{targets}}\") into /usr/local; `dpkg -L {pkg}` "
        f"lists its files")


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
    owner: Owner | None = None   # the package that ships the file (pip's RECORD, dpkg's lists)

    @property
    def name(self) -> str:
        return self.kind.name

    @property
    def runs_everywhere(self) -> bool:
        return all(c.status == CellStatus.EMBEDDED for c in self.cells.values())

    def to_json(self) -> dict:
        return {"path": self.path, "program": self.kind.key, "name": self.kind.name,
                "package": self.owner.name if self.owner else self.kind.package,
                "owner": self.owner.to_json() if self.owner else None, "where": self.where, "processors": self.processors,
                "code_objects": self.code_objects, "code_object_versions": self.co_versions,
                "needs": self.needs, "runs_on_all": self.runs_everywhere,
                "cells": {t: c.to_json() for t, c in self.cells.items()}, "problems": self.problems}


@dataclass
class ProgramReport:
    targets: list[TargetId]
    programs: list[Program] = field(default_factory=list)
    files_read: int = 0          # every file of the places, read by its header
    candidates: int = 0          # those whose header says device code, read deeper
    places: list[str] = field(default_factory=list)
    truncated: bool = False      # the walk stopped at devicescan.MAX_FILES

    def cannot_run(self) -> list[tuple[Program, Cell]]:
        return [(p, c) for p in self.programs for c in p.cells.values() if c.status in (CellStatus.MISSING, CellStatus.OTHER_MODE)]

    def to_json(self) -> dict:
        return {"targets": [str(t) for t in self.targets], "programs": [p.to_json() for p in self.programs],
                "cannot_run": [{"path": p.path, "name": p.name, "program": p.kind.key, **c.to_json()}
                               for p, c in self.cannot_run()],
                "files_read": self.files_read, "candidates": self.candidates, "places": self.places,
                "truncated": self.truncated}


_ROCM_LIBS = ("libamdhip64", "librocblas", "libhipblas", "librocsolver", "libhipblaslt", "librccl",
              "libMIOpen", "librocsparse", "libhipsparse", "librocfft", "libhipfft", "librocrand",
              "libhiprand", "libmigraphx", "libhsa-runtime64", "libroctx64", "libhiprtc")


def _needs(real: Path) -> list[str]:
    """The ROCm libraries among DT_NEEDED (``codeobj.elf.dynamic_tags``: the section table, the
    .dynamic section and its string table, read by ``pread``); [] for anything that does not parse."""
    try:
        with open_regular(real) as f:
            tags = dynamic_tags(f.fileno(), os.fstat(f.fileno()).st_size)
    except (OSError, ValueError):
        return []
    return [n for n in tags.needed if n.startswith(_ROCM_LIBS)] if tags else []


def read_program(root: Root, mpath: str, kind: ProgramKind, where: str, targets: list[TargetId],
                 owner: Owner | None = None) -> Program | None:
    """The program at ``mpath`` with its cells, or None when the file has no device code."""
    real = root.path(mpath)
    # the machine's processors: another target's entries are read to their ELF header only
    fr = inspect_file(real, focus=frozenset(t.processor for t in targets) if targets else None)
    if not fr.entries and fr.kind != "unreadable":
        return None
    prog = Program(mpath, kind, where, processors=fr.processors, code_objects=len(fr.entries),
                   co_versions=sorted({e.co_version for e in fr.entries if e.co_version is not None}),
                   problems=list(fr.problems), owner=owner)
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


def find_programs(root: Root, targets: list[TargetId], *, pythons=(), common: bool = True, envs=None,
                  progress=None) -> ProgramReport:
    """Every HIP program and library found in the Python environments and install places."""
    if envs is None:   # the caller's, when it has looked already
        envs, _problems = find_envs(root, pythons, common=common)
    where = places(root, list(dict.fromkeys(e.site_packages for e in envs)))
    rep = ProgramReport(list(targets), places=[p.path for p in where])
    counts, owners = Walked(), Owners(root)
    for found in walk(root, where, counts):
        owner = owners.of(found.path, found.site)
        kind = kind_of_owner(owner, found.path) if owner else kind_for(found.path, None, found.site)
        prog = read_program(root, found.path, kind, found.where, rep.targets, owner)
        if progress:
            progress(1)
        if prog is not None:
            rep.programs.append(prog)
    rep.files_read, rep.candidates, rep.truncated = counts.files, counts.candidates, counts.truncated
    rep.programs.sort(key=lambda p: (p.runs_everywhere, p.kind.name.lower(), p.path))
    return rep


def program_findings(rep: ProgramReport) -> list:
    """Doctor findings: one warning per program that cannot run on a detected card."""
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


__all__ = ["program_findings", "find_programs", "read_program", "kind_for", "kind_of_owner", "Program",
           "ProgramReport", "ProgramKind"]
