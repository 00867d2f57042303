"""A small but structurally real rocBLAS: Tensile library, AMD-style ROCm tree and Debian package.

Debian's rocBLAS 4.4.1 library is 2.9 GB; the demo and fast tests need the same *structure* in a
few hundred KB, built offline in seconds:

    import minirocblas as mr                         # demo/ on sys.path
    lib = mr.build_library("/tmp/lib", arches=["gfx906", "gfx908"])
    lib["placeholders"]["gfx906"]                    # ['TensileLibrary_Type_DD_..._gfx906', ...]
    tree = mr.build_tree("/tmp/machine", rocm_version="6.4.3", arches_present=["gfx908"])
    deb = mr.build_source_deb("/tmp/librocblas4_6.4.4-4_amd64.deb", arch="gfx906")
    deb["sha256"], deb["size"], deb["members"][:2]

What is real: file names follow Tensile's scheme (lazy index, per-type placeholder ``.dat``,
``.co`` / ``.hsaco`` / ``_fallback_<arch>.hsaco`` / ``Kernels.so-000-<arch>.hsaco``); every
``.dat`` is msgpack with the same keys, key order and encoding as Debian's librocblas4 6.4.4
(docs/formats.md §5.3); every code object is compiled by clang for its arch from
``minirocblas_src/`` with kernel functions named after the solutions, ``.co`` files assembled
kernel by kernel with ``-mcode-object-version=4`` and linked into one file with one metadata
note per kernel (docs/formats.md §2, §7); the host library has a real ``.hip_fatbin``; the ``.deb``
is made by ``dpkg-deb --build --root-owner-group``. What is small: 2 placeholders per arch (3
on MFMA arches) with 2-3 solutions each, 2 fallbacks, 3 helper kernels.

Everything is cached under ``$ROCMREVIVE_TEST_CACHE/minirocblas/<hash of inputs>/`` (default
``/var/tmp/rocmrevive-test-cache``): the hash covers this file, ``minirocblas_src/``, the
tool versions and the parameters; a missing entry is rebuilt (about 2-4 s on 2 cores).
Callers get copies, so changing them never touches the cache.

Script: ``python demo/minirocblas.py {library,tree,deb,hostlib} OUT [options]`` prints JSON.
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import functools
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

HERE = Path(__file__).resolve().parent
SRC = HERE / "minirocblas_src"

CLANG = "clang-15"
LLD = "ld.lld-15"
APT_HINT = "apt-get install -y --no-install-recommends clang-15 lld-15 dpkg"

DEBIAN_LIBDIR = "usr/lib/x86_64-linux-gnu"
# Fixed time stamp for reproducible packages (dpkg-deb reads SOURCE_DATE_EPOCH): 2026-01-01 UTC.
SOURCE_DATE_EPOCH = 1767225600
# AMD's build numbers of rocBLAS releases (docs/formats.md §9.2); .info/version is "<rocm>-<build>".
AMD_BUILD_NUMBERS = {"6.3.0": 39, "6.3.1": 48, "6.3.2": 66, "6.3.3": 74, "6.3.4": 76,
                     "6.4.0": 47, "6.4.1": 83, "6.4.2": 120, "6.4.3": 128, "6.4.4": 129,
                     "7.0.0": 38, "7.0.2": 56}
# Arches whose Tensile logic uses matrix cores (MFMA): they get an Int8 placeholder, as in
# Debian's library where gfx908 has TensileLibrary_Type_I8I_HPA_*_gfx908 and gfx906 has none.
MFMA_ARCHES = {"gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950"}


class BuildError(RuntimeError):
    """A tool failed or is missing (one line: what, where, what to do)."""


# ------------------------------------------------------------------------------------------
# What the library holds

@dataclass(frozen=True)
class Kernel:
    """One solution: a GEMM kernel with Tensile-like tuning parameters."""
    wg: tuple[int, int, int]       # work group
    tt: tuple[int, int]            # thread tile
    depth_u: int
    gsu: int = 1                   # global split U (names get "_GB" and "GSU<n>")
    source: bool = False           # sizeMapping.sourceKernel: compiled C, not assembly
    batched: bool = False          # problemType.stridedBatched
    mfma: tuple[int, ...] = ()     # matrix instruction, e.g. (32, 32, 8, 1)
    wgm: int = 8
    mt: tuple[int, int] = ()       # macro tile when not work group x thread tile (MFMA kernels)


@dataclass(frozen=True)
class TypeSpec:
    """A data-type combination as Tensile names it: ``SS``, ``DD``, ``I8I_HPA``."""
    code: str                      # placeholder infix: "SS", "I8I_HPA"
    types: tuple[str, str, str, str]
    hpa: bool
    name_code: str                 # in kernel names: "S", "D", "I8II_BH"
    c_in: str                      # C types for the kernel source
    c_acc: str
    elem_shift: int                # log2(element size), for BufferLoadOffsetLimitCheck


SS = TypeSpec("SS", ("Float",) * 4, False, "S", "float", "float", 2)
DD = TypeSpec("DD", ("Double",) * 4, False, "D", "double", "double", 3)
I8I = TypeSpec("I8I_HPA", ("Int8", "Int8", "Int32", "Int32"), True, "I8II_BH", "signed char", "int", 0)


@dataclass(frozen=True)
class PlaceholderSpec:
    types: TypeSpec
    op: str                        # operation identifier, e.g. Contraction_l_Alik_Bljk_Cijk_Dijk
    kernels: tuple[Kernel, ...]
    fallback: bool = False
    only_arches: frozenset[str] | None = None   # None: every arch
    index_base: int = 0
    linear_model: bool = False     # Debian's SS placeholders carry linearModel {intercept, max, slope}

    def name(self, arch: str) -> str:
        tail = "fallback" if self.fallback else arch
        return f"TensileLibrary_Type_{self.types.code}_{self.op}_{tail}"


OP_NN = "Contraction_l_Alik_Bljk_Cijk_Dijk"
OP_TT = "Contraction_l_Ailk_Bjlk_Cijk_Dijk"

PLACEHOLDERS = (
    # SS has assembly kernels (.co) and a source kernel (.hsaco), as Debian's SS files do.
    PlaceholderSpec(SS, OP_NN, (Kernel((16, 16, 1), (4, 4), 8),
                                Kernel((16, 16, 1), (2, 2), 16, gsu=4, batched=True),
                                Kernel((16, 4, 1), (2, 2), 8, source=True, batched=True, wgm=1)),
                    index_base=605552000, linear_model=True),
    PlaceholderSpec(DD, OP_TT, (Kernel((8, 8, 1), (4, 4), 8, wgm=1),
                                Kernel((16, 16, 1), (4, 4), 4))),
    PlaceholderSpec(I8I, OP_TT, (Kernel((64, 4, 1), (1, 32), 32, mfma=(32, 32, 8, 1), mt=(64, 64)),
                                 Kernel((32, 8, 1), (1, 16), 16, mfma=(16, 16, 16, 1), wgm=1, mt=(32, 32))),
                    only_arches=frozenset(MFMA_ARCHES), index_base=606084000),
)
FALLBACKS = (
    # Fallbacks are source kernels; one kernel can serve two solutions (batched or not), as
    # in Debian's SS fallback where indices 4 and 5 share one name.
    PlaceholderSpec(SS, OP_NN, (Kernel((16, 16, 1), (8, 4), 12), Kernel((16, 16, 1), (8, 4), 12, batched=True),
                                Kernel((16, 16, 1), (4, 4), 8, gsu=3)), fallback=True),
    PlaceholderSpec(DD, OP_TT, (Kernel((16, 16, 1), (4, 4), 8), Kernel((8, 8, 1), (4, 4), 4, batched=True)),
                    fallback=True),
)
# Kernels.so-000-<arch>.hsaco: helper kernels (names from Debian's file), which no .dat names.
HELPER_KERNELS = (("Cijk_S_GA", "float", "float"), ("Cijk_S_PostGSU1", "float", "float"),
                  ("Cijk_D_GA", "double", "double"))


def placeholders_for(arch: str) -> list[PlaceholderSpec]:
    return [p for p in PLACEHOLDERS if p.only_arches is None or arch in p.only_arches]


def _isa(arch: str) -> str:
    return arch.removeprefix("gfx")


def solution_name(spec: PlaceholderSpec, k: Kernel, arch: str) -> str:
    """A Tensile-style kernel name: the readable head and the long tuning tail as in Debian's
    files (e.g. ``Cijk_Alik_Bljk_SB_MT64x64x8_SE_1LDSB0_..._ISA906_..._WG16_16_1_WGM8``)."""
    a, b = spec.op.split("_")[2:4]
    source = k.source or spec.fallback
    mt = _macro_tile(k)
    head = f"Cijk_{a}_{b}_{spec.types.name_code}{'' if spec.types.hpa else 'B'}"
    head += "_GB" if k.gsu > 1 else ""
    head += f"_MT{mt[0]}x{mt[1]}x{k.depth_u}"
    head += f"_MI{'x'.join(map(str, k.mfma))}" if k.mfma else ""
    isa = "000" if source else _isa(arch)
    kl = "S" if source else "A"
    return (f"{head}_{'SN' if source or k.mfma else 'SE'}_1LDSB0_APM1_ABV0_ACED0_AF0EM1_AF1EM1_AMAS3_ASE_ASGT_ASLT"
            f"_ASAE01_ASCE01_ASEM1_AAC0_BL1_BS1_CLR0_DTLA0_DTLB0_DTVA0_DVO0_ETSP_EPS1_EMLL0_FL0_GLVWA2"
            f"_GLVWB2_GRPM1_GRVW2_GSU{k.gsu}_GSUASB_GLS0_ISA{isa}_IU1_K1_KL{kl}_LBSPPA0_LBSPPB0_LPA0_LPB0"
            f"_LDL1_LRVW2_LWPMn1_LDW0_FMA_MIAV0_MDA2_MO40_MMFGLC_NTA0_NTB0_NTC0_NTD0_NEPBS0_NLCA1_NLCB1"
            f"_ONLL1_OPLV0_PK0_PAP0_PGR1_PLR1_SIA1_SS0_SU32_SUM0_SUS256_SCIUI1_SPO0_SRVW0_SSO0_SVW2"
            f"_SNLL0_TSGRA0_TSGRB0_TT{k.tt[0]}_{k.tt[1]}_TLDS0_UMLDSA0_UMLDSB0_USFGRO0_VAW1_VS1_VW2_VWB2"
            f"_VFLRP0_WSGRA0_WSGRB0_WS64_WG{k.wg[0]}_{k.wg[1]}_{k.wg[2]}_WGM{k.wgm}")


# ------------------------------------------------------------------------------------------
# .dat contents (msgpack; dict key order = Debian's, so msgpack.packb gives the same encoding)

def _macro_tile(k: Kernel) -> list[int]:
    mt = k.mt or (k.wg[0] * k.tt[0], k.wg[1] * k.tt[1])
    return [mt[0], mt[1], 1]


def solution_dict(spec: PlaceholderSpec, pos: int, k: Kernel, arch: str) -> dict:
    t = spec.types
    source = k.source or spec.fallback
    mt = _macro_tile(k)
    pred = [
        {"type": "StrideAEqual", "index": 0, "value": 1},
        {"type": "StrideBEqual", "index": 0, "value": 1},
        {"type": "StrideCEqual", "index": 0, "value": 1},
        {"type": "StrideDEqual", "index": 0, "value": 1},
        {"type": "OperationIdentifierEqual", "value": spec.op},
        {"type": "StridedBatched", "value": k.batched},
        {"type": "TypesEqual", "value": list(t.types)},
        {"type": "HighPrecisionAccumulate", "value": t.hpa},
        {"type": "F32XdlMathOp", "value": "Float"},
        {"type": "StochasticRounding", "value": False},
        {"type": "LeadingFree0SizesGreaterOrEqual", "value": 4 if k.mfma else 1},
        {"type": "LeadingFree1SizesGreaterOrEqual", "value": 4 if k.mfma else 1},
        {"type": "KernelLanguageCompatible", "value": "Source" if source else "Assembly"},
        {"type": "ArithmeticUnitCompatible", "value": "MFMA" if k.mfma else "VALU"},
    ]
    if not source:  # Debian writes this check for assembly kernels only
        pred.append({"type": "BufferLoadOffsetLimitCheck",
                     "value": {"ShiftPtrElemB": t.elem_shift, "ShiftPtrElemA": 0,
                               "DUorMT1": k.depth_u, "DUorMT0": mt[0]}})
    pred.append({"type": "BufferStoreOffsetLimitCheck", "value": mt[0]})
    index = spec.index_base + pos
    return {
        "name": solution_name(spec, k, arch),
        "problemType": {"operationIdentifier": spec.op, "aType": t.types[0], "bType": t.types[1],
                        "cType": t.types[2], "dType": t.types[3], "useBeta": True,
                        "highPrecisionAccumulate": t.hpa, "useInitialStridesAB": False,
                        "useInitialStridesCD": False, "stridedBatched": k.batched,
                        "f32XdlMathOp": "Float", "stochasticRounding": False},
        "hardwarePredicate": {"type": "TruePred"},
        "problemPredicate": {"type": "And", "value": pred},
        "taskPredicate": {"type": "TruePred"},
        "sizeMapping": {"workGroup": list(k.wg), "macroTile": mt, "threadTile": list(k.tt),
                        "depthU": k.depth_u, "staggerU": 32, "globalSplitU": k.gsu,
                        "staggerStrideShift": 2, "workGroupMapping": k.wgm, "packSummationDims": 0,
                        "packBatchDims": 0, "magicDivAlg": 2, "streamK": 0, "streamKAtomic": 0,
                        "persistentKernel": 0, "persistentKernelAlongBatch": False,
                        "sourceKernel": source, "globalAccumulation": 0,
                        "workspaceSizePerElemC": 0, "preloadKernargs": 0},
        "debugKernel": False,
        "libraryLogicIndex": pos if spec.fallback else 0,
        "index": index,
        "ideals": {},
        "linearModel": ({"intercept": 10.5 + pos, "max": 10613, "slope": 0.09 + 0.01 * pos}
                        if spec.linear_model else {}),
    }


def placeholder_dat(spec: PlaceholderSpec, arch: str) -> dict:
    """The placeholder file: solutions plus a Matching table from problem sizes to indices."""
    sols = [solution_dict(spec, i, k, arch) for i, k in enumerate(spec.kernels)]
    table = []
    for i, s in enumerate(sols):
        for size in (64 * (i + 1), 256 * (i + 1)):
            table.append({"key": [size, size, 256], "index": s["index"],
                          "speed": round(1.5 * size / (i + 1) + 0.25, 4)})
    table.sort(key=lambda e: (e["key"], e["index"]))
    return {"solutions": sols,
            "library": {"type": "Problem", "rows": [{
                "predicate": {"type": "TruePred"},
                "library": {"type": "Matching",
                            "properties": [{"type": "FreeSizeA", "index": 0},
                                           {"type": "FreeSizeB", "index": 0},
                                           {"type": "BoundSize", "index": 0}],
                            "table": table, "distance": "Euclidean"}}]}}


def _true(lib: dict) -> dict:
    return {"predicate": {"type": "TruePred"}, "library": lib}


def _problem_map(specs: Iterable[PlaceholderSpec], arch: str) -> dict:
    by_op: dict[str, list[dict]] = {}
    for p in specs:
        t = p.types
        by_op.setdefault(p.op, []).append({
            "predicate": {"type": "And", "value": [
                {"type": "TypesEqual", "value": list(t.types)},
                {"type": "HighPrecisionAccumulate", "value": t.hpa},
                {"type": "F32XdlMathOp", "value": "Float"},
                {"type": "StochasticRounding", "value": False}]},
            "library": {"type": "Placeholder", "value": p.name(arch)}})
    # Debian's lazy index nests each operation three TruePred levels deep before the type rows.
    return {"type": "ProblemMap", "property": {"type": "OperationIdentifier"},
            "map": {op: {"type": "Problem", "rows": [_true({"type": "Problem", "rows": [_true(
                {"type": "Problem", "rows": [_true({"type": "Problem", "rows": rows})]})]})]}
                    for op, rows in by_op.items()}}


def lazy_dat(arch: str) -> dict:
    """``TensileLibrary_lazy_<arch>.dat``: arch placeholders first, fallbacks for any device."""
    return {"solutions": [],
            "library": {"type": "Hardware", "rows": [
                {"predicate": {"type": "AMDGPU", "value": {"type": "Processor", "value": arch}},
                 "library": _problem_map(placeholders_for(arch), arch)},
                {"predicate": {"type": "TruePred"}, "library": _problem_map(FALLBACKS, arch)}]}}


def code_object_name(placeholder: str, source_kernel: bool, arch: str) -> str:
    """Tensile's getCodeObjectFileName (docs/formats.md §5.3)."""
    if not source_kernel:
        return f"{placeholder}.co"
    if "fallback" in placeholder:
        return f"{placeholder}_{arch.split(':')[0]}.hsaco"
    return f"{placeholder}.hsaco"


