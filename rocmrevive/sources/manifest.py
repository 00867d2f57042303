"""Source manifests: which gfx906 files a rocBLAS version needs, and where to get them.

A manifest (``manifests/*.toml``, read with tomllib) covers a range of rocBLAS/ROCm versions and
one GPU target. It names the files (``[[components]]`` with file-name patterns), where they live in
each tree layout (``[layouts]``), and an ordered list of ``[[sources]]``, each pinned by size and
sha256 or by a signed apt index (``signed_by`` = the signing key's fingerprint). The format is
described in docs/manifests.md.

Components are of two kinds: ``tensile`` (rocBLAS's Tensile files, matched to the tree's rocBLAS
version) and ``library`` (a host library such as ``librocsparse.so.1`` built with the target,
matched to the tree's ROCm version through each source's ``rocm_versions``; docs/grafts.md).

This module is what a loaded manifest is and how it matches files and trees; reading and checking
the files is ``manifest_load`` (all or nothing, errors with file and line).

    ms = load_manifests(default_manifest_dir())                                  # manifest_load
    m = ms[0]; m.id, m.target, m.select("TensileLibrary_lazy_gfx906.dat")   # ..., "gfx906", True
    m.sources[0].compatible_with("4.4.0")                                       # True
"""
from __future__ import annotations

import fnmatch
import functools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from rocmrevive.errors import RevError

SCHEMA = 1
SOURCE_KINDS = ("debian", "apt")
COMPONENT_KINDS = ("tensile", "library")


@dataclass(frozen=True)
class Component:
    """A group of files one target needs, by file-name pattern (fnmatch, case-sensitive). A
    ``library`` component also names the ``soname`` (``librocsparse.so.1``) whose file in a tree
    it replaces; its patterns select the real file in a source (``librocsparse.so.1.*``), never
    the link."""

    kind: str
    files: tuple[str, ...]
    soname: str | None = None

    @functools.cached_property
    def _pattern_re(self) -> re.Pattern:
        return _patterns_re(self.files)

    def select(self, member_name: str) -> bool:
        """Whether an archive member (only its last path component counts) is one of this
        component's files."""
        if not member_name or member_name.endswith("/"):
            return False
        return self._pattern_re.match(member_name.rsplit("/", 1)[-1]) is not None


@dataclass(frozen=True)
class Source:
    """Where a manifest's files can come from. ``kind`` "debian": a package in a Debian archive
    (mirror from the host's apt configuration or --mirror); "apt": a package in a named apt
    repository (AMD's), pinned through its signed index when no sha256 is given."""

    manifest_id: str
    name: str
    kind: str
    package: str
    version: str
    member_prefix: str
    rocblas_version: Version | None
    compatible: SpecifierSet | None
    cross_version: bool = False
    suite: str = ""
    component: str = "main"
    arch: str = "amd64"
    filename: str | None = None
    repo: str | None = None
    size: int | None = None
    sha256: str | None = None
    signed_by: str | None = None
    key_url: str | None = None
    expected_files: int | None = None
    note: str = ""
    line: int = 0
    rocm_version: Version | None = None       # the ROCm release the source was built from
    rocm_versions: SpecifierSet | None = None  # tree ROCm versions it is built for (None: any)
    sha1: str | None = None                   # the file's SHA1: Debian's snapshot archive serves it by content
    seen: str | None = None                   # when the suite last listed it ("20261030T080801Z", snapshot's form)

    @property
    def pinned(self) -> bool:
        """Pinned by size and sha256 in the manifest itself (else through the signed index)."""
        return self.pin is not None

    @property
    def pin(self) -> tuple[str, int] | None:
        """(sha256, size) when the manifest pins the artifact itself, else None."""
        return None if self.sha256 is None or self.size is None else (self.sha256, self.size)

    @property
    def key(self) -> str:
        return f"{self.manifest_id}/{self.name}"

    def compatible_with(self, tree_rocblas_version: str | Version) -> bool:
        """Whether these files are built for the rocBLAS version of the tree they would go into."""
        if self.compatible is None:
            return False
        v = tree_rocblas_version if isinstance(tree_rocblas_version, Version) else Version(str(tree_rocblas_version))
        return self.compatible.contains(v, prereleases=True)

    def compatible_with_rocm(self, tree_rocm_version: str | Version) -> bool:
        """Whether this source is built for a tree of this ROCm version (always, when the source
        names no ``rocm_versions``)."""
        if self.rocm_versions is None:
            return True
        v = tree_rocm_version if isinstance(tree_rocm_version, Version) else Version(str(tree_rocm_version))
        return self.rocm_versions.contains(v, prereleases=True)

    def describe(self) -> str:
        where = "Debian" if self.kind == "debian" else (self.repo or "apt")
        built = f"rocBLAS {self.rocblas_version}" if self.rocblas_version is not None else f"ROCm {self.rocm_version}"
        return f"{self.package} {self.version} ({where}, {built})"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "kind": self.kind, "package": self.package, "version": self.version,
            "suite": self.suite, "component": self.component, "arch": self.arch, "repo": self.repo,
            "filename": self.filename, "size": self.size, "sha256": self.sha256, "signed_by": self.signed_by,
            "key_url": self.key_url, "member_prefix": self.member_prefix,
            "rocblas_version": None if self.rocblas_version is None else str(self.rocblas_version),
            "compatible": None if self.compatible is None else spec_text(self.compatible),
            "rocm_version": None if self.rocm_version is None else str(self.rocm_version),
            "rocm_versions": None if self.rocm_versions is None else spec_text(self.rocm_versions),
            "cross_version": self.cross_version, "files": self.expected_files, "note": self.note,
            "pinned": self.pinned, "sha1": self.sha1, "seen": self.seen,
        }


