"""Every copy of rocBLAS on a machine, its version, and which GPU targets its Tensile library
folder serves (DESIGN "Every copy of rocBLAS on the machine").

Layouts found:
  amd           /opt/rocm-X/lib/rocblas/library (AMD's packages; also a real /opt/rocm folder)
  debian        /usr/lib/<triplet>/rocblas/<version>/library (Debian/Ubuntu librocblasN)
  fedora        /usr/lib64/rocblas/library, /usr/lib64/rocm/gfx*/lib/rocblas/library
  python-torch  <site-packages>/torch/lib/rocblas/library (PyTorch ROCm wheels)
  python-rocm-sdk <site-packages>/_rocm_sdk_libraries_*/{lib,bin}/rocblas/library (TheRock wheels)
  bundle        Ollama: /usr/lib/ollama, /usr/local/lib/ollama, /usr/share/ollama/lib (…/rocblas/library)
  user          a folder named with --tree

Version, most exact source first: ``include/rocblas/internal/rocblas-version.h`` (major, minor,
patch) → ``lib/cmake/rocblas/rocblas-config-version.cmake`` → the dpkg database (AMD's
``rocblas`` package ``4.4.1.60403-128~22.04``) → the Debian folder name (``rocblas/4.4.1``) →
the library's file name ``librocblas.so.4.4[.60403]`` → its ELF SONAME (``librocblas.so.4``).
The ROCm version comes from the install's ``.info/version``, ``torch.version.hip`` or the dpkg
version of Debian's package.

Targets: the arch of each ``TensileLibrary_lazy_<arch>.dat`` (the per-arch index rocBLAS loads),
or, in a library built without lazy loading (one ``TensileLibrary.dat``), of each
``TensileLibrary_<arch>.co`` beside it;
``file_targets`` lists every ``gfx…`` token in file names as well. With ``deep=True`` each code
object (``.co``/``.hsaco``) is read with ``rocmrevive.codeobj.inspect.inspect_file`` and its full
target ids are reported.

    copies = find_copies(Root("/"), envs=envs, installs=installs)
"""
from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from typing import Sequence

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.hardware.sysfs import list_dir, read_text
from rocmrevive.hostlib.elfdyn import soname_of
from rocmrevive.rootfs import Root
from rocmrevive.trees.installs import RocmInstall
from rocmrevive.trees.layout import kpack_files
from rocmrevive.trees.pythonenv import PythonEnv

_LAZY = re.compile(r"^TensileLibrary_lazy_(gfx[0-9a-z]+)(?:-xnack[+-])?\.dat$")
# A library built without lazy loading (Debian's rocBLAS 2.47): one master library,
# TensileLibrary.dat (or TensileLibrary_<arch>.dat), and per-arch TensileLibrary_<arch>.co.
_EAGER = re.compile(r"^TensileLibrary_(gfx[0-9a-z]+)\.(?:dat|co|hsaco)$")
_TOKEN = re.compile(r"gfx[0-9]{2,4}[0-9a-z]?(?![0-9a-z])")
_SONAME = re.compile(r"^librocblas\.so\.(\d+(?:\.\d+)*)$")
_HDR = re.compile(r"#define\s+ROCBLAS_VERSION_(MAJOR|MINOR|PATCH)\s+(\d+)")
_CMAKE = re.compile(r'set\(\s*PACKAGE_VERSION\s+"?([0-9.]+)"?\s*\)')
_AMD_DEB = re.compile(r"^(\d+\.\d+\.\d+)\.(\d{5,6})-")
CODE_SUFFIXES = (".co", ".hsaco")
# rocBLAS's minor release in each ROCm release (AMD's ROCm release notes, component tables):
# a wheel or bundle that ships only ``librocblas.so.N`` (SONAME major) is placed by its ROCm.
ROCBLAS_OF_ROCM = {"6.0": "4.0", "6.1": "4.1", "6.2": "4.2", "6.3": "4.3", "6.4": "4.4",
                   "7.0": "5.0", "7.1": "5.1", "7.2": "5.2"}