# ------------------------------------------------------------------------------------------
# Tools

def _run(args: Sequence[str], cwd: Path | None = None, env: dict | None = None) -> str:
    try:
        proc = subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=300,
                              env=None if env is None else {**os.environ, **env})
    except FileNotFoundError as exc:
        raise BuildError(f"{args[0]} is not installed; {APT_HINT}") from exc
    if proc.returncode != 0:
        raise BuildError(f"{' '.join(map(str, args))} failed ({proc.returncode}) in {cwd}: "
                         f"{proc.stderr.strip()[-1500:]}")
    return proc.stdout


def _zig() -> list[str]:
    """clang 22 from the ziglang wheel, for code-object v6 (clang-15 stops at v5)."""
    try:
        import ziglang
    except ImportError as exc:
        raise BuildError("abi_co=6 needs the ziglang wheel (clang 22): pip install ziglang") from exc
    exe = Path(ziglang.__file__).resolve().parent / "zig"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "ziglang"]


@functools.lru_cache(maxsize=None)
def _tool_versions(abi_co: int | None = None, deb: bool = False) -> str:
    out = [_run([CLANG, "--version"]).splitlines()[0], _run([LLD, "--version"]).strip()]
    if abi_co == 6:
        out.append(_run(_zig() + ["clang", "--version"]).splitlines()[0])
    if deb:
        out.append(_run(["dpkg-deb", "--version"]).splitlines()[0])
    return "\n".join(out)


