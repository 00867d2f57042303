"""AMD's ROCm as TheRock builds and packages it (7.13+: 7.14, 10.0, 10.1) and the whole-stack
gfx906 builds made with it, and which of the GPU libraries in such a tree carry device code for a
GPU, proven by content (docs/therock.md: the TheRock files each layout fact was read from).

Trees found:
  packages      ``/opt/rocm/core-X.Y``: AMD's ``amdrocm`` packages install there (build_package.py
                appends ``-X.Y`` to ``/opt/rocm/core``); ``/opt/rocm`` is a real folder of
                update-alternatives links (``core``, ``core-X``, ``bin``, ``lib``, ``include``,
                ``share``, ``llvm``, ... -> ``/etc/alternatives/<name>`` -> the prefix)
  gfx906-build  the same layout, installed from packages whose version carries a ``gfx906+``
                build suffix (mixa3607/ML-gfx906's ``amdrocm7.14-gfx906``, TheRock built for gfx906)
  mi50-prefix   ``<prefix>/rocm`` beside ``<prefix>/mi50-install.json`` (RomuloSK/MI50-ROCm-10.x's
                installer: a 10.0 forward-port in a prefix of its own)
  tarball       an ``/opt/rocm-X.Y.Z`` folder with a ``.kpack`` folder (TheRock's tarballs)

Per library (rocBLAS, hipBLAS, rocSOLVER, rocSPARSE, MIOpen, RCCL) and GPU processor, where its
device code is (``codeobj.kpackref``): the host library's own ``.hip_fatbin``; or, for a host
library TheRock split (a ``.rocm_kpack_ref`` marker), the archives of the component the marker
names (``<prefix>/.kpack/<component>_<arch>.kpack``), entries taken from their TOC under the
marker's kernel name, each blob's ELF header giving the exact target. rocBLAS also needs its
Tensile lazy index for the processor (flat, or in TheRock's per-arch folder
``rocblas/library/<arch>/``, ``tensile.folders``); hipBLAS has no device code of its own and
follows rocBLAS.

    trees = find_trees(Root("/"), ["gfx906"])
    [(v.name, v.processor, v.status, v.file) for v in trees[0].libraries]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Sequence

from rocmrevive.hardware.findings import Finding, FixKind, Severity
from rocmrevive.hardware.sysfs import list_dir, read_text
from rocmrevive.invocation import shell_command
from rocmrevive.rootfs import Root
from rocmrevive.tensile.folders import tensile_folder

if TYPE_CHECKING:
    from rocmrevive.codeobj.kpackref import DeviceCode

UMBRELLA = "/opt/rocm"
_CORE = re.compile(r"^core(?:-asan)?-(\d+)\.(\d+)$")
_DPKG_MAX = 256 << 20


@dataclass(frozen=True)
class LibSpec:
    key: str
    name: str
    stem: str                  # "librocsolver.so"
    own_code: bool = True      # False: no kernels of its own (hipBLAS calls rocBLAS)


LIBRARIES = (LibSpec("rocblas", "rocBLAS", "librocblas.so"), LibSpec("hipblas", "hipBLAS", "libhipblas.so", False),
             LibSpec("rocsolver", "rocSOLVER", "librocsolver.so"), LibSpec("rocsparse", "rocSPARSE", "librocsparse.so"),
             LibSpec("miopen", "MIOpen", "libMIOpen.so"), LibSpec("rccl", "RCCL", "librccl.so"))
SERVES, MISSING = "serves", "does-not-serve"


# ---- the trees -----------------------------------------------------------------------------

@dataclass
class LibraryVerdict:
    key: str
    name: str
    processor: str
    status: str                   # SERVES | MISSING | "absent" (library not installed)
    file: str | None              # the host library (machine path)
    source: str                   # "fat-binary" | "kpack" | "none" | "rocblas"
    evidence: list[str] = field(default_factory=list)   # files that hold the processor's code
    problem: str = ""             # what is missing, in words (with the file)

    def to_json(self) -> dict:
        return {"library": self.key, "name": self.name, "processor": self.processor, "status": self.status,
                "file": self.file, "source": self.source, "evidence": self.evidence, "problem": self.problem}


@dataclass
class TheRockTree:
    path: str                     # machine path of the install prefix
    kind: str                     # "packages" | "gfx906-build" | "mi50-prefix" | "tarball"
    release: str | None = None    # .info/version
    build: str | None = None      # the packages' version (7.14.0-gfx906+20260802001858)
    via: list[str] = field(default_factory=list)          # "/opt/rocm/lib -> /opt/rocm/core-10.1/lib"
    packages: list[str] = field(default_factory=list)     # installed amdrocm packages of this release
    device_targets: list[str] = field(default_factory=list)  # targets of its device packages
    kpack_archives: list[str] = field(default_factory=list)
    libraries: list[LibraryVerdict] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return {"packages": "AMD's TheRock packages", "gfx906-build": "a TheRock build for gfx906 (packages "
                f"{self.build})", "mi50-prefix": "an MI50 ROCm forward-port in its own prefix",
                "tarball": "a TheRock tarball"}[self.kind]

    def to_json(self) -> dict:
        return {"path": self.path, "kind": self.kind, "release": self.release, "build": self.build,
                "via": self.via, "packages": self.packages, "device_targets": self.device_targets,
                "kpack_archives": self.kpack_archives, "libraries": [v.to_json() for v in self.libraries],
                "problems": self.problems}


def is_umbrella(root: Root) -> bool:
    """Whether ``/opt/rocm`` is TheRock's folder of alternatives links around ``core-X.Y`` prefixes."""
    real = root.path(UMBRELLA)
    return real.is_dir() and not real.is_symlink() and any(
        _CORE.match(n) and (real / n).is_dir() and not (real / n).is_symlink() for n in list_dir(real))


