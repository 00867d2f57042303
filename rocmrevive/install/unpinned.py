"""``install --from`` a folder or tarball that no manifest pins (a local build from ``rocmrevive
recipe``, a community tarball): accepted only when it proves itself by content.

No checksum vouches for such a source, so what it holds is checked against the tree it is for:

1. it carries the target's per-arch index (``TensileLibrary_lazy_<proc>.dat``) and its Tensile
   files (the manifest's file patterns, or the standard gfx names when no manifest covers the
   version); only those files are taken, never an arch-neutral file the tree already has;
2. version metadata it carries (``include/rocblas/internal/rocblas-version.h``,
   ``rocblas-config-version.cmake``, a ``librocblas.so.X.Y`` member name) names the tree's rocBLAS
   major.minor;
3. every code object is GPU code that loads on every card (target, xnack/sramecc), in a code object
   version the tree's runtime takes;
4. the Tensile cross-reference passes on an overlay of the tree's own folder (its ``*_fallback.dat``
   and the staged files): every solution's kernel is in the code object rocBLAS will open. A build of
   another rocBLAS fails here even without metadata: its fallback kernels are not the ones the
   tree's index names.

The journal records the result as ``verified by content, unpinned`` (``meta["verification"]``).

    staged = stage(Path("/opt/rocmrevive/rocblas/5.1.0-gfx906"), "gfx906", select, work)
    staged.by_name["TensileLibrary_lazy_gfx906.dat"], staged.evidence
"""
from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.codeobj.inspect import inspect_file
from rocmrevive.errors import RevError
from rocmrevive.invocation import shell_command
from rocmrevive.sources.unpack import archive_kind, extract_selected
from rocmrevive.trees.rocblas import version_in_cmake, version_in_header

VERIFIED_BY_CONTENT = "verified by content, unpinned"
_SONAME = re.compile(r"^librocblas\.so\.(\d+\.\d+)(?:\.\d+)*$")
_META_NAMES = ("rocblas-version.h", "rocblas-config-version.cmake")


def default_patterns(processor: str) -> tuple[str, ...]:
    """The Tensile files of one processor, as AMD's and Debian's rocBLAS name them."""
    p = processor
    return (f"TensileLibrary_lazy_{p}.dat", f"TensileLibrary_lazy_{p}-xnack[+-].dat",
            f"TensileLibrary_*_{p}.dat", f"TensileLibrary_*_{p}.co", f"TensileLibrary_*_{p}.hsaco",
            f"TensileLibrary_*_{p}-xnack[+-].hsaco", f"Kernels.so-*-{p}.hsaco", f"Kernels.so-*-{p}-xnack[+-].hsaco")


def selector(patterns):
    rx = re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))
    return lambda name: rx.match(name.rsplit("/", 1)[-1]) is not None


@dataclass
class UnpinnedBuild:
    source: str                          # what the user gave
    kind: str                            # "dir", "tar.gz", ...
    library_member: str                  # the folder inside it that held the index ("." for itself)
    by_name: dict[str, Path]             # file name -> staged real path
    evidence: list[dict] = field(default_factory=list)   # version metadata found: {"file", "version"}
    sha256: dict[str, tuple[str, int]] = field(default_factory=dict)  # file name -> (sha256, size) as extracted

    def versions(self) -> set[str]:
        return {e["version"] for e in self.evidence}

    def to_json(self) -> dict:
        return {"from": self.source, "kind": self.kind, "library": self.library_member,
                "files": len(self.by_name), "version_evidence": self.evidence}