# ------------------------------------------------------------------------------------------
# Cache

def cache_root() -> Path:
    return Path(os.environ.get("ROCMREVIVE_TEST_CACHE", "/var/tmp/rocmrevive-test-cache")) / "minirocblas"


def _inputs_hash(kind: str, params: dict, tools: str) -> str:
    h = hashlib.sha256()
    h.update(json.dumps({"kind": kind, "params": params}, sort_keys=True).encode() + b"\0")
    for p in [Path(__file__).resolve()] + sorted(SRC.rglob("*")):
        if p.is_file():
            h.update(p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(tools.encode())
    return h.hexdigest()[:20]


def _cached(kind: str, params: dict, tools: str, build: Callable[[Path], dict]) -> tuple[Path, dict]:
    """The cache folder of one artifact (built into a temp folder and renamed when missing) and
    its ``info.json``."""
    root = cache_root()
    final = root / f"{kind}-{_inputs_hash(kind, params, tools)}"
    info_path = final / "info.json"
    if not info_path.exists():
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{final.name}.", dir=root))
        try:
            t0 = time.monotonic()
            info = build(tmp)
            info["build_seconds"] = round(time.monotonic() - t0, 3)
            info["params"] = params
            (tmp / "info.json").write_text(json.dumps(info, indent=1, sort_keys=True))
            os.chmod(tmp, 0o755)  # mkdtemp made it private; the cache is shared
            try:
                os.rename(tmp, final)
            except OSError:  # another process finished first: use theirs
                if not info_path.exists():
                    raise
        finally:
            if tmp.exists():
                shutil.rmtree(tmp, ignore_errors=True)
    return final, json.loads(info_path.read_text())


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _copy_tree_files(src: Path, dst: Path, names: Iterable[str]) -> list[Path]:
    dst.mkdir(parents=True, exist_ok=True)
    out = []
    for n in names:
        shutil.copyfile(src / n, dst / n)
        os.chmod(dst / n, 0o644)
        out.append(dst / n)
    return out


# ------------------------------------------------------------------------------------------
# Building code objects

class _Compiler:
    """clang invocations for one build; ``run_all`` runs independent steps on every core."""

    def __init__(self, work: Path, abi_co: int):
        if abi_co not in (3, 4, 5, 6):
            raise BuildError(f"abi_co={abi_co}: code-object versions 3, 4, 5 (clang-15) and 6 "
                             "(ziglang's clang 22) are supported")
        self.work = work
        self.abi_co = abi_co

    @staticmethod
    def run_all(steps: Sequence[Callable[[], object]]) -> None:
        with cf.ThreadPoolExecutor(max_workers=max(2, os.cpu_count() or 2)) as pool:
            for fut in [pool.submit(s) for s in steps]:
                fut.result()

    def _tu(self, stem: str, kernels: Sequence[tuple[str, str, str]]) -> Path:
        src = self.work / f"{stem}.c"
        body = "".join(f"MINIROCBLAS_KERNEL({n}, {ti}, {tc})\n" for n, ti, tc in kernels)
        src.write_text(f'#include "tensile_kernel.h"\n{body}')
        return src

    def asm_object(self, stem: str, arch: str, kernel: tuple[str, str, str]) -> Path:
        """Tensile's way: each kernel is an assembly file of its own, assembled with
        ``-mcode-object-version=4`` (here the assembly comes from clang -S)."""
        src = self._tu(stem, [kernel])
        asm, obj = self.work / f"{stem}.s", self.work / f"{stem}.o"
        _run([CLANG, "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-nogpulib", "-O2",
              "-mcode-object-version=4", f"-I{SRC}", "-S", "-x", "c", str(src), "-o", str(asm)])
        _run([CLANG, "-x", "assembler", "-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}",
              "-mcode-object-version=4", "-c", str(asm), "-o", str(obj)])
        return obj

    @staticmethod
    def link(objs: Sequence[Path], out: Path) -> Path:
        """One ``.co`` from per-kernel objects: lld concatenates their notes (one per kernel)."""
        _run([LLD, "-shared", *map(str, objs), "-o", str(out)])
        return out

    def source_hsaco(self, out: Path, arch: str, kernels: Sequence[tuple[str, str, str]]) -> Path:
        """A source-kernel code object: one translation unit, one metadata note."""
        src = self._tu(out.name.replace(".", "_"), kernels)
        obj = self.work / f"{out.name}.o"
        flags = ["-target", "amdgcn-amd-amdhsa", f"-mcpu={arch}", "-nogpulib", "-O2",
                 f"-mcode-object-version={self.abi_co}", f"-I{SRC}", "-c", "-x", "c", str(src),
                 "-o", str(obj)]
        if self.abi_co == 6:
            _run(_zig() + ["clang", *flags])
            _run(_zig() + ["ld.lld", "-shared", str(obj), "-o", str(out)])
        else:
            _run([CLANG, *flags])
            _run([LLD, "-shared", str(obj), "-o", str(out)])
        return out


@dataclass
class _Plan:
    """What to compile: independent steps first, then the ``.co`` links that need their objects."""
    steps: list[Callable[[], object]] = field(default_factory=list)
    links: list[tuple[list[Path], Path]] = field(default_factory=list)


def _plan_arch(comp: _Compiler, lib: Path, arch: str, plan: _Plan) -> dict[str, dict]:
    """Write one arch's .dat files and plan its code objects; returns name -> {arch, role,
    kernels} for the manifest."""
    import msgpack

    files: dict[str, dict] = {}

    def add_dat(name: str, obj: dict, role: str) -> None:
        (lib / name).write_bytes(msgpack.packb(obj, use_bin_type=True))
        files[name] = {"arch": arch, "role": role, "kernels": []}

    def add_code_object(co: str, role: str, kernels: list[tuple[str, str, str]]) -> None:
        files[co] = {"arch": arch, "role": role, "kernels": [k[0] for k in kernels]}
        if role == "asm":
            objs = []
            for i, k in enumerate(kernels):
                stem = f"{co}-{i}".replace(".", "_")
                objs.append(comp.work / f"{stem}.o")
                plan.steps.append(lambda s=stem, k=k: comp.asm_object(s, arch, k))
            plan.links.append((objs, lib / co))
        else:
            plan.steps.append(lambda: comp.source_hsaco(lib / co, arch, kernels))

    add_dat(f"TensileLibrary_lazy_{arch}.dat", lazy_dat(arch), "lazy")
    for spec in placeholders_for(arch):
        dat = placeholder_dat(spec, arch)
        add_dat(f"{spec.name(arch)}.dat", dat, "placeholder")
        groups: dict[str, list[tuple[str, str, str]]] = {}
        for s in dat["solutions"]:
            co = code_object_name(spec.name(arch), s["sizeMapping"]["sourceKernel"], arch)
            k = (s["name"], spec.types.c_in, spec.types.c_acc)
            if k not in groups.setdefault(co, []):
                groups[co].append(k)
        for co, ks in groups.items():
            add_code_object(co, "asm" if co.endswith(".co") else "source", ks)
    for spec in FALLBACKS:
        dat = placeholder_dat(spec, arch)
        ks = list(dict.fromkeys((s["name"], spec.types.c_in, spec.types.c_acc) for s in dat["solutions"]))
        add_code_object(code_object_name(spec.name(arch), True, arch), "fallback", ks)
    add_code_object(f"Kernels.so-000-{arch}.hsaco", "helper", list(HELPER_KERNELS))
    return files


def _fallback_dats(lib: Path) -> dict[str, dict]:
    import msgpack

    files = {}
    for spec in FALLBACKS:
        name = f"{spec.name('any')}.dat"
        (lib / name).write_bytes(msgpack.packb(placeholder_dat(spec, "any"), use_bin_type=True))
        files[name] = {"arch": None, "role": "fallback-dat", "kernels": []}
    return files


def _library_info(lib: Path, files: dict[str, dict], arches: Sequence[str], version: str, abi_co: int) -> dict:
    for name, meta in files.items():
        p = lib / name
        meta.update(size=p.stat().st_size, sha256=_sha256(p))
    return {"arches": list(arches), "rocblas_version": version, "abi_co": abi_co,
            "files": dict(sorted(files.items())),
            "placeholders": {a: [p.name(a) for p in placeholders_for(a)] for a in arches},
            "fallbacks": [p.name("any") for p in FALLBACKS],
            "total_bytes": sum(m["size"] for m in files.values())}


def _check_arch(arch: str) -> None:
    if not re.fullmatch(r"gfx[0-9a-f]{3,4}", arch):
        raise BuildError(f"arch {arch!r} is not a plain gfx processor name (feature variants "
                         "such as gfx90a:xnack+ are not generated)")


def _arch_cached(arch: str, version: str, abi_co: int) -> tuple[Path, dict]:
    """One arch's files, cached on their own so that a library, a tree and a package that
    share an arch compile it once."""
    _check_arch(arch)

    def build(tmp: Path) -> dict:
        lib = tmp / "library"
        lib.mkdir()
        work = tmp / "work"
        work.mkdir()
        comp = _Compiler(work, abi_co)
        plan = _Plan()
        files = _plan_arch(comp, lib, arch, plan)
        comp.run_all(plan.steps)
        comp.run_all([lambda o=objs, out=out: comp.link(o, out) for objs, out in plan.links])
        shutil.rmtree(work)
        return {"files": files}

    params = {"arch": arch, "version": version, "abi_co": abi_co}
    return _cached("arch", params, _tool_versions(abi_co), build)


def _library_cached(arches: Sequence[str], version: str, abi_co: int) -> tuple[Path, dict]:
    arches = list(dict.fromkeys(arches))
    if not arches:
        raise BuildError("build_library needs at least one arch")
    for a in arches:
        _check_arch(a)
    params = {"arches": arches, "version": version, "abi_co": abi_co}

    def build(tmp: Path) -> dict:
        lib = tmp / "library"
        lib.mkdir()
        files = _fallback_dats(lib)
        for a in arches:
            cache, info = _arch_cached(a, version, abi_co)
            _copy_tree_files(cache / "library", lib, info["files"])
            files.update(info["files"])
        for p in lib.iterdir():
            os.chmod(p, 0o644)
            os.utime(p, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH))
        return _library_info(lib, files, arches, version, abi_co)

    return _cached("library", params, _tool_versions(abi_co), build)


