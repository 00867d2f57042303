"""Reading manifest files: each one parsed (tomllib) and checked against the schema key by key,
every error a line ``manifests/x.toml:12: sources[0].sha256: ...``. Loading is all or nothing: any
error raises ``RevError("USAGE", ...)`` before a single manifest is returned. What a loaded
manifest is, and how it matches files and trees, is ``manifest`` (docs/manifests.md: the format).

    ms = load_manifests(default_manifest_dir())            # [Manifest], sorted by id
    ms, errors = check_manifests(Path("my-manifests"))     # never raises for a bad manifest
"""
from __future__ import annotations

import datetime
import difflib
import os
import re
import sys
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from rocmrevive.errors import RevError
from rocmrevive.sources.manifest import COMPONENT_KINDS, SCHEMA, SOURCE_KINDS, Component, Manifest, Source, spec_text
from rocmrevive.sources.tomllines import TomlLines

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_ID_RE = re.compile(r"^[a-z0-9][a-z0-9.+_-]*$")
_HEX64 = re.compile(r"^[0-9a-f]{64}$")
_HEX40 = re.compile(r"^[0-9a-f]{40}$")
_FPR = re.compile(r"^[0-9A-F]{40}$")
_TARGET_RE = re.compile(r"^gfx[0-9a-f]{3,4}$")
_LAYOUT_KEY = re.compile(r"^[a-z][a-z0-9_-]*$")
_SUITE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._/-]*$")
_PKG_RE = re.compile(r"^[a-z0-9][a-z0-9.+-]+$")
_DEBVER_RE = re.compile(r"^(?:[0-9]+:)?[0-9][A-Za-z0-9.+~:-]*$")
_SONAME_RE = re.compile(r"^lib[A-Za-z0-9_+-][A-Za-z0-9_.+-]*\.so\.[0-9]+$")


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
        return TomlLines(path.read_text()).line(("id",))
    except OSError:
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
        self.lines = TomlLines(text)
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
        spec = self._parsed(table, key, where, SpecifierSet, InvalidSpecifier,
                            "is not a version range (write e.g. \">=4.4,<4.5\")")
        if spec is not None and not str(spec):
            self.err(where + (key,), "an empty range matches every version")
            return None
        return spec

    def version(self, table: dict, key: str, where: tuple) -> Version | None:
        return self._parsed(table, key, where, Version, InvalidVersion, "is not a version")

    def _parsed(self, table: dict, key: str, where: tuple, parse, invalid: type[Exception], what: str):
        """``parse`` of the string at ``key``, or None with an error naming what it is not."""
        s = self.string(table, key, where)
        if s is None:
            return None
        try:
            return parse(s)
        except invalid:
            self.err(where + (key,), f"{s!r} {what}")
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
    m = difflib.get_close_matches(word, sorted(options), n=1, cutoff=0.75)
    return m[0] if m else None


_TOP_KEYS = {"schema", "id", "summary", "target", "rocblas_versions", "rocm_versions", "layouts", "components",
             "sources"}
_COMPONENT_KEYS = {"kind", "files", "soname"}
_COMMON_SOURCE_KEYS = {"name", "kind", "package", "version", "suite", "component", "arch", "member_prefix",
                       "rocblas_version", "compatible", "cross_version", "files", "note", "size", "sha256",
                       "signed_by", "key_url", "rocm_version", "rocm_versions"}
_SOURCE_KEYS = {"debian": _COMMON_SOURCE_KEYS | {"filename", "sha1", "seen"}, "apt": _COMMON_SOURCE_KEYS | {"repo", "filename"}}


def _load_one(path: Path) -> tuple[Manifest | None, list[str]]:
    """One manifest file checked against the schema: (the manifest, []) or (None, its error lines)."""
    read = _read_toml(path)
    if isinstance(read, list):
        return None, read
    text, doc = read
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
    layouts = _check_layouts(c, doc.get("layouts"))
    components = _check_components(c, comps, target)
    sources = _check_sources(c, doc.get("sources"), mid or "?", rocblas, rocm, tensile=has_tensile,
                             library=any(x.kind == "library" for x in components))
    if c.errors:
        return None, c.errors
    # each of these is None only where the checker recorded an error line, handled above
    assert mid is not None and summary is not None and target is not None and rocm is not None
    return Manifest(id=mid, summary=summary, target=target, rocblas_versions=rocblas, rocm_versions=rocm,
                    components=tuple(components), layouts=layouts, sources=tuple(sources), path=path), []