_OLLAMA_RUNNER = re.compile(r"^rocm_v(\d+)_(\d+)$")      # Ollama >= 0.13: lib/ollama/rocm_v7_2
BUNDLE_BASES = ("/usr/lib/ollama", "/usr/local/lib/ollama", "/usr/share/ollama/lib", "/opt/ollama")


@dataclass
class DeepScan:
    targets: list[str]
    files: int
    not_code: list[str]
    problems: list[str]

    def to_json(self) -> dict:
        return {"targets": self.targets, "files": self.files, "not_code_objects": self.not_code[:20],
                "problems": self.problems[:20]}


@dataclass
class RocblasCopy:
    path: str                        # machine path of the library folder
    layout: str
    owner: str | None = None         # the install or environment it belongs to
    rocblas_version: str | None = None
    version_source: str | None = None
    rocm_version: str | None = None
    rocm_version_source: str | None = None
    files: int = 0
    targets: list[str] = field(default_factory=list)
    file_targets: list[str] = field(default_factory=list)
    arch_folders: bool = False       # per-arch subfolders (TheRock 7.13+ layout)
    kpack: bool = False              # device code moved into .kpack archives
    kpack_archives: list[str] = field(default_factory=list)   # <prefix>/.kpack/*.kpack (machine paths)
    kpack_arches: list[str] = field(default_factory=list)     # the gfx arches their TOCs list
    deep: DeepScan | None = None
    missing_for_gpus: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def covers(self, target: TargetId | None, processor: str | None) -> bool:
        """Whether this copy serves a GPU: an index for its processor, and (after a deep scan) a
        code object that loads on its exact target."""
        if not processor:
            return False
        indexed = any(TargetId.parse(t).covers_processor(processor) for t in self.targets)
        if not indexed:
            return False
        if self.deep is None or target is None:
            return True
        for t in self.deep.targets:
            try:
                if TargetId.parse(t).can_load_on(target):
                    return True
            except ValueError:
                continue
        return False

    def to_json(self) -> dict:
        return {"path": self.path, "layout": self.layout, "owner": self.owner,
                "rocblas_version": self.rocblas_version, "version_source": self.version_source,
                "rocm_version": self.rocm_version, "rocm_version_source": self.rocm_version_source,
                "files": self.files, "targets": self.targets, "file_targets": self.file_targets,
                "arch_folders": self.arch_folders, "kpack": self.kpack,
                "kpack_archives": self.kpack_archives, "kpack_arches": self.kpack_arches,
                "code_objects": self.deep.to_json() if self.deep else None,
                "missing_for_gpus": self.missing_for_gpus, "problems": self.problems}


# ---- what a library folder holds ---------------------------------------------------------

def _arch_key(a: str) -> tuple:
    """gfx906 < gfx908 < gfx90a < gfx942 < gfx1010: major, then minor and stepping (hex digits)."""
    m = re.match(r"gfx(\d{1,2})([0-9a-f])([0-9a-f])$", a.split(":")[0])
    return (int(m.group(1)), int(m.group(2), 16), int(m.group(3), 16), a) if m else (99, 0, 0, a)


def scan_library(real: str, copy: RocblasCopy) -> list[str]:
    """Fill files/targets/file_targets/arch_folders/kpack from names; return the real paths of
    code-object files (for a deep scan)."""
    lazy, eager, tokens, code = set(), set(), set(), []
    dirs = [real]
    try:
        top = list(os.scandir(real))
    except OSError as exc:
        copy.problems.append(f"cannot list {copy.path}: {exc.strerror or exc}")
        return []
    sub = [e.path for e in top if e.is_dir() and _TOKEN.fullmatch(e.name)]
    if sub:
        copy.arch_folders = True
        dirs += sub
    for d in dirs:
        try:
            ents = top if d == real else list(os.scandir(d))
        except OSError as exc:
            copy.problems.append(f"cannot list {d}: {exc.strerror or exc}")
            continue
        for e in ents:
            if e.is_dir():
                continue
            copy.files += 1
            name = e.name
            m = _LAZY.match(name)
            if m:
                lazy.add(m.group(1))
            m = _EAGER.match(name)
            if m and d == real:
                eager.add(m.group(1))
            tokens.update(_TOKEN.findall(name))
            if name.endswith(".kpack"):
                copy.kpack = True
            if name.endswith(CODE_SUFFIXES):
                code.append(e.path)
    names = {e.name for e in top}
    if "TensileLibrary.dat" in names or any(f"TensileLibrary_{a}.dat" in names for a in eager):
        lazy |= eager  # rocBLAS falls back to the master library when no lazy index is there
    copy.targets = sorted(lazy, key=_arch_key)
    copy.file_targets = sorted(tokens, key=_arch_key)
    return code