def prefixes(root: Root) -> list[tuple[str, bool]]:
    """(machine path, default) of the TheRock install prefixes ``trees.installs`` does not name
    itself: each ``/opt/rocm/core-X.Y`` (default: the one ``/opt/rocm/core`` leads to) and each
    MI50 forward-port's ``<prefix>/rocm``."""
    out = []
    default = None
    try:
        default = root.machine_path(root.resolve(f"{UMBRELLA}/core"))
    except (ValueError, OSError):
        pass
    for t in find_trees(root, packages=False):
        if t.kind != "tarball":
            out.append((t.path, t.path == default))
    return out


def given_tree(root: Root, real: Path) -> Path:
    """A ``--tree`` as the folder that holds the libraries: TheRock's ``/opt/rocm`` (a folder of
    links, which resolve inside the machine, not on this host) is the prefix ``/opt/rocm/core``
    leads to; an MI50 forward-port's prefix is its ``rocm/``; anything else is itself."""
    if root.machine_path(real) == UMBRELLA and is_umbrella(root):
        try:
            return root.resolve(f"{UMBRELLA}/core")
        except (ValueError, OSError):
            return real
    inner = real / "rocm"
    if (real / "mi50-install.json").is_file() and inner.is_dir() and not inner.is_symlink():
        return inner
    return real


def find_trees(root: Root, processors: Sequence[str] = (), releases: dict[str, str | None] | None = None, *,
               packages: bool = True) -> list[TheRockTree]:
    """Every TheRock tree under ``root``; with ``processors``, each library's verdict for each;
    ``releases``: install path -> ROCm version (``trees.installs``' reading of ``.info/version``);
    ``packages=False``: the dpkg database is not read (the kind of a packaged tree is then ``packages``)."""
    trees: list[TheRockTree] = []
    umbrella = is_umbrella(root)
    dpkg = _amdrocm_packages(root) if packages and umbrella else {}
    if umbrella:
        for n in list_dir(root.path(UMBRELLA)):
            m = _CORE.match(n)
            if m and not root.path(f"{UMBRELLA}/{n}").is_symlink() and root.path(f"{UMBRELLA}/{n}").is_dir():
                t = TheRockTree(f"{UMBRELLA}/{n}", "packages")
                _packages(t, dpkg, f"{m.group(1)}.{m.group(2)}")
                t.via = _links_into(root, t.path)
                trees.append(t)
    for n in list_dir(root.path("/opt")):
        base = f"/opt/{n}"
        if root.path(base).is_symlink() or not root.path(base).is_dir():
            continue
        if root.path(f"{base}/mi50-install.json").is_file() and root.path(f"{base}/rocm").is_dir():
            trees.append(TheRockTree(f"{base}/rocm", "mi50-prefix"))
        elif n.startswith("rocm-") and root.path(f"{base}/.kpack").is_dir():
            trees.append(TheRockTree(base, "tarball"))
    for t in trees:
        t.release = (releases or {}).get(t.path)
        t.kpack_archives = [f"{t.path}/.kpack/{n}" for n in list_dir(root.path(f"{t.path}/.kpack")) if n.endswith(".kpack")]
        if processors:
            t.libraries = library_verdicts(root, t.path, list(processors))
    return trees