def _read_toml(path: Path) -> tuple[str, dict] | list[str]:
    """(text, document) of a TOML file, or its one error line (file:line: what)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return [f"{path}:1: cannot read: {exc}"]
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+), column \d+\)", str(exc))
        line = m.group(1) if m else "1"
        msg = re.sub(r"\s*\(at line \d+, column \d+\)", "", str(exc))
        return [f"{path}:{line}: invalid TOML: {msg}"]


def _check_layouts(c: _Checker, lay: Any) -> dict[str, str]:
    """``[layouts]``: tree layout name -> folder relative to the tree root."""
    layouts: dict[str, str] = {}
    if not isinstance(lay, dict) or not lay:
        c.err(("layouts",), "missing or empty [layouts] table (amd, debian, torch: where the files go)")
        return layouts
    for k, v in lay.items():
        if not _LAYOUT_KEY.match(k):
            c.err(("layouts", k), "layout names are lower-case words")
        elif not isinstance(v, str) or not v.strip():
            c.err(("layouts", k), "must be a path relative to the tree root")
        elif v.startswith("/") or ".." in v.split("/"):
            c.err(("layouts", k), f"{v!r} must be relative to the tree root, without '..'")
        else:
            layouts[k] = v.strip("/")
    return layouts


def _check_components(c: _Checker, comps: Any, target: str | None) -> list[Component]:
    """``[[components]]``: the good ones (a library one names a soname no other component names)."""
    components: list[Component] = []
    if not isinstance(comps, list) or not comps:
        c.err(("components",), "missing [[components]] (which files are needed)")
        return components
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
        good = _check_patterns(c, w, pats, kind, soname, target)
        if kind in COMPONENT_KINDS and (kind != "library" or soname):
            components.append(Component(kind, tuple(good), soname))
    return components


def _check_patterns(c: _Checker, w: tuple, pats: list, kind: str | None, soname: str | None,
                    target: str | None) -> list[str]:
    """A component's file-name patterns: each selects its own files only (the library's file, or
    files naming the target), once."""
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
    return good


def _check_sources(c: _Checker, srcs: Any, mid: str, rocblas: SpecifierSet | None, rocm: SpecifierSet | None,
                   *, tensile: bool, library: bool) -> list[Source]:
    """``[[sources]]`` in order, each name used once."""
    sources: list[Source] = []
    if not isinstance(srcs, list) or not srcs:
        c.err(("sources",), "missing [[sources]] (where the files come from)")
        return sources
    names: set[str] = set()
    for i, s in enumerate(srcs):
        src = _check_source(c, s, i, mid, rocblas, rocm, tensile=tensile, library=library)
        if src is None:
            continue
        if src.name in names:
            c.err(("sources", i, "name"), f"{src.name!r} is used by an earlier source")
            continue
        names.add(src.name)
        sources.append(src)
    return sources


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
    """One ``[[sources]]`` table: what it is, which trees it matches, what pins it, and that its
    versions agree with the manifest's ranges. None when anything is wrong (the errors are in ``c``)."""
    w = ("sources", i)
    if not isinstance(s, dict):
        c.err(w, "must be a table")
        return None
    before = len(c.errors)
    what = _source_package(c, s, w)
    if what is None:
        return None
    match = _source_matching(c, s, w, tensile=tensile, library=library)
    pins = _source_pins(c, s, w, what["kind"])
    _source_ranges(c, s, w, match, rocblas, rocm, tensile=tensile)
    if len(c.errors) != before:
        return None
    return Source(manifest_id=mid, **what, **{**match, "note": match["note"].strip()}, **pins, line=c.lines.line(w))