def deep_scan(paths: list[str], progress=None) -> DeepScan:
    from rocmrevive.codeobj.inspect import inspect_file  # noqa: PLC0415 — the code-object core, loaded only for a deep scan

    targets: set[str] = set()
    not_code: list[str] = []
    problems: list[str] = []
    for p in sorted(paths):
        rep = inspect_file(p)
        if rep.entries:
            targets.update(str(e.target) for e in rep.entries)
        elif rep.kind not in ("amdgpu-elf", "offload-bundle", "ccob"):
            not_code.append(os.path.basename(p))
        problems += [f"{os.path.basename(p)}: {x}" for x in rep.problems]
        if progress:
            progress(1)
    return DeepScan(sorted(targets, key=_arch_key), len(paths),
                    not_code, problems)


# ---- versions ----------------------------------------------------------------------------

def _soname_version(root: Root, libdir: str) -> tuple[str | None, str | None]:
    """The most precise ``librocblas.so.X[.Y[.Z]]`` name in ``libdir``."""
    best = None
    try:
        names = os.listdir(root.path(libdir))
    except OSError:
        return None, None
    for n in names:
        m = _SONAME.match(n)
        if m and (best is None or len(m.group(1).split(".")) > len(best[0].split("."))):
            best = (m.group(1), n)
    if best:
        return _without_rocm_number(best[0]), best[1]
    if "librocblas.so" in names:
        return _elf_soname(root, f"{libdir}/librocblas.so")
    return None, None


def _elf_soname(root: Root, mpath: str) -> tuple[str | None, str | None]:
    """DT_SONAME of an unversioned ``librocblas.so`` (PyTorch wheels ship it under that name)."""
    name = soname_of(root.path(mpath))
    m = _SONAME.match(name) if name else None
    return (_without_rocm_number(m.group(1)), f"SONAME {name}") if m else (None, None)


def _without_rocm_number(v: str) -> str:
    """AMD names the file librocblas.so.<major>.<minor>.<ROCm number> (4.4.60403): the third part is
    ROCm's release, not rocBLAS's patch, so a copy's version reads major.minor, as every other
    source of it does (one format: 4.4 for AMD's tree and for a PyTorch wheel alike)."""
    parts = v.split(".")
    return ".".join(parts[:2]) if len(parts) == 3 and len(parts[2]) >= 5 else v


def version_in_header(text: str) -> str | None:
    """The rocBLAS version ``rocblas-version.h`` states (ROCBLAS_VERSION_MAJOR/MINOR/PATCH)."""
    parts = dict(_HDR.findall(text))
    if {"MAJOR", "MINOR", "PATCH"} <= parts.keys():
        return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"
    return None


def version_in_cmake(text: str) -> str | None:
    """The PACKAGE_VERSION ``rocblas-config-version.cmake`` sets."""
    m = _CMAKE.search(text)
    return m.group(1) if m else None


def _header_version(root: Root, prefix: str) -> tuple[str | None, str | None]:
    for rel, parse in (("include/rocblas/internal/rocblas-version.h", version_in_header),
                       ("lib/cmake/rocblas/rocblas-config-version.cmake", version_in_cmake)):
        text, _ = read_text(root.path(f"{prefix}/{rel}"))
        version = parse(text) if text else None
        if version:
            return version, rel
    return None, None