# ------------------------------------------------------------------------------------------
# Public API

def build_library(out_dir: str | os.PathLike | None, arches: Sequence[str] = ("gfx906", "gfx908"),
                  version: str = "4.4.1", abi_co: int = 4) -> dict:
    """Write a Tensile library folder for ``arches`` (plus the arch-neutral ``*_fallback.dat``).

    ``abi_co`` is the code-object version of the ``.hsaco`` files (source, fallback and helper
    kernels): 4 or 5 with clang-15, 6 with ziglang's clang 22 (what Debian's clang-21 build
    ships). ``.co`` files are always COv4, as Tensile assembles them. ``version`` is the
    rocBLAS version the library is for (it names the Debian folder; the files do not store it).
    Files are copied into ``out_dir`` (created if needed; other files there are left alone).
    ``out_dir=None`` returns the cached folder itself (treat it as read-only).

    Returns ``{"library": path, "arches", "files": {name: {arch, role, kernels, size, sha256}},
    "placeholders": {arch: [names]}, "fallbacks": [names], "total_bytes", "build_seconds",
    "cache": path}``; ``role`` is one of lazy, placeholder, asm, source, fallback,
    fallback-dat, helper; ``kernels`` lists the kernel names compiled into a code object.
    """
    cache, info = _library_cached(arches, version, abi_co)
    src = cache / "library"
    if out_dir is None:
        dst = src
    else:
        dst = Path(out_dir)
        _copy_tree_files(src, dst, info["files"])
    return {**info, "library": str(dst), "cache": str(cache)}


