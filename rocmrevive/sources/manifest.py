"""Source manifests: which gfx906 files a rocBLAS version needs, and where to get them.

A manifest (``manifests/*.toml``, read with tomllib) covers a range of rocBLAS/ROCm versions and
one GPU target. It names the files (``[[components]]`` with file-name patterns), where they live in
each tree layout (``[layouts]``), and an ordered list of ``[[sources]]``, each pinned by size and
sha256 or by a signed apt index (``signed_by`` = the signing key's fingerprint). The format is
described in docs/manifests.md.

Components are of two kinds: ``tensile`` (rocBLAS's Tensile files, matched to the tree's rocBLAS
version) and ``library`` (a host library such as ``librocsparse.so.1`` built with the target,
matched to the tree's ROCm version through each source's ``rocm_versions``; docs/grafts.md).

Loading is all or nothing: every file is checked (schema, unique names, patterns, pins) and any
error raises ``RevError("USAGE", "manifests/x.toml:12: sources[0].sha256: ...")`` before a single
manifest is returned.

    ms = load_manifests(default_manifest_dir())
    m = ms[0]; m.id, m.target, m.select("TensileLibrary_lazy_gfx906.dat")   # ..., "gfx906", True
    m.sources[0].compatible_with("4.4.0")                                       # True
"""
from __future__ import annotations

import fnmatch
import functools
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from rocmrevive.errors import RevError

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

SCHEMA = 1
SOURCE_KINDS = ("debian", "apt")
COMPONENT_KINDS = ("tensile", "library")

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.+_-]*$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_FPR = re.compile(r"^[0-9A-F]{40}$")
_TARGET_RE = re.compile(r"^gfx[0-9a-f]{3,4}$")
_LAYOUT_KEY = re.compile(r"^[a-z][a-z0-9_-]*$")
_SUITE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_PKG_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]+$")
_DEBVER_RE = re.compile(r"^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")
_SONAME_RE = re.compile(r"^lib[A-Za-z0-9_+-][A-Za-z0-9_.+-]*\.so\.[0-9]+$")


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
        return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in self.files))

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

    @property
    def pinned(self) -> bool:
        """Pinned by size and sha256 in the manifest itself (else through the signed index)."""
        return self.sha256 is not None and self.size is not None

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
            "pinned": self.pinned,
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
        pats = [p for c in self.components for p in c.files]
        return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in pats))

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


def spec_text(spec: SpecifierSet | None) -> str:
    """A version range as people write it: lower bound first (">=4.4.0,<4.5"); "" for none."""
    if spec is None:
        return ""
    return ",".join(str(x) for x in sorted(spec, key=lambda x: (x.operator.startswith("<"), x.operator, x.version)))