def read_dpkg_status(root: Root) -> dict[str, str]:
    """Installed rocBLAS packages from the dpkg database: name -> version."""
    text, _ = read_text(root.path("/var/lib/dpkg/status"), limit=256 << 20)
    out = {}
    for stanza in (text or "").split("\n\n"):
        if "rocblas" not in stanza:
            continue
        fields = {}
        for line in stanza.splitlines():
            if line and not line[0].isspace():
                k, _, v = line.partition(":")
                fields[k] = v.strip()
        name = fields.get("Package", "")
        if re.match(r"^(rocblas[0-9.]*|librocblas\d+)$", name) and fields.get("Status", "").endswith(" installed"):
            out[name] = fields.get("Version", "")
    return out


def _rocm_number(version: str | None) -> str | None:
    if not version:
        return None
    parts = [int(x) for x in version.split(".")] + [0, 0]
    return str(parts[0] * 10000 + parts[1] * 100 + parts[2])


def _more_precise(a: str | None, b: str | None) -> bool:
    """b refines a when it has more components and agrees on the ones a has."""
    if b is None:
        return False
    if a is None:
        return True
    pa, pb = a.split("."), b.split(".")
    return len(pb) > len(pa) and pb[: len(pa)] == pa


# ---- finding the copies ------------------------------------------------------------------

def _glob(root: Root, pattern: str) -> list[str]:
    base = "" if root.is_host else glob.escape(str(root.base))
    return sorted(root.machine_path(p) for p in glob.glob(base + pattern))


def _amd_copy(root: Root, inst: RocmInstall, dpkg: dict[str, str]) -> RocblasCopy | None:
    lib = f"{inst.path}/lib/rocblas/library"
    if not root.path(lib).is_dir():
        return None
    src = f"{inst.path}/.info/version" if inst.version_source == ".info/version" else inst.version_source
    c = RocblasCopy(lib, "amd", inst.path, rocm_version=inst.version, rocm_version_source=src)
    c.rocblas_version, c.version_source = _header_version(root, inst.path)
    if c.rocblas_version is None:
        num = _rocm_number(inst.version)
        for name, ver in dpkg.items():
            m = _AMD_DEB.match(ver)
            if name.startswith("rocblas") and m and m.group(2) == num:
                c.rocblas_version, c.version_source = m.group(1), f"dpkg: {name} {ver}"
                break
    if c.rocblas_version is None:
        v, src = _soname_version(root, f"{inst.path}/lib")
        if v:
            c.rocblas_version, c.version_source = v, src
    return c


def _debian_copy(root: Root, lib: str, dpkg: dict[str, str]) -> RocblasCopy:
    verdir = os.path.basename(os.path.dirname(lib))
    libdir = os.path.dirname(os.path.dirname(os.path.dirname(lib)))   # usr/lib/<triplet>
    c = RocblasCopy(lib, "debian", libdir)
    if re.fullmatch(r"\d+(\.\d+)*", verdir):
        c.rocblas_version, c.version_source = verdir, "folder name"
    v, src = _soname_version(root, libdir)
    if _more_precise(c.rocblas_version, v):
        c.rocblas_version, c.version_source = v, src
    # the package is named by the SONAME's major (trixie's librocblas0 holds rocBLAS 2.47.0 as
    # librocblas.so.0.1), else by the version's
    majors = [m for m in ((v or "").split(".")[0], (c.rocblas_version or "").split(".")[0]) if m]
    pkg = next((f"librocblas{m}" for m in majors if f"librocblas{m}" in dpkg), "")
    if pkg in dpkg:
        c.rocm_version = re.split(r"[-~+]", dpkg[pkg])[0]
        c.rocm_version_source = f"dpkg: {pkg} {dpkg[pkg]}"
        c.owner = f"{pkg} {dpkg[pkg]}"
    return c