def _amdrocm_packages(root: Root) -> dict[str, str]:
    text, _ = read_text(root.path("/var/lib/dpkg/status"), limit=_DPKG_MAX)
    out = {}
    for stanza in (text or "").split("\n\n"):
        if "amdrocm" not in stanza:
            continue
        fields = dict(line.partition(":")[::2] for line in stanza.splitlines() if line and not line[0].isspace())
        name = fields.get("Package", "").strip()
        if name.startswith("amdrocm") and fields.get("Status", "").strip().endswith(" installed"):
            out[name] = fields.get("Version", "").strip()
    return out


def _packages(t: TheRockTree, dpkg: dict[str, str], release: str) -> None:
    """The installed ``amdrocm*<X.Y>*`` packages, their device targets and build, for a prefix."""
    mine = {p: v for p, v in dpkg.items() if re.search(rf"{re.escape(release)}(?:-|$)", p)}
    t.packages = sorted(mine)
    t.device_targets = sorted({m.group(1) for p in mine if (m := re.search(rf"{re.escape(release)}-(gfx[0-9a-z]+)$", p))})
    builds = sorted(set(mine.values()))
    t.build = builds[0] if len(builds) == 1 else (", ".join(builds) or None)
    if any("gfx906+" in v for v in mine.values()):
        t.kind = "gfx906-build"


def _links_into(root: Root, prefix: str) -> list[str]:
    """The links in ``/opt/rocm`` that lead into ``prefix`` (through ``/etc/alternatives``)."""
    out = []
    real_prefix = root.path(prefix)
    for n in list_dir(root.path(UMBRELLA)):
        p = f"{UMBRELLA}/{n}"
        if not root.path(p).is_symlink():
            continue
        try:
            real = root.resolve(p)
        except (ValueError, OSError):
            continue
        if real == real_prefix or real_prefix in real.parents:
            out.append(f"{p} -> {root.machine_path(real)}")
    return out


def host_library(lib_dir: Path, stem: str) -> Path | None:
    """The most specific ``<stem>[.N[.M…]]`` file in ``lib_dir`` (the real file rather than its links)."""
    cands = [n for n in list_dir(lib_dir) if n == stem or re.fullmatch(re.escape(stem) + r"(\.[0-9]+)+", n)]
    files = [n for n in cands if (lib_dir / n).is_file() and not (lib_dir / n).is_symlink()] or \
            [n for n in cands if (lib_dir / n).exists()]
    return lib_dir / sorted(files, key=lambda n: (-len(n), n))[0] if files else None


def library_verdicts(root: Root, prefix: str, processors: list[str],
                     show: Callable[[Path], str] | None = None) -> list[LibraryVerdict]:
    """For each library installed under ``prefix`` and each processor: does it carry code for it?"""
    from rocmrevive.codeobj.kpackref import device_code  # noqa: PLC0415 — the code-object core, loaded only for a TheRock tree (detect on any other machine does without it)

    show = show or root.machine_path
    lib_dir = root.path(f"{prefix}/lib")
    out: list[LibraryVerdict] = []
    for spec in LIBRARIES:
        host = host_library(lib_dir, spec.stem)
        dc = device_code(host) if host is not None else None
        for proc in processors:
            out.append(_verdict(spec, proc, host, dc, out, lib_dir, show))
    return out