def default_manifest_dir() -> Path:
    """$ROCMREVIVE_MANIFESTS, else the ``data/manifests`` folder shipped inside the package (in a
    source checkout a link to the repository's ``manifests/``). Never a ``manifests/`` folder
    next to the package: in site-packages that is any other package's folder (docs/security.md)."""
    env = os.environ.get("ROCMREVIVE_MANIFESTS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parent.parent / "data" / "manifests"


def load_manifests(directory: Path | os.PathLike | str) -> list[Manifest]:
    """Every ``*.toml`` in ``directory``, validated, sorted by id. Any error: RevError("USAGE")
    naming file and line, and nothing is returned."""
    manifests, errors = check_manifests(directory)
    if errors:
        more = f" (and {len(errors) - 1} more: run `rocmrevive manifests check`)" if len(errors) > 1 else ""
        raise RevError("USAGE", errors[0] + more, details={"errors": errors})
    return manifests


def check_manifests(*paths: Path | os.PathLike | str) -> tuple[list[Manifest], list[str]]:
    """Validate manifest files and folders; return (manifests, error lines). Never raises for a
    bad manifest."""
    files: list[Path] = []
    errors: list[str] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            found = sorted(p.glob("*.toml"))
            if not found:
                errors.append(f"{p}: no *.toml manifests in this folder")
            files.extend(found)
        elif p.is_file():
            files.append(p)
        else:
            errors.append(f"{p}: no such manifest file or folder (give a folder of manifest "
                          f".toml files, or leave the option out for the shipped ones)")
    manifests: list[Manifest] = []
    seen: dict[str, Path] = {}
    for f in files:
        m, errs = _load_one(f)
        errors.extend(errs)
        if m is None:
            continue
        if m.id in seen:
            errors.append(f"{f}:{_line_of_id(f)}: id: {m.id!r} is already used by {seen[m.id]}")
            continue
        seen[m.id] = f
        manifests.append(m)
    manifests.sort(key=lambda m: m.id)
    return (manifests if not errors else []), errors


def _line_of_id(path: Path) -> int:
    try:
        return _TomlLines(path.read_text()).line(("id",))
    except OSError:
        return 1


# --------------------------------------------------------------------------------------------
# line numbers for TOML key paths (tomllib does not report them)


class _TomlLines:
    """Maps key paths such as ("sources", 1, "sha256") or ("components", 0, "files", 3) to the
    line that defines them, by a light scan of the text (headers, keys, string array items)."""

    _HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")
    _KEY = re.compile(r"""^\s*((?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+)(?:\s*\.\s*(?:"[^"]*"|'[^']*'|[A-Za-z0-9_-]+))*)\s*=""")
    _STR = re.compile(r""""(?:[^"\\]|\\.)*"|'[^']*'""")

    def __init__(self, text: str):
        self.map: dict[tuple, int] = {}
        counts: dict[tuple, int] = {}
        cur: tuple = ()
        lines = text.splitlines()
        i = 0
        while i < len(lines):
            ln = lines[i]
            no = i + 1
            i += 1
            stripped = ln.strip()
            if not stripped or stripped.startswith("#"):
                continue
            h = self._HEADER.match(ln)
            if h and not self._KEY.match(ln):
                keys = tuple(self._split(h.group(2)))
                if h.group(1) == "[[":
                    n = counts.get(keys, -1) + 1
                    counts[keys] = n
                    cur = keys + (n,)
                else:
                    cur = keys
                self.map.setdefault(cur, no)
                continue
            k = self._KEY.match(ln)
            if not k:
                continue
            path = cur + tuple(self._split(k.group(1)))
            self.map.setdefault(path, no)
            rest = ln[k.end():]
            if rest.lstrip().startswith('"""') or rest.lstrip().startswith("'''"):
                q = rest.lstrip()[:3]
                if rest.count(q) < 2:
                    while i < len(lines) and q not in lines[i]:
                        i += 1
                    i += 1
                continue
            if rest.lstrip().startswith("["):
                depth, item, seg, seg_no = 0, 0, rest, no
                while True:
                    cut = self._comment_at(seg)
                    for m in self._STR.finditer(seg[:cut]):
                        self.map.setdefault(path + (item,), seg_no)
                        item += 1
                    code = self._STR.sub('""', seg[:cut])
                    depth += code.count("[") - code.count("]")
                    if depth <= 0 or i >= len(lines):
                        break
                    seg, seg_no = lines[i], i + 1
                    i += 1

    @classmethod
    def _comment_at(cls, seg: str) -> int:
        pos = 0
        for m in cls._STR.finditer(seg):
            hash_at = seg.find("#", pos, m.start())
            if hash_at >= 0:
                return hash_at
            pos = m.end()
        hash_at = seg.find("#", pos)
        return hash_at if hash_at >= 0 else len(seg)

    @staticmethod
    def _split(dotted: str) -> list[str]:
        out = []
        for part in re.findall(r'"[^"]*"|\'[^\']*\'|[^.\s]+', dotted):
            out.append(part[1:-1] if part[:1] in "\"'" else part)
        return out

    def line(self, path: tuple) -> int:
        p = tuple(path)
        while p:
            if p in self.map:
                return self.map[p]
            p = p[:-1]
        return 1


def _fmt_path(path: tuple) -> str:
    out = ""
    for el in path:
        if isinstance(el, int):
            out += f"[{el}]"
        else:
            out += ("." if out else "") + el
    return out


class _Checker:
    def __init__(self, path: Path, text: str):
        self.path = path
        self.lines = _TomlLines(text)
        self.errors: list[str] = []

    def err(self, where: tuple, msg: str) -> None:
        self.errors.append(f"{self.path}:{self.lines.line(where)}: {_fmt_path(where)}: {msg}")

    def unknown(self, table: dict, allowed: set[str], where: tuple) -> None:
        for k in table:
            if k not in allowed:
                close = difflib_close(k, allowed)
                hint = f" (did you mean {close!r}?)" if close else ""
                self.err(where + (k,), f"unknown key{hint}")

    def string(self, table: dict, key: str, where: tuple, *, required=True, pattern: re.Pattern | None = None,
               what: str = "") -> str | None:
        if key not in table:
            if required:
                self.err(where, f"missing key {key!r}")
            return None
        v = table[key]
        if not isinstance(v, str) or not v.strip():
            self.err(where + (key,), "must be a non-empty string")
            return None
        if pattern is not None and not pattern.match(v):
            self.err(where + (key,), f"{v!r} is not {what or 'valid'}")
            return None
        return v

    def integer(self, table: dict, key: str, where: tuple, *, required=True) -> int | None:
        if key not in table:
            if required:
                self.err(where, f"missing key {key!r}")
            return None
        v = table[key]
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            self.err(where + (key,), "must be a positive integer")
            return None
        return v

    def boolean(self, table: dict, key: str, where: tuple, default: bool) -> bool:
        v = table.get(key, default)
        if not isinstance(v, bool):
            self.err(where + (key,), "must be true or false")
            return default
        return v

    def specifier(self, table: dict, key: str, where: tuple) -> SpecifierSet | None:
        s = self.string(table, key, where)
        if s is None:
            return None
        try:
            spec = SpecifierSet(s)
        except InvalidSpecifier:
            self.err(where + (key,), f"{s!r} is not a version range (write e.g. \">=4.4,<4.5\")")
            return None
        if not str(spec):
            self.err(where + (key,), "an empty range matches every version")
            return None
        return spec

    def version(self, table: dict, key: str, where: tuple) -> Version | None:
        s = self.string(table, key, where)
        if s is None:
            return None
        try:
            return Version(s)
        except InvalidVersion:
            self.err(where + (key,), f"{s!r} is not a version")
            return None

    def url(self, table: dict, key: str, where: tuple, *, required=True) -> str | None:
        s = self.string(table, key, where, required=required)
        if s is None:
            return None
        if not re.match(r"^https?://[A-Za-z0-9.-]+(?::[0-9]+)?(/[^\s]*)?$", s):
            self.err(where + (key,), f"{s!r} is not an http(s) URL")
            return None
        return s


def difflib_close(word: str, options: set[str]) -> str | None:
    import difflib

    m = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.75)
    return m[0] if m else None