def rocblas_of_rocm(rocm: str | None, soname_major: str | None) -> str | None:
    """rocBLAS ``X.Y`` of ROCm ``rocm`` (``6.4``, ``6.4.43484``), when its major agrees with the
    library's SONAME major; else None."""
    if not rocm or not soname_major:
        return None
    v = ROCBLAS_OF_ROCM.get(".".join(rocm.split(".")[:2]))
    return v if v and v.split(".")[0] == soname_major.split(".")[0] else None


def _place_by_rocm(c: RocblasCopy, rocm: str | None, why: str) -> None:
    """Make a SONAME-major-only version (``4``) exact to the minor from the ROCm release."""
    if c.rocblas_version and "." not in c.rocblas_version:
        v = rocblas_of_rocm(rocm, c.rocblas_version)
        if v:
            c.rocblas_version, c.version_source = v, f"{c.version_source}; {why} ships rocBLAS {v}"


def ollama_supported(lib: str) -> list[str]:
    """The gfx targets Ollama believes a ROCm runner folder supports: it globs
    ``<runner>/rocblas/library/TensileLibrary_lazy_gfx*.dat`` and keeps what is between
    ``TensileLibrary_lazy_`` and ``.dat`` (discover/amd.go rocblasGFXTargets; GetSupportedGFX in
    0.9.x, whose miss prints "amdgpu is not supported"). ``lib``: the real library folder."""
    names = glob.glob(os.path.join(glob.escape(lib), "TensileLibrary_lazy_gfx*.dat"))
    return sorted(os.path.basename(n)[len("TensileLibrary_lazy_"):-len(".dat")] for n in names)


def _plain_copy(root: Root, lib: str, layout: str, owner: str | None) -> RocblasCopy:
    c = RocblasCopy(lib, layout, owner)
    libdir = os.path.dirname(os.path.dirname(lib))     # …/lib for …/lib/rocblas/library
    c.rocblas_version, c.version_source = _soname_version(root, libdir)
    return c


def find_copies(root: Root, *, installs: Sequence[RocmInstall] = (), envs: Sequence[PythonEnv] = (),
                extra: Sequence[str] = (), deep: bool = False, progress=None) -> list[RocblasCopy]:
    """Every copy of rocBLAS under ``root`` in the layouts above (``extra``: folders the user
    named), each real folder once, with its targets scanned (code objects read with ``deep``)."""
    dpkg = read_dpkg_status(root)
    found = [c for c in (_amd_copy(root, inst, dpkg) for inst in installs) if c]
    found += [_debian_copy(root, lib, dpkg) for lib in _glob(root, "/usr/lib/*/rocblas/*/library")]
    found += [_plain_copy(root, lib, "fedora", None) for lib in
              _glob(root, "/usr/lib64/rocblas/library") + _glob(root, "/usr/lib64/rocm/gfx*/lib/rocblas/library")]
    for env in envs:
        found += _python_copies(root, env)
    found += _bundle_copies(root)
    found += [_user_copy(root, lib) for lib in extra]
    return _scan_each_once(root, found, deep, progress)


def _python_copies(root: Root, env: PythonEnv) -> list[RocblasCopy]:
    """PyTorch's wheel copy (placed by ``torch.version.hip``) and TheRock's rocm-sdk wheels."""
    found = []
    lib = f"{env.site_packages}/torch/lib/rocblas/library"
    if root.path(lib).is_dir():
        c = _plain_copy(root, lib, "python-torch", env.label)
        if c.rocblas_version is None:
            c.rocblas_version, c.version_source = _soname_version(root, f"{env.site_packages}/torch/lib")
        if env.torch_hip:
            c.rocm_version = ".".join(env.torch_hip.split(".")[:2])
            c.rocm_version_source = f"torch.version.hip {env.torch_hip}"
            _place_by_rocm(c, c.rocm_version, f"ROCm {c.rocm_version} (torch.version.hip {env.torch_hip})")
        found.append(c)
    for lib in _glob(root, f"{glob.escape(env.site_packages)}/_rocm_sdk_libraries_*/*/rocblas/library"):
        c = _plain_copy(root, lib, "python-rocm-sdk", env.label)
        c.rocm_version, c.rocm_version_source = _rocm_sdk_version(root, env.site_packages)
        found.append(c)
    return found