@dataclass(frozen=True, eq=False)
class Manifest:
    id: str
    summary: str
    target: str
    rocblas_versions: SpecifierSet | None  # None: a manifest of host libraries only
    rocm_versions: SpecifierSet
    components: tuple[Component, ...]
    layouts: dict[str, str]
    sources: tuple[Source, ...]
    path: Path | None = None
    schema: int = SCHEMA

    @functools.cached_property
    def _pattern_re(self) -> re.Pattern:
        return _patterns_re([p for c in self.components for p in c.files])

    def select(self, member_name: str) -> bool:
        """Whether an archive member (its name relative to the source's member prefix, or a whole
        member path: only the last component counts) is one of the files this manifest needs."""
        if not member_name or member_name.endswith("/"):  # a folder
            return False
        base = member_name.rsplit("/", 1)[-1]
        return self._pattern_re.match(base) is not None

    def components_of(self, kind: str) -> list[Component]:
        return [c for c in self.components if c.kind == kind]

    def select_kind(self, kind: str):
        """A ``select`` over the components of one kind only (the Tensile installer must not
        pick up a library file of the same package, and the other way round)."""
        comps = self.components_of(kind)
        return lambda member_name: any(c.select(member_name) for c in comps)

    def source(self, name: str) -> Source:
        for s in self.sources:
            if s.name == name:
                return s
        raise RevError("USAGE", f"manifest {self.id} has no source {name!r}; "
                                f"it has: {', '.join(s.name for s in self.sources)}")

    def sources_for(self, tree_rocblas_version: str | Version | None = None) -> list[Source]:
        """Sources in order, version-matched ones only (for a given tree version, or for the
        manifest's own range when None)."""
        if tree_rocblas_version is None:
            return [s for s in self.sources if not s.cross_version]
        return [s for s in self.sources if s.compatible_with(tree_rocblas_version)]

    def sources_for_rocm(self, tree_rocm_version: str | Version) -> list[Source]:
        """Sources in order that are built for a tree of this ROCm version (cross-version ones
        excluded): how library components are matched."""
        return [s for s in self.sources if not s.cross_version and s.compatible_with_rocm(tree_rocm_version)]

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id, "summary": self.summary, "target": self.target, "schema": self.schema,
            "path": str(self.path) if self.path else None,
            "rocblas_versions": None if self.rocblas_versions is None else spec_text(self.rocblas_versions),
            "rocm_versions": spec_text(self.rocm_versions),
            "components": [{"kind": c.kind, "files": list(c.files), **({"soname": c.soname} if c.soname else {})}
                           for c in self.components],
            "layouts": dict(self.layouts), "sources": [s.to_json() for s in self.sources],
        }


def choose_manifest(manifests, rocblas_version: str | None, target: str):
    """The manifest for ``target`` with Tensile files for this rocBLAS version, or None (also when
    the version is unknown or not a version)."""
    if rocblas_version is None:
        return None
    try:
        v = Version(rocblas_version)
    except InvalidVersion:
        return None
    for m in manifests:
        if (m.target == target and m.rocblas_versions is not None and m.components_of("tensile")
                and m.rocblas_versions.contains(v, prereleases=True)):
            return m
    return None


def spec_text(spec: SpecifierSet | None) -> str:
    """A version range as people write it: lower bound first (">=4.4.0,<4.5"); "" for none."""
    if spec is None:
        return ""
    return ",".join(str(x) for x in sorted(spec, key=lambda x: (x.operator.startswith("<"), x.operator, x.version)))


def _patterns_re(patterns) -> re.Pattern:
    """One regular expression matching any of the file-name patterns (fnmatch, case-sensitive)."""
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


TARGET = "gfx906"   # the processor rocmrevive's manifests serve