def build_host_library(out_path: str | os.PathLike, arches: Sequence[str] = ("gfx906", "gfx908"),
                       version: str = "4.4.1", soname: str = "librocblas.so.4") -> dict:
    """A stand-in ``librocblas.so``: real x86-64 code plus a ``.hip_fatbin`` holding one
    uncompressed offload bundle with a device code object per arch (clang-15 -x hip, COv4)."""
    arches = list(dict.fromkeys(arches))
    params = {"arches": arches, "version": version, "soname": soname}

    def build(tmp: Path) -> dict:
        out = tmp / "librocblas.so"
        # Relative file names keep temp paths out of the output (reproducible builds).
        _run([CLANG, "-x", "hip", *[f"--offload-arch={a}" for a in arches], "-nogpulib",
              "-nogpuinc", "-fPIC", "-shared", "-fuse-ld=lld", "-O2", f"-Wl,-soname,{soname}",
              f'-DMINIROCBLAS_VERSION="{version}"', "rocblas_standin.hip", "-o", str(out)], cwd=SRC)
        return {"arches": arches, "soname": soname, "size": out.stat().st_size, "sha256": _sha256(out)}

    cache, info = _cached("hostlib", params, _tool_versions(), build)
    dst = Path(out_path)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cache / "librocblas.so", dst)
    os.chmod(dst, 0o644)
    return {**info, "path": str(dst)}