def _rocm_sdk_version(root: Root, site: str) -> tuple[str | None, str | None]:
    """The version of TheRock's ``rocm-sdk-libraries`` wheel in ``site`` (``7.15.0a20260630`` for a
    nightly), from its ``.dist-info`` folder's name: nothing of the user's venv is opened."""

    for name in list_dir(root.path(site)):
        m = re.match(r"^rocm_sdk_libraries-([0-9][0-9A-Za-z.+]*)\.dist-info$", name)
        if m:
            return m.group(1), f"{name} (folder name)"
    return None, None


def _bundle_copies(root: Root) -> list[RocblasCopy]:
    """Copies bundled with Ollama, placed by the ROCm its runner folder is named after."""
    found = []
    for base in BUNDLE_BASES:
        for pat in ("/rocblas/library", "/*/rocblas/library", "/*/*/rocblas/library"):
            for lib in _glob(root, glob.escape(base) + pat):
                c = _plain_copy(root, lib, "bundle", base)
                runner = os.path.basename(os.path.dirname(os.path.dirname(lib)))
                m = _OLLAMA_RUNNER.match(runner)
                if m:
                    c.rocm_version = f"{m.group(1)}.{m.group(2)}"
                    c.rocm_version_source = f"Ollama runner folder {runner}"
                    _place_by_rocm(c, c.rocm_version, f"ROCm {c.rocm_version} (Ollama's {runner})")
                found.append(c)
    return found


def _user_copy(root: Root, lib: str) -> RocblasCopy:
    if root.path(lib).is_dir():
        return _plain_copy(root, lib, "user", None)
    c = RocblasCopy(lib, "user")
    c.problems.append(f"{lib} is not a folder")
    return c


def _scan_each_once(root: Root, found: list[RocblasCopy], deep: bool, progress) -> list[RocblasCopy]:
    """Each real folder once (the first layout that found it names it), its library scanned."""
    out, seen = [], set()
    for c in found:
        try:
            real = root.resolve(c.path)
        except (ValueError, OSError):
            real = root.path(c.path)
        if str(real) in seen:
            continue
        seen.add(str(real))
        code = scan_library(str(real), c) if real.is_dir() else []
        therock_kpacks(root, c)
        if c.version_source is None and not c.problems:
            c.problems.append("rocBLAS version unknown: no version header, package record or librocblas.so.X.Y")
        if deep:
            c.deep = deep_scan(code, progress)
        out.append(c)
    return out


def therock_kpacks(root: Root, copy: RocblasCopy) -> None:
    """TheRock's ``.kpack`` folder at the install prefix of a ``<prefix>/lib/rocblas/library`` copy:
    the archives and the arches their TOCs list (headers and TOC only, ``codeobj.kpack``)."""
    m = re.match(r"^(.*)/lib(?:64)?/rocblas/library$", copy.path)
    if not m:
        return
    folder = f"{m.group(1)}/.kpack"
    names = [p.name for p in kpack_files(root.path(m.group(1)), every=True)]
    if not names:
        return

    from rocmrevive.codeobj.kpack import read_kpack  # noqa: PLC0415 — the archive reader, loaded only where a tree has .kpack archives

    copy.kpack = True
    arches: set[str] = set()
    for n in names:
        copy.kpack_archives.append(f"{folder}/{n}")
        rep = read_kpack(root.path(f"{folder}/{n}"))
        arches.update(rep.arches)
        copy.problems += [f"{n}: {p}" for p in rep.problems[:3]]
    copy.kpack_arches = sorted(arches, key=_arch_key)


def mark_coverage(copies: list[RocblasCopy], gpus) -> None:
    """Fill ``missing_for_gpus`` with the index of every GPU a copy does not serve."""
    for c in copies:
        c.missing_for_gpus = [g.index for g in gpus if g.processor and not c.covers(g.target, g.processor)]