def _mm(v: str | None) -> str | None:
    m = re.match(r"^(\d+)\.(\d+)", v or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def stage(source: Path, processor: str, tensile_select, work: Path) -> UnpinnedBuild:
    """Extract the Tensile files of ``processor`` and any rocBLAS version metadata from ``source``
    (a folder, a tarball or a .deb: found by content) into ``work``."""
    if not source.exists():
        raise RevError("USAGE", f"--from {source}: no such file or folder")
    kind = archive_kind(source)
    if kind == "unknown":
        raise RevError("USAGE", f"--from {source}: neither a folder, a tarball nor a .deb (by its content)")
    sonames: list[str] = []

    def select(name: str) -> bool:
        base = name.rsplit("/", 1)[-1]
        if _SONAME.match(base):
            sonames.append(name)
            return False
        return base in _META_NAMES or tensile_select(name)

    staging = work / "unpinned"
    files = extract_selected(source, select, staging)
    paths = {f.name: Path(f.path) for f in files}
    hashes = {f.name: (f.sha256, f.size) for f in files}
    rels = list(paths)
    home = _library_home(rels, processor, source)
    by_name = {}
    for r in rels:
        d, base = os.path.dirname(r), r.rsplit("/", 1)[-1]
        if d == home and base not in _META_NAMES and tensile_select(base):
            by_name[base] = paths[r]
    st = UnpinnedBuild(str(source), kind, home or ".", by_name,
                       sha256={base: hashes[f"{home}/{base}" if home else base] for base in by_name})
    st.evidence = _version_evidence(paths, sonames)
    return st


def _library_home(rels: list[str], processor: str, source: Path) -> str:
    """The one folder of the extracted ``rels`` that holds ``processor``'s lazy index (the rocBLAS
    library folder of the build); none or several is VERIFY_FAILED."""
    lazy = f"TensileLibrary_lazy_{processor}.dat"
    homes = sorted({os.path.dirname(r) for r in rels if r.rsplit("/", 1)[-1] == lazy}, key=lambda d: (len(d), d))
    if not homes:
        raise RevError("VERIFY_FAILED", f"--from {source}: no {lazy} in it (a rocBLAS build for {processor} "
                                        f"leaves one in <prefix>/lib/rocblas/library); nothing was changed")
    if len(homes) > 1:
        raise RevError("VERIFY_FAILED", f"--from {source}: {len(homes)} rocBLAS library folders with {lazy} "
                                        f"({', '.join(h or '.' for h in homes[:3])}); give the one meant; "
                                        f"nothing was changed")
    return homes[0]


def _version_evidence(paths: dict[str, Path], sonames: list[str]) -> list[dict]:
    """The rocBLAS versions the build states: rocblas-version.h, the CMake config files, and the
    versioned librocblas.so names seen (not extracted), each as {"file", "version"}."""
    evidence: list[dict] = []
    for r, path in paths.items():
        base = r.rsplit("/", 1)[-1]
        if base not in _META_NAMES:
            continue
        try:
            text = path.read_text(errors="replace")[:65536]
        except OSError:
            continue
        version = version_in_header(text) if base == "rocblas-version.h" else version_in_cmake(text)
        if version:
            evidence.append({"file": r, "version": version})
    for n in sonames:
        m = _SONAME.match(n.rsplit("/", 1)[-1])
        if m:
            evidence.append({"file": n, "version": m.group(1)})
    return evidence


_ANY_LAZY = re.compile(r"^TensileLibrary_lazy_gfx[0-9a-z]+(?:-xnack[+-])?\.dat$")


def offered_as_build(source: Path, work: Path | None) -> bool:
    """Whether ``--from source`` is offered as a rocBLAS library build (what ``stage`` takes), rather
    than as packages for the manifests' pinned sources. By content:

    * a ``.deb`` is a build only when it carries a per-arch index ``TensileLibrary_lazy_gfx*.dat``
      (one listing pass below ``work``, nothing written); any other package keeps its meaning: an artifact found
      by its sha256 (a host library to graft, say);
    * a folder is a build when a per-arch index lies in it (links not followed); else a folder of
      packages (``*.deb``) or an export made by ``fetch --to`` (``sources/``) keeps its meaning;
      any other folder is taken as a build, so the content check says what it lacks;
    * a tarball (no manifest pins one) or anything else: a build (``stage`` names what is wrong)."""
    if not source.exists():
        return True  # stage says "no such file or folder"
    kind = archive_kind(source)
    if kind == "deb" and work is not None:
        seen: list[str] = []

        def note(name: str) -> bool:
            if _ANY_LAZY.match(name.rsplit("/", 1)[-1]):
                seen.append(name)
            return False

        extract_selected(source, note, work / "listing")
        return bool(seen)
    if kind != "dir":
        return True
    packages = False
    for dirpath, dirnames, filenames in os.walk(source):
        if any(_ANY_LAZY.match(f) for f in filenames):
            return True
        if dirpath == str(source):
            packages = "sources" in dirnames or any(
                f.endswith(".deb") and archive_kind(Path(dirpath, f)) == "deb" for f in filenames
                if os.path.isfile(os.path.join(dirpath, f)))
    return not packages


def check_version(staged: UnpinnedBuild, tree_version: str | None, where: str) -> None:
    """Version metadata in the source, when there is any, must name the tree's rocBLAS major.minor."""
    want = _mm(tree_version)
    if want is None:
        return
    wrong = [e for e in staged.evidence if _mm(e["version"]) != want]
    if wrong:
        e = wrong[0]
        raise RevError("VERIFY_FAILED", f"--from {staged.source} is a build of rocBLAS {e['version']} ({e['file']}), "
                                        f"but {where} has rocBLAS {tree_version}: Tensile files must come from the "
                                        f"same rocBLAS release (`{shell_command(['recipe', '--tree', where])}` names it); "
                                        f"nothing was changed")


def check_code_object_versions(by_name: dict[str, Path], limit: int | None, basis: str) -> None:
    """Every code object's version is one the tree's runtime loads."""
    if limit is None:
        return
    for name, p in sorted(by_name.items()):
        rep = inspect_file(p)
        for e in rep.entries:
            if e.co_version is not None and e.co_version > limit:
                raise RevError("VERIFY_FAILED", f"staged {name} is code object v{e.co_version}, but the tree's "
                                                f"runtime ({basis}) loads up to v{limit}; nothing was changed")