def amd_lib_suffix(rocm_version: str) -> str:
    """AMD appends the ROCm release to sonames: 6.4.3 -> ``60403`` (librocblas.so.4.4.60403)."""
    major, minor, patch = (int(x) for x in (rocm_version.split(".") + ["0", "0"])[:3])
    return f"{major * 10000 + minor * 100 + patch}"


def build_tree(root_dir: str | os.PathLike, rocm_version: str = "6.4.3",
               arches_present: Sequence[str] = ("gfx908",),
               host_arches: Sequence[str] = ("gfx906", "gfx908"), rocblas_version: str = "4.4.1",
               build_number: int | None = None, abi_co: int = 4, replace: bool = False,
               opt_rocm_link: bool = False) -> dict:
    """Write an AMD-style ROCm install under ``root_dir/opt/rocm-<version>/`` and nothing else:

    * ``lib/rocblas/library/``: the Tensile library for ``arches_present`` only, plus every
      arch-neutral ``*_fallback.dat`` (AMD's 6.4 packages ship those with no gfx906 files);
    * ``.info/version``: ``<rocm_version>-<build>`` (AMD's build number when known);
    * ``lib/librocblas.so.<so>.<AMD suffix>`` (e.g. ``librocblas.so.4.4.60403``, as AMD names it)
      with ``librocblas.so.4`` and ``librocblas.so`` symlinks; its ``.hip_fatbin`` carries
      ``host_arches``.

    ``opt_rocm_link`` also makes ``opt/rocm -> rocm-<version>`` (what AMD's packages point
    ``/opt/rocm`` at, through update-alternatives); off by default so that nothing but
    ``opt/rocm-<version>`` is touched.

    Refuses an existing ``opt/rocm-<version>`` unless ``replace`` (which removes only that folder).
    Returns paths: ``{"rocm_root", "library", "host_lib", "version_file", "written": [...]}``.
    """
    root = Path(root_dir)
    rocm = root / "opt" / f"rocm-{rocm_version}"
    link = root / "opt" / "rocm"
    if opt_rocm_link and (link.exists() or link.is_symlink()) and not (link.is_symlink() and replace):
        raise FileExistsError(f"{link} exists; pass replace=True to re-point a symlink")
    if rocm.exists() or rocm.is_symlink():
        if not replace:
            raise FileExistsError(f"{rocm} exists; pass replace=True to rebuild it")
        if rocm.is_symlink():
            rocm.unlink()
        else:
            shutil.rmtree(rocm)
    lib_info = build_library(None, arches_present, rocblas_version, abi_co)
    libdir = rocm / "lib" / "rocblas" / "library"
    written = _copy_tree_files(Path(lib_info["library"]), libdir, lib_info["files"])

    info_dir = rocm / ".info"
    info_dir.mkdir(parents=True)
    build = build_number if build_number is not None else AMD_BUILD_NUMBERS.get(rocm_version, 1)
    (info_dir / "version").write_text(f"{rocm_version}-{build}\n")
    written.append(info_dir / "version")

    so_major_minor = ".".join(rocblas_version.split(".")[:2])
    real = f"librocblas.so.{so_major_minor}.{amd_lib_suffix(rocm_version)}"
    so_major = rocblas_version.split(".")[0]
    host = build_host_library(rocm / "lib" / real, host_arches, rocblas_version, f"librocblas.so.{so_major}")
    os.symlink(real, rocm / "lib" / f"librocblas.so.{so_major}")
    os.symlink(f"librocblas.so.{so_major}", rocm / "lib" / "librocblas.so")
    written += [rocm / "lib" / real, rocm / "lib" / f"librocblas.so.{so_major}", rocm / "lib" / "librocblas.so"]
    if opt_rocm_link:
        if link.is_symlink():
            link.unlink()
        os.symlink(rocm.name, link)
        written.append(link)
    return {"rocm_root": str(rocm), "library": str(libdir), "host_lib": host["path"],
            "host_arches": host["arches"], "version_file": str(info_dir / "version"),
            "rocm_version": rocm_version, "arches_present": list(arches_present),
            "library_files": lib_info["files"], "placeholders": lib_info["placeholders"],
            "written": [str(p.relative_to(root)) for p in written]}