def _source_package(c: _Checker, s: dict, w: tuple) -> dict[str, Any] | None:
    """Which package of which archive: name, kind, package, version, suite, component, arch and the
    member prefix of the files in it (None for an unknown kind: its other keys mean nothing)."""
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
    return {"name": name, "kind": kind, "package": package, "version": version, "suite": suite,
            "component": component, "arch": arch, "member_prefix": prefix}


def _source_matching(c: _Checker, s: dict, w: tuple, *, tensile: bool, library: bool) -> dict[str, Any]:
    """Which trees the source's files are built for: its rocBLAS or ROCm version and range, whether
    it is cross-version (with a note), how many files it holds."""
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
    return {"rocblas_version": rbv, "compatible": compat, "rocm_version": rocm_v, "rocm_versions": rocm_range,
            "cross_version": cross, "expected_files": expected, "note": note}


def _source_pins(c: _Checker, s: dict, w: tuple, kind: str | None) -> dict[str, Any]:
    """Where the artifact is (filename in the repository, the apt repository's URL) and what pins it:
    size and sha256, or the fingerprint of the key that signs the repository's index."""
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
    sha1, seen = _snapshot_keys(c, s, w, filename)
    return {"filename": filename, "repo": repo.rstrip("/") if repo else None, "size": size, "sha256": sha,
            "signed_by": fpr, "key_url": key_url, "sha1": sha1, "seen": seen}


def _snapshot_keys(c: _Checker, s: dict, w: tuple, filename: str | None) -> tuple[str | None, str | None]:
    """What finds a Debian pin in Debian's snapshot archive once the suite has moved on: ``sha1``
    (the archive serves every file by its SHA1) and ``seen`` (a UTC date and time the suite
    listed it: the archive as it was then has it at ``filename``). Both only beside sha256 and
    size, which still decide whether the bytes are right."""
    sha1 = s.get("sha1")
    if sha1 is not None and (not isinstance(sha1, str) or not _HEX40.match(sha1)):
        c.err(w + ("sha1",), "must be 40 lower-case hex digits (the file's SHA1)")
        sha1 = None
    seen = s.get("seen")
    stamp = None
    if seen is not None:
        if not isinstance(seen, datetime.datetime) or seen.utcoffset() != datetime.timedelta(0):
            c.err(w + ("seen",), "must be a UTC date and time, written like 2026-10-30T08:08:01Z")
        elif not filename:
            c.err(w + ("seen",), "needs filename (the pool path the archive had at that date)")
        else:
            stamp = seen.strftime("%Y%m%dT%H%M%SZ")
    if (sha1 is not None or seen is not None) and "sha256" not in s:
        c.err(w + ("sha1" if sha1 is not None else "seen",), "only a source pinned by size and sha256 can be "
                                                              "fetched from the snapshot archive (they check it)")
    return sha1, stamp


def _source_ranges(c: _Checker, s: dict, w: tuple, match: dict[str, Any], rocblas: SpecifierSet | None,
                   rocm: SpecifierSet | None, *, tensile: bool) -> None:
    """The source's own versions lie in its ranges, and in the manifest's unless it is cross-version."""
    rbv, compat = match["rocblas_version"], match["compatible"]
    rocm_v, rocm_range = match["rocm_version"], match["rocm_versions"]
    cross, note = match["cross_version"], match["note"]
    if rocm_v is not None and rocm_range is not None and not rocm_range.contains(rocm_v, prereleases=True):
        c.err(w + ("rocm_versions",), f"{spec_text(rocm_range)} does not contain the source's own ROCm {rocm_v}")
    if not tensile and rocm_v is not None and rocm is not None:
        _check_cross(c, w, s, ("ROCm", "rocm_version", "rocm_versions"), rocm_v, rocm, cross, note)
    if rbv is not None and compat is not None and not compat.contains(rbv, prereleases=True):
        c.err(w + ("compatible",), f"{spec_text(compat)} does not contain the source's own rocBLAS {rbv}")
    if rbv is not None and rocblas is not None:
        _check_cross(c, w, s, ("rocBLAS", "rocblas_version", "rocblas_versions"), rbv, rocblas, cross, note)