_TOP_KEYS = {"schema", "id", "summary", "target", "rocblas_versions", "rocm_versions", "layouts", "components",
             "sources"}
_COMPONENT_KEYS = {"kind", "files", "soname"}
_COMMON_SOURCE_KEYS = {"name", "kind", "package", "version", "suite", "component", "arch", "member_prefix",
                       "rocblas_version", "compatible", "cross_version", "files", "note", "size", "sha256",
                       "signed_by", "key_url", "rocm_version", "rocm_versions"}
_SOURCE_KEYS = {"debian": _COMMON_SOURCE_KEYS | {"filename"}, "apt": _COMMON_SOURCE_KEYS | {"repo", "filename"}}


def _load_one(path: Path) -> tuple[Manifest | None, list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return None, [f"{path}:1: cannot read: {exc}"]
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line = m.group(1) if m else "1"
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        return None, [f"{path}:{line}: invalid TOML: {msg}"]
    c = _Checker(path, text)
    c.unknown(doc, _TOP_KEYS, ())
    schema = doc.get("schema")
    if schema != SCHEMA:
        c.err(("schema",), f"must be {SCHEMA} (this rocmrevive reads schema {SCHEMA}), got {schema!r}")
    mid = c.string(doc, "id", (), pattern=_ID_RE, what="an id (lower-case letters, digits, . + _ -)")
    summary = c.string(doc, "summary", ())
    target = c.string(doc, "target", (), pattern=_TARGET_RE, what="a GPU processor name like \"gfx906\"")
    comps = doc.get("components")
    has_tensile = not isinstance(comps, list) or any(
        not isinstance(x, dict) or x.get("kind") != "library" for x in comps)
    # rocBLAS's version matters to Tensile files only: a manifest of host libraries needs none
    rocblas = c.specifier(doc, "rocblas_versions", ()) if has_tensile or "rocblas_versions" in doc else None
    rocm = c.specifier(doc, "rocm_versions", ())

    layouts: dict[str, str] = {}
    lay = doc.get("layouts")
    if not isinstance(lay, dict) or not lay:
        c.err(("layouts",), "missing or empty [layouts] table (amd, debian, torch: where the files go)")
    else:
        for k, v in lay.items():
            if not _LAYOUT_KEY.match(k):
                c.err(("layouts", k), "layout names are lower-case words")
            elif not isinstance(v, str) or not v.strip():
                c.err(("layouts", k), "must be a path relative to the tree root")
            elif v.startswith("/") or ".." in v.split("/"):
                c.err(("layouts", k), f"{v!r} must be relative to the tree root, without '..'")
            else:
                layouts[k] = v.strip("/")

    components: list[Component] = []
    if not isinstance(comps, list) or not comps:
        c.err(("components",), "missing [[components]] (which files are needed)")
        comps = []
    for i, comp in enumerate(comps):
        w = ("components", i)
        if not isinstance(comp, dict):
            c.err(w, "must be a table")
            continue
        c.unknown(comp, _COMPONENT_KEYS, w)
        kind = c.string(comp, "kind", w)
        if kind is not None and kind not in COMPONENT_KINDS:
            c.err(w + ("kind",), f"{kind!r} is not one of {', '.join(COMPONENT_KINDS)}")
        soname = None
        if kind == "library":
            soname = c.string(comp, "soname", w, pattern=_SONAME_RE,
                              what="a shared library's SONAME like \"librocsparse.so.1\"")
            if soname and any(x.soname == soname for x in components):
                c.err(w + ("soname",), f"{soname!r} is already a component of this manifest")
        elif "soname" in comp:
            c.err(w + ("soname",), "only library components name a soname")
        pats = comp.get("files")
        if not isinstance(pats, list) or not pats:
            c.err(w + ("files",) if "files" in comp else w, "files must be a non-empty list of file-name patterns")
            continue
        good: list[str] = []
        for j, p in enumerate(pats):
            pw = w + ("files", j)
            if not isinstance(p, str) or not p:
                c.err(pw, "must be a non-empty string")
            elif "/" in p or "\\" in p:
                c.err(pw, f"{p!r}: patterns match file names, not paths (no '/')")
            elif p.count("[") != p.count("]"):
                c.err(pw, f"{p!r}: unbalanced '[' in the pattern")
            elif "**" in p:
                c.err(pw, f"{p!r}: '**' is not a file-name pattern")
            elif kind == "library" and soname and not (p == soname or p.startswith(soname + ".")):
                c.err(pw, f"{p!r} must be the library's file: {soname} or {soname}.<version>, so that it "
                          f"selects nothing else")
            elif kind != "library" and target and target not in p:
                c.err(pw, f"{p!r} does not name the target {target}, so it could select other GPUs' files")
            elif p in good:
                c.err(pw, f"{p!r} is listed twice")
            else:
                good.append(p)
        if kind in COMPONENT_KINDS and (kind != "library" or soname):
            components.append(Component(kind, tuple(good), soname))

    sources: list[Source] = []
    srcs = doc.get("sources")
    if not isinstance(srcs, list) or not srcs:
        c.err(("sources",), "missing [[sources]] (where the files come from)")
        srcs = []
    names: set[str] = set()
    has_library = any(x.kind == "library" for x in components)
    for i, s in enumerate(srcs):
        src = _check_source(c, s, i, mid or "?", rocblas, rocm, tensile=has_tensile, library=has_library)
        if src is None:
            continue
        if src.name in names:
            c.err(("sources", i, "name"), f"{src.name!r} is used by an earlier source")
            continue
        names.add(src.name)
        sources.append(src)

    if c.errors:
        return None, c.errors
    return Manifest(id=mid, summary=summary, target=target, rocblas_versions=rocblas, rocm_versions=rocm,
                    components=tuple(components), layouts=layouts, sources=tuple(sources), path=path), []


def _check_cross(c: _Checker, w: tuple, s: Any, names: tuple[str, str, str], own: Version,
                 allowed: SpecifierSet, cross: bool, note: str) -> None:
    """One rule for ROCm and rocBLAS: a source outside the manifest's range must say so (cross_version + note)."""
    what, own_key, range_key = names
    inside = allowed.contains(own, prereleases=True)
    if not inside and not cross:
        c.err(w + (own_key,), f"{what} {own} is outside this manifest's {range_key} "
                              f"{spec_text(allowed)}: mark the source cross_version = true and say why in note")
    if inside and cross:
        c.err(w + ("cross_version",), f"{what} {own} is inside {range_key} {spec_text(allowed)}: "
                                      f"cross_version = true is wrong")
    if cross and not note:
        c.err(w + ("note",) if "note" in s else w, "a cross_version source needs a note saying what is "
                                                   "not matched")


def _check_source(c: _Checker, s: Any, i: int, mid: str, rocblas: SpecifierSet | None,
                  rocm: SpecifierSet | None = None, *, tensile: bool = True, library: bool = False) -> Source | None:
    w = ("sources", i)
    if not isinstance(s, dict):
        c.err(w, "must be a table")
        return None
    before = len(c.errors)
    name = c.string(s, "name", w, pattern=_ID_RE, what="a name (lower-case letters, digits, . + _ -)")
    kind = c.string(s, "kind", w)
    if kind is not None and kind not in SOURCE_KINDS:
        c.err(w + ("kind",), f"{kind!r} is not one of {', '.join(SOURCE_KINDS)}")
        return None
    c.unknown(s, _SOURCE_KEYS.get(kind or "", _COMMON_SOURCE_KEYS), w)
    package = c.string(s, "package", w, pattern=_PKG_RE, what="a Debian package name")
    version = c.string(s, "version", w, pattern=_DEBVER_RE, what="a Debian package version")
    suite = c.string(s, "suite", w, pattern=_SUITE_RE, what="an apt suite or codename")
    component = c.string(s, "component", w, required=False, pattern=_SUITE_RE, what="an apt component") or "main"
    arch = c.string(s, "arch", w, required=False, pattern=re.compile(r"^[a-z0-9-]+$"),
                    what="a Debian architecture") or "amd64"
    prefix = c.string(s, "member_prefix", w)
    if prefix is not None:
        p = prefix
        while p.startswith("./"):
            p = p[2:]
        if p.startswith("/") or ".." in p.split("/") or not prefix.endswith("/"):
            c.err(w + ("member_prefix",), f"{prefix!r} must be a relative folder inside the archive ending "
                                          f"in '/', without '..'")
    # Tensile files are matched to the tree's rocBLAS version, host libraries to its ROCm version
    rbv = c.version(s, "rocblas_version", w) if tensile or "rocblas_version" in s else None
    compat = c.specifier(s, "compatible", w) if tensile or "compatible" in s else None
    # (a manifest with Tensile files too matches its sources by rocBLAS version already)
    rocm_v = c.version(s, "rocm_version", w) if (library and not tensile) or "rocm_version" in s else None
    rocm_range = c.specifier(s, "rocm_versions", w) if (library and not tensile) or "rocm_versions" in s else None
    cross = c.boolean(s, "cross_version", w, False)
    expected = c.integer(s, "files", w, required=False)
    note = s.get("note", "")
    if not isinstance(note, str):
        c.err(w + ("note",), "must be a string")
        note = ""
    filename = c.string(s, "filename", w, required=False)
    if filename is not None and (filename.startswith("/") or ".." in filename.split("/")
                                 or not filename.endswith(".deb")):
        c.err(w + ("filename",), f"{filename!r} must be a relative .deb path in the repository (pool/...)")
    repo = c.url(s, "repo", w) if kind == "apt" else None

    size = c.integer(s, "size", w, required=False)
    sha = s.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not _HEX64.match(sha)):
        c.err(w + ("sha256",), "must be 64 lower-case hex digits")
        sha = None
    if ("size" in s) != ("sha256" in s):
        c.err(w + ("size" if "size" in s else "sha256",), "size and sha256 pin a file together: give both")
    fpr = s.get("signed_by")
    if fpr is not None:
        norm = fpr.replace(" ", "").upper() if isinstance(fpr, str) else None
        if norm is None or not _FPR.match(norm):
            c.err(w + ("signed_by",), "must be the signing key's full 40-hex-digit fingerprint")
            fpr = None
        else:
            fpr = norm
    key_url = c.url(s, "key_url", w, required=False)
    if key_url and "signed_by" not in s:
        c.err(w + ("key_url",), "key_url without signed_by: the key is only trusted through its fingerprint")
    if "sha256" not in s and "signed_by" not in s:
        c.err(w, "unpinned source: give size and sha256, or signed_by (the fingerprint of the key that signs "
                 "the repository's InRelease)")

    if rocm_v is not None and rocm_range is not None and not rocm_range.contains(rocm_v, prereleases=True):
        c.err(w + ("rocm_versions",), f"{spec_text(rocm_range)} does not contain the source's own ROCm {rocm_v}")
    if not tensile and rocm_v is not None and rocm is not None:
        _check_cross(c, w, s, ("ROCm", "rocm_version", "rocm_versions"), rocm_v, rocm, cross, note)
    if rbv is not None and compat is not None and not compat.contains(rbv, prereleases=True):
        c.err(w + ("compatible",), f"{spec_text(compat)} does not contain the source's own rocBLAS {rbv}")
    if rbv is not None and rocblas is not None:
        _check_cross(c, w, s, ("rocBLAS", "rocblas_version", "rocblas_versions"), rbv, rocblas, cross, note)
    if len(c.errors) != before:
        return None
    return Source(manifest_id=mid, name=name, kind=kind, package=package, version=version, member_prefix=prefix,
                  rocblas_version=rbv, compatible=compat, cross_version=cross, suite=suite, component=component,
                  arch=arch, filename=filename, repo=repo.rstrip("/") if repo else None, size=size, sha256=sha,
                  signed_by=fpr, key_url=key_url, expected_files=expected, note=note.strip(),
                  line=c.lines.line(w), rocm_version=rocm_v, rocm_versions=rocm_range)