def _installed_size_kib(stage: Path) -> int:
    # dpkg-gencontrol's rule: each file rounded up to KiB, plus 1 per directory and link.
    total = 0
    for p in stage.rglob("*"):
        if p.is_symlink() or p.is_dir():
            total += 1
        elif p.is_file():
            total += (p.stat().st_size + 1023) // 1024
    return total


def build_source_deb(out_path: str | os.PathLike, arch: str = "gfx906", version: str = "4.4.1",
                     package: str = "librocblas4", deb_version: str = "6.4.4-4",
                     other_arches: Sequence[str] = (), abi_co: int = 4, compression: str = "xz") -> dict:
    """A Debian package laid out like Debian's librocblas4: the Tensile files of ``arch`` (and
    ``other_arches``) with every arch-neutral ``*_fallback.dat`` under
    ``./usr/lib/x86_64-linux-gnu/rocblas/<version>/library/``, a ``librocblas.so.<x.y>`` (+ the
    ``.so.<x>`` link) whose fat binary holds the same arches, docs, ``md5sums``, and the
    ``X-Rocm-Gpu-Architecture`` control field. The fallback ``.dat`` files are byte-identical
    to those ``build_tree`` writes, so the placeholder names agree as they do between Debian's
    package and AMD's tree. Reproducible: the same inputs give the same sha256.

    Returns ``{"path", "sha256", "size", "members": ["./usr/...", ...] (files and links, as
    ``dpkg-deb -c`` names them), "library_members": [...], "control": {...}}``.
    """
    arches = list(dict.fromkeys([arch, *other_arches]))
    params = {"arches": arches, "version": version, "package": package, "deb_version": deb_version,
              "abi_co": abi_co, "compression": compression}

    def build(tmp: Path) -> dict:
        stage = tmp / "stage"
        libroot = stage / DEBIAN_LIBDIR
        libdir = libroot / "rocblas" / version / "library"
        lib_info = build_library(libdir, arches, version, abi_co)
        so_major_minor = ".".join(version.split(".")[:2])
        so_major = version.split(".")[0]
        build_host_library(libroot / f"librocblas.so.{so_major_minor}", arches, version,
                           f"librocblas.so.{so_major}")
        os.symlink(f"librocblas.so.{so_major_minor}", libroot / f"librocblas.so.{so_major}")
        doc = stage / "usr/share/doc" / package
        doc.mkdir(parents=True)
        (doc / "copyright").write_text(
            "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n"
            "Comment: generated by rocmrevive's demo/minirocblas.py; a miniature of the rocBLAS\n"
            " Tensile library for tests and the demo, compiled from demo/minirocblas_src.\n\n"
            "Files: *\nCopyright: rocmrevive authors\nLicense: MIT\n")
        with open(doc / "changelog.Debian.gz", "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
                gz.write(f"rocblas ({deb_version}) unstable; urgency=medium\n\n"
                         "  * Miniature build for rocmrevive's demo and tests.\n\n"
                         " -- rocmrevive demo <demo@rocmrevive.invalid>  "
                         "Thu, 01 Jan 2026 00:00:00 +0000\n".encode())
        control = {
            "Package": package, "Source": "rocblas", "Version": deb_version, "Architecture": "amd64",
            "Maintainer": "rocmrevive demo <demo@rocmrevive.invalid>",
            "Installed-Size": str(_installed_size_kib(stage)),
            "Depends": "libamdhip64-6 (>= 6.1.5), libc6 (>= 2.38)",
            "Section": "libs", "Priority": "optional", "Homepage": "https://github.com/ROCm/rocBLAS",
            "Description": "ROCm library for basic linear algebra - library (miniature)\n"
                           " A small but structurally real rocBLAS Tensile library, generated by\n"
                           " rocmrevive for its demo and tests.",
            "X-Rocm-Gpu-Architecture": " ".join(arches),
        }
        dbg = stage / "DEBIAN"
        dbg.mkdir()
        (dbg / "control").write_text("".join(f"{k}: {v}\n" for k, v in control.items()))
        (dbg / "shlibs").write_text(f"librocblas {so_major} {package} (>= {deb_version.split('-')[0]})\n")
        (dbg / "triggers").write_text("# Triggers added by dh_makeshlibs\nactivate-noawait ldconfig\n")
        files = sorted(p for p in stage.rglob("*") if p.is_file() and not p.is_symlink()
                       and dbg not in p.parents)
        (dbg / "md5sums").write_text("".join(
            f"{hashlib.md5(p.read_bytes()).hexdigest()}  {p.relative_to(stage)}\n" for p in files))
        for p in [stage, *stage.rglob("*")]:
            if p.is_symlink():
                continue
            os.chmod(p, 0o755 if p.is_dir() else 0o644)
        for p in [*stage.rglob("*"), stage]:
            os.utime(p, (SOURCE_DATE_EPOCH, SOURCE_DATE_EPOCH), follow_symlinks=False)
        deb = tmp / "package.deb"
        _run(["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(stage), str(deb)],
             env={"SOURCE_DATE_EPOCH": str(SOURCE_DATE_EPOCH)})
        shutil.rmtree(stage)
        members = _deb_members(deb)
        lib_prefix = f"./{DEBIAN_LIBDIR}/rocblas/{version}/library/"
        return {"sha256": _sha256(deb), "size": deb.stat().st_size, "members": members,
                "library_members": [m for m in members if m.startswith(lib_prefix)],
                "control": control, "arches": arches, "library_files": lib_info["files"]}

    cache, info = _cached("deb", params, _tool_versions(abi_co, deb=True), build)
    dst = Path(out_path)
    dst.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(cache / "package.deb", dst)
    return {**info, "path": str(dst)}


def _deb_members(deb: Path) -> list[str]:
    """Files and links of the data archive, named as ``dpkg-deb -c`` shows them."""
    proc = subprocess.run(["dpkg-deb", "--fsys-tarfile", str(deb)], capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(proc.stdout)) as tf:
        return sorted(m.name for m in tf.getmembers() if not m.isdir())


# ------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    p = sub.add_parser("library", help="a Tensile library folder")
    p.add_argument("out")
    p.add_argument("--arch", action="append", dest="arches")
    p.add_argument("--version", default="4.4.1")
    p.add_argument("--abi-co", type=int, default=4)
    p = sub.add_parser("tree", help="opt/rocm-<v>/ under a machine root")
    p.add_argument("root")
    p.add_argument("--rocm-version", default="6.4.3")
    p.add_argument("--arch", action="append", dest="arches", help="arches present (default gfx908)")
    p.add_argument("--host-arch", action="append", dest="host_arches")
    p.add_argument("--replace", action="store_true")
    p.add_argument("--opt-rocm-link", action="store_true", help="also make opt/rocm -> rocm-<v>")
    p = sub.add_parser("deb", help="a librocblas .deb with one arch's files")
    p.add_argument("out")
    p.add_argument("--arch", default="gfx906")
    p.add_argument("--deb-version", default="6.4.4-4")
    p.add_argument("--other-arch", action="append", dest="other_arches", default=[])
    p = sub.add_parser("hostlib", help="a stand-in librocblas.so")
    p.add_argument("out")
    p.add_argument("--arch", action="append", dest="arches")
    a = ap.parse_args(argv)
    t0 = time.monotonic()
    if a.what == "library":
        res = build_library(a.out, a.arches or ("gfx906", "gfx908"), a.version, a.abi_co)
    elif a.what == "tree":
        res = build_tree(a.root, a.rocm_version, a.arches or ("gfx908",),
                         a.host_arches or ("gfx906", "gfx908"), replace=a.replace,
                         opt_rocm_link=a.opt_rocm_link)
    elif a.what == "deb":
        res = build_source_deb(a.out, a.arch, deb_version=a.deb_version, other_arches=a.other_arches)
    else:
        res = build_host_library(a.out, a.arches or ("gfx906", "gfx908"))
    res["seconds"] = round(time.monotonic() - t0, 3)
    print(json.dumps(res, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