def _verdict(spec: LibSpec, proc: str, host: Path | None, dc: DeviceCode | None, done: list[LibraryVerdict],
             lib_dir: Path, show) -> LibraryVerdict:
    if host is None or dc is None:
        return LibraryVerdict(spec.key, spec.name, proc, "absent", None, "none",
                              problem=f"no {spec.stem}* in {show(lib_dir)}")
    v = LibraryVerdict(spec.key, spec.name, proc, MISSING, show(host), dc.source)
    if not spec.own_code and not dc.entries:
        rb = next((x for x in done if x.key == "rocblas" and x.processor == proc), None)
        v.source = "rocblas"
        if rb is None or rb.status == "absent":
            v.problem = "no device code of its own, and no rocBLAS beside it to run its GPU work"
            return v
        v.status, v.evidence = rb.status, list(rb.evidence)
        v.problem = "" if rb.status == SERVES else (f"no device code of its own: its GPU work runs in rocBLAS "
                                                    f"({rb.file}), which does not serve {proc}: {rb.problem}")
        return v
    cov = dc.covering(proc)
    have = ", ".join(dc.processors) or "nothing"
    if dc.source == "kpack":
        arch_names = sorted({a.name for a in dc.archives})
        if cov:
            v.evidence = sorted({show(dc.found_in.get(id(e), host)) for e in cov})
        else:
            v.problem = (f"its device code is in .kpack archives ({', '.join(arch_names) or 'none found'}), "
                         f"which carry {dc.kernel_name} for {have}, not {proc}")
    elif cov:
        v.evidence = [show(host)]
    else:
        v.problem = f"its .hip_fatbin embeds {have}, not {proc}"
    if dc.problems and not cov:
        v.problem += f" ({'; '.join(dc.problems[:2])})"
    if cov and spec.key == "rocblas":
        lazy = _lazy_index(lib_dir / "rocblas/library", proc)
        if lazy is None:
            v.problem = (f"it has {proc} code, but its Tensile library {show(lib_dir / 'rocblas/library')} has no "
                         f"TensileLibrary_lazy_{proc}.dat (GEMMs fail: 'Cannot read …TensileLibrary.dat')")
            return v
        v.evidence.append(show(lazy))
    if cov:
        v.status = SERVES
    return v


def _lazy_index(library: Path, proc: str) -> Path | None:
    p = tensile_folder(library, proc) / f"TensileLibrary_lazy_{proc}.dat"
    return p if p.is_file() else None


# ---- doctor --------------------------------------------------------------------------------

def library_findings(s) -> list:
    """Doctor's findings for survey ``s``'s TheRock trees: an error per library that lacks code
    for a detected GPU (naming the file), a note per tree whose libraries all serve them."""
    out = []
    gpus = [g for g in s.hardware.gpus if g.processor]
    for t in s.therock:
        present = [v for v in t.libraries if v.status != "absent"]
        for v in present:
            if v.status != MISSING:
                continue
            labels = ", ".join(g.label for g in gpus if g.processor == v.processor)
            out.append(Finding(
                "therock-library-missing-target", Severity.ERROR, v.file or t.path,
                f"{v.name} in {t.path} ({t.label}) has no {v.processor} device code ({labels} cannot use it)",
                v.problem, shell_command(["verify", "--tree", t.path]) + "  (names every file; docs/therock.md: the choices)",
                FixKind.NONE, data={"tree": t.path, "kind": t.kind, "library": v.key, "processor": v.processor,
                                    "file": v.file, "source": v.source}))
        if present and all(v.status == SERVES for v in present):
            procs = sorted({v.processor for v in present})
            out.append(Finding(
                "therock-tree-serves", Severity.INFO, t.path,
                f"{t.path} ({t.label}, ROCm {t.release or '?'}): {', '.join(dict.fromkeys(v.name for v in present))} "
                f"carry {', '.join(procs)} device code",
                "read from each library's own code objects (.hip_fatbin or its .kpack archives)", "none",
                FixKind.NONE, data={"tree": t.path, "kind": t.kind, "build": t.build}))
    return out


# ---- verify --------------------------------------------------------------------------------

def tree_of(root: Root, library: Path) -> str | None:
    """The machine path of the TheRock tree a ``<prefix>/lib/rocblas/library`` folder is in, or None."""
    if library.name != "library" or library.parent.name != "rocblas" or library.parent.parent.name != "lib":
        return None
    prefix = library.parent.parent.parent
    mpath = root.machine_path(prefix)
    parent = prefix.parent
    if (prefix / ".kpack").is_dir() or (parent / "mi50-install.json").is_file() \
            or (_CORE.match(prefix.name) and root.machine_path(parent) == UMBRELLA):
        return mpath
    return None
