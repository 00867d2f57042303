"""Get one manifest source into the cache, verified: from the cache itself, a local copy
(``--from``), a Debian mirror (the host's apt configuration or ``--mirror``) or an apt repository
pinned through its signed index.

    r = fetch_source(manifest.sources[0], Path("/var/cache/rocmrevive"), mirror=None)
    Path(r), r.sha256, r.origin          # cache path, "0561...", "download" | "cache" | "local"

``FetchResult`` is path-like (``os.fspath(r)`` is the verified artifact), so it can be passed
wherever a Path is expected, e.g. to ``extract_selected``.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, open_regular, printable_name
from rocmrevive.hashing import hash_fd
from rocmrevive.rootfs import Root
from rocmrevive.sources import apt
from rocmrevive.sources.cache import Cache, sha256_file
from rocmrevive.sources.http import Downloader
from rocmrevive.sources.manifest import Manifest, Source
from rocmrevive.sources.unpack import norm_prefix

MAX_INRELEASE = 16 << 20
MAX_KEY = 1 << 20
EXPORT_SUMS = "SHA256SUMS"
EXPORT_INDEX = "rocmrevive-export.json"


@dataclass
class FetchResult(os.PathLike):
    """A verified artifact. ``origin``: "cache" (already there), "download", "local" (copied from
    --from), "local-tree" (an unpacked folder used in place: not checksummed, ``verified`` False)."""

    path: Path
    source: Source
    origin: str
    sha256: str | None
    size: int | None
    filename: str                         # the artifact's name in its repository ("pool/.../x.deb")
    url: str | None = None
    verified: bool = True
    provenance: dict = field(default_factory=dict)
    index_files: dict = field(default_factory=dict)  # repo-relative path -> cached copy (signed chain)

    def __fspath__(self) -> str:
        return str(self.path)

    @property
    def basename(self) -> str:
        return self.filename.rsplit("/", 1)[-1]

    def to_json(self) -> dict:
        return {"path": str(self.path), "origin": self.origin, "sha256": self.sha256, "size": self.size,
                "filename": self.filename, "url": self.url, "verified": self.verified,
                "provenance": self.provenance}


def fetch_source(source: Source, cache: Path | os.PathLike | str | Cache, *, mirror: str | None = None,
                 local: Path | os.PathLike | str | None = None,
                 progress: Callable[[int, int | None], None] | None = None,
                 root: Root | None = None, keyrings: Iterable[Path] = (),
                 downloader: Downloader | None = None) -> FetchResult:
    """The verified artifact of ``source`` in ``cache``, downloading (or copying from ``local``)
    only what is missing. Raises RevError: NETWORK (mirror trouble: retry), VERIFY_FAILED (a
    checksum, size or signature is wrong: nothing was kept), USAGE (no mirror configured)."""
    cache = cache if isinstance(cache, Cache) else Cache(cache)
    root = root or Root("/")
    dl = downloader or Downloader()
    keyrings = [Path(k) for k in keyrings]
    if local is not None:
        try:
            return _from_local(source, Path(local), cache, root, keyrings, dl)
        except _OtherArtifact as other:
            # a --from file of another package (a rocSPARSE .deb while this is rocBLAS) leaves
            # this source to its normal places: the cache, then the mirror
            try:
                return _fetch_normally(source, cache, mirror, root, keyrings, dl, progress)
            except RevError as exc:
                raise RevError(exc.code, f"{other.message}, and {exc.message}", details=exc.details) from None
    return _fetch_normally(source, cache, mirror, root, keyrings, dl, progress)


class _OtherArtifact(RevError):
    """--from names a file that is not this source's artifact at all (another size)."""

    def __init__(self, message: str):
        super().__init__("VERIFY_FAILED", message)


def _fetch_normally(source: Source, cache: Cache, mirror, root: Root, keyrings: list[Path], dl: Downloader,
                    progress) -> FetchResult:
    # already in the cache?
    if source.pinned:
        got = cache.artifact(source.sha256, source.size)
        if got is not None:
            return _cached(source, got, source.sha256, source.size, _repo_filename(source), None, {})
    rec = None if source.pinned else cache.load_resolution(_resolution_key(source))
    got = cache.artifact(rec["sha256"], rec.get("size")) if rec else None
    if got is not None:
        return _cached(source, got, rec["sha256"], rec["size"], rec["filename"], rec.get("url"),
                       rec.get("provenance", {}), _index_files(cache, source, rec))

    if source.kind == "debian":
        bases = [_mirror_base(mirror)] if mirror else apt.debian_mirrors(root)
        if not bases:
            raise RevError("USAGE", f"no Debian archive mirror in {root.machine_path(root.path('/etc/apt'))}"
                                    f"/sources.list(.d) to fetch {source.package} {source.version} from; "
                                    f"pass --mirror URL (a Debian mirror) or --from a copy, or set mirror = \"URL\" once "
                                    f"in /etc/rocmrevive/config.toml")
    else:
        bases = [source.repo]
    last: RevError | None = None
    for base in bases:
        try:
            return _fetch_from(base, source, cache, root, keyrings, dl, progress)
        except RevError as exc:
            if exc.code != "NETWORK":
                raise
            last = exc
    assert last is not None
    raise last


# --------------------------------------------------------------------------------------------


def _mirror_base(mirror: str) -> str:
    """``--mirror`` as a base URL; a malformed one is a usage error (exit 2), not a crash."""
    from urllib.parse import urlsplit

    try:
        u = urlsplit(mirror)
        u.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise RevError("USAGE", f"--mirror {mirror!r} is not a URL ({exc})") from None
    if u.scheme not in ("http", "https", "file") or (u.scheme != "file" and not u.hostname):
        raise RevError("USAGE", f"--mirror {mirror!r} is not an http://, https:// or file:// URL of a Debian mirror")
    return mirror.rstrip("/")


def _repo_filename(source: Source) -> str:
    return source.filename or f"{source.package}_{source.version.split(':')[-1]}_{source.arch}.deb"


def _cached(source, path: Path, sha, size, filename, url, provenance, index_files=None) -> FetchResult:
    return FetchResult(path, source, "cache", sha, size, filename, url, True, dict(provenance),
                       index_files or {})


def _resolution_key(source: Source) -> str:
    ident = json.dumps([source.kind, source.repo, source.suite, source.component, source.arch, source.package,
                        source.version, source.signed_by], sort_keys=True)
    slug = re.sub(r"[^a-z0-9.+-]+", "-", f"{source.manifest_id}--{source.name}".lower())
    return f"{slug}--{hashlib.sha256(ident.encode()).hexdigest()[:12]}"


def _index_files(cache: Cache, source: Source, rec: dict) -> dict:
    key = _resolution_key(source)
    out = {}
    for rel, name in rec.get("index_files", {}).items():
        p = cache.resolved_file(key, name) if isinstance(name, str) and _safe_name(name) else None
        if p is not None:
            out[rel] = p
    out.update(_key_file(cache, source))
    return out


def _safe_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..")


def _download(url: str, source: Source, sha: str, size: int, cache: Cache, dl: Downloader, progress
              ) -> tuple[Path, str]:
    with cache.lock(sha):
        got = cache.artifact(sha, size)
        if got is not None:
            return got, "cache"
        part = cache.partial_path(sha)
        dl.download(url, part, size=size, sha256=sha, progress=progress)
        return cache.commit(part, sha), "download"


def _fetch_from(base: str, source: Source, cache: Cache, root: Root, keyrings: list[Path], dl: Downloader,
                progress) -> FetchResult:
    base = base.rstrip("/")
    if source.pinned and source.filename and not source.signed_by:
        url = f"{base}/{source.filename}"
        try:
            path, origin = _download(url, source, source.sha256, source.size, cache, dl, progress)
            return FetchResult(path, source, origin, source.sha256, source.size, source.filename, url, True,
                               {"url": url, "pinned_by": "manifest"})
        except RevError as exc:
            if exc.code != "NETWORK" or "not found" not in exc.message:
                raise
            # the pool file is gone: ask the index what this mirror has, for a useful message
            _resolve(base, source, root, keyrings, dl, cache)
            raise
    entry, prov, files = _resolve(base, source, root, keyrings, dl, cache)
    url = f"{base}/{entry.filename}"
    path, origin = _download(url, source, entry.sha256, entry.size, cache, dl, progress)
    prov = {**prov, "url": url}
    index_files = {}
    if not source.pinned:
        key = _resolution_key(source)
        names = {rel: rel.replace("/", "__") for rel in files}
        record = {"sha256": entry.sha256, "size": entry.size, "filename": entry.filename, "url": url,
                  "provenance": prov, "index_files": names, "resolved_at": int(time.time())}
        kept = cache.save_resolution(key, record, {names[rel]: data for rel, data in files.items()})
        index_files = {rel: kept[names[rel]] for rel in files}
    index_files.update(_key_file(cache, source))
    return FetchResult(path, source, origin, entry.sha256, entry.size, entry.filename, url, True, prov, index_files)


def _key_file(cache: Cache, source: Source) -> dict:
    if not source.signed_by:
        return {}
    kc = cache.key_file(source.signed_by)
    return {kc.name: kc} if kc is not None else {}


def _resolve(base: str, source: Source, root: Root, keyrings: list[Path], dl: Downloader, cache: Cache
             ) -> tuple[apt.PackageEntry, dict, dict[str, bytes]]:
    """Find the package in the repository's index (through the signed InRelease when the source
    names a key). Returns (entry, provenance, {repo-relative path: bytes} of the index files)."""
    dists = f"dists/{source.suite}"
    files: dict[str, bytes] = {}
    prov: dict = {"repo": base, "suite": source.suite}
    if source.signed_by:
        inrel_url = f"{base}/{dists}/InRelease"
        data = dl.get_bytes(inrel_url, max_size=MAX_INRELEASE)
        text, signer = _verify_with_keys(data, source, root, keyrings, dl, cache, inrel_url)
        rel = apt.parse_release(text.decode("utf-8", "replace"))
        if source.suite not in (rel.suite, rel.codename):
            raise RevError("VERIFY_FAILED", f"{inrel_url} is for suite {rel.suite or '?'} / codename "
                                            f"{rel.codename or '?'}, not {source.suite}; refused")
        path, size, digest = apt.pick_index(rel, source.component, source.arch)
        raw = dl.get_bytes(f"{base}/{dists}/{path}", max_size=size, size=size, sha256=digest)
        files[f"{dists}/InRelease"] = data
        files[f"{dists}/{path}"] = raw
        prov.update({"signed_by": signer, "inrelease_sha256": hashlib.sha256(data).hexdigest(),
                     "index": f"{dists}/{path}", "index_sha256": digest, "pinned_by": "signed index"})
    else:
        raw, path = None, None
        for ext in (".xz", ".gz", ""):
            cand = f"{source.component}/binary-{source.arch}/Packages{ext}"
            try:
                raw = dl.get_bytes(f"{base}/{dists}/{cand}", max_size=apt.MAX_INDEX_BYTES)
                path = cand
                break
            except RevError as exc:
                if exc.code != "NETWORK" or "not found" not in exc.message:
                    raise
        if raw is None:
            raise RevError("NETWORK", f"{base}/{dists}: no Packages index for {source.component}/{source.arch}; "
                                      f"is {base} an apt repository with suite {source.suite}?")
        prov.update({"index": f"{dists}/{path}", "index_sha256": hashlib.sha256(raw).hexdigest(),
                     "pinned_by": "manifest"})
    text_idx = apt.decompress_index(path, raw)
    entry = apt.find_package(text_idx, source.package, source.version, source.arch)
    if entry is None:
        have = apt.package_versions(text_idx, source.package)
        listing = f"it has {', '.join(have[-6:])}" if have else f"it has no {source.package} at all"
        raise RevError("NETWORK", f"{source.package} {source.version} is not in {base} {source.suite} ({listing}); "
                                  f"try another mirror, or --from a copy")
    if source.pinned and (entry.sha256, entry.size) != (source.sha256, source.size):
        raise RevError("VERIFY_FAILED", f"{base}: the index lists {source.package} {source.version} with sha256 "
                                        f"{entry.sha256} ({entry.size} bytes), the manifest pins {source.sha256} "
                                        f"({source.size} bytes); refused")
    prov.update({"filename": entry.filename, "package": entry.package, "version": entry.version})
    return entry, prov, files


def _verify_with_keys(data: bytes, source: Source, root: Root, keyrings: list[Path], dl: Downloader,
                      cache: Cache, where: str) -> tuple[bytes, str]:
    fpr = source.signed_by
    key_cache = cache.key_file(fpr)
    rings = list(keyrings) + ([key_cache] if key_cache is not None else []) + apt.host_keyrings(root)
    try:
        return apt.verify_inrelease(data, fpr, rings, where=where)
    except RevError as exc:
        if exc.code != "VERIFY_FAILED" or not source.key_url or "BAD signature" in exc.message:
            raise
    # the pinned key may simply not be installed: fetch it (trust still comes from the fingerprint)
    key = dl.get_bytes(source.key_url, max_size=MAX_KEY)
    tmp = cache.private_dir() / f"{fpr}.gpg"
    tmp.write_bytes(apt.dearmor(key))  # a private folder of this process
    try:
        text, signer = apt.verify_inrelease(data, fpr, list(keyrings) + [tmp], where=where)
    finally:
        key = tmp.read_bytes()
        tmp.unlink(missing_ok=True)
    cache.save_key(fpr, key)
    return text, signer


# --------------------------------------------------------------------------------------------
# local copies: a file, a folder of files, an export made by `fetch --to`, an unpacked tree


def _from_local(source: Source, p: Path, cache: Cache, root: Root, keyrings: list[Path], dl: Downloader
                ) -> FetchResult:
    if not p.exists():
        raise RevError("USAGE", f"--from {p}: no such file or folder")
    expected: tuple[str, int] | None = None
    filename = _repo_filename(source)
    prov: dict = {"from": str(p)}
    if source.pinned:
        expected = (source.sha256, source.size)
        prov["pinned_by"] = "manifest"
    else:
        rec = cache.load_resolution(_resolution_key(source))
        if rec:
            expected = (rec["sha256"], rec["size"])
            filename = rec["filename"]
            prov.update(rec.get("provenance", {}))
            prov["pinned_by"] = "signed index (cached)"

    if p.is_file():
        if expected is None:
            raise RevError("VERIFY_FAILED", f"--from {p}: {source.describe()} has no pinned sha256 and no verified "
                                            f"index is cached, so the file cannot be checked; run `rocmrevive fetch` "
                                            f"once with network, or copy a folder made by `rocmrevive fetch --to`")
        if p.stat().st_size != expected[1]:
            raise _OtherArtifact(f"--from {p} is not {source.describe()} ({p.stat().st_size} bytes, the pinned "
                                 f"size is {expected[1]})")
        return _adopt(p, source, cache, expected, filename, prov)

    export = p / "sources" / source.name
    if export.is_dir() and not source.pinned and expected is None:
        # an export made by `fetch --to`: a small repository of its own; verify the signed chain again
        entry, prov2, files = _resolve(f"file://{export.resolve()}", source, root,
                                       keyrings + sorted(export.glob("*.gpg")), dl, cache)
        candidate = export / entry.filename
        if not candidate.is_file():
            raise RevError("VERIFY_FAILED", f"--from {p}: the export lacks {entry.filename}")
        res = _adopt(candidate, source, cache, (entry.sha256, entry.size), entry.filename,
                     {**prov2, "from": str(p)})
        key = _resolution_key(source)
        names = {rel: rel.replace("/", "__") for rel in files}
        kept = cache.save_resolution(key, {"sha256": entry.sha256, "size": entry.size, "filename": entry.filename,
                                           "url": None, "provenance": res.provenance, "index_files": names,
                                           "resolved_at": int(time.time())},
                                     {names[rel]: data for rel, data in files.items()})
        res.index_files = {rel: kept[names[rel]] for rel in files}
        res.index_files.update(_key_file(cache, source))
        return res

    if expected is not None:
        for cand in _find_in_folder(p, expected):
            try:
                return _adopt(cand, source, cache, expected, filename, prov)
            except RevError:
                continue

    tree = p / norm_prefix(source.member_prefix)
    if tree.is_dir():
        return FetchResult(p, source, "local-tree", None, None, str(p), None, False,
                           {"from": str(p), "pinned_by": None,
                            "warning": "an unpacked folder: no package checksum; the code objects are verified "
                                       "when installed"})
    if expected is None:
        raise RevError("VERIFY_FAILED", f"--from {p}: no export of {source.name} there, and {source.describe()} has "
                                        f"no pinned sha256 to look for")
    raise RevError("VERIFY_FAILED", f"--from {p}: no file with the pinned sha256 {expected[0][:16]}... "
                                    f"({expected[1]} bytes) of {source.describe()}, and no "
                                    f"{source.member_prefix} folder")


def _adopt(path: Path, source: Source, cache: Cache, expected: tuple[str, int], filename: str, prov: dict
           ) -> FetchResult:
    sha, size = expected
    st = path.stat()
    if st.st_size != size:
        raise RevError("VERIFY_FAILED", f"{path} is not {source.describe()}: {st.st_size} bytes, pinned size "
                                        f"is {size}")
    got = cache.artifact(sha, size)
    if got is not None:
        digest, _ = sha256_file(path)
        if digest != sha:
            raise RevError("VERIFY_FAILED", f"{path} is not {source.describe()}: sha256 {digest}, pinned {sha}")
        return FetchResult(got, source, "cache", sha, size, filename, None, True, prov)
    if not cache.shared and cache.has(sha):  # add_local would not hash this file: check it here
        digest, _ = sha256_file(path)
        if digest != sha:
            raise RevError("VERIFY_FAILED", f"{path} is not {source.describe()}: sha256 {digest}, pinned {sha}")
    # otherwise one pass: the copy into the cache hashes on the way and keeps nothing unless it is the pin
    try:
        dest = cache.add_local(path, sha)
    except RevError as exc:
        if exc.code != "VERIFY_FAILED":
            raise
        raise RevError("VERIFY_FAILED", f"{path} is not {source.describe()}: its sha256 is not the pinned "
                                        f"{sha}; nothing was kept") from None
    return FetchResult(dest, source, "local", sha, size, filename, None, True, prov)


def _find_in_folder(folder: Path, expected: tuple[str, int]) -> list[Path]:
    """Files in ``folder`` that may be the pinned artifact: SHA256SUMS entries first, then any file
    of the pinned size (the caller hashes them)."""
    sha, size = expected
    out: list[Path] = []
    sums = folder / EXPORT_SUMS
    if sums.is_file():
        for line in sums.read_text(errors="replace").splitlines():
            parts = line.strip().split(None, 1)
            if len(parts) == 2 and parts[0].lower() == sha:
                cand = folder / parts[1].lstrip("*")
                if cand.is_file() and cand.stat().st_size == size:
                    out.append(cand)
    for dirpath, dirnames, filenames in os.walk(folder):
        if len(Path(dirpath).relative_to(folder).parts) >= 8:
            dirnames[:] = []
        for f in sorted(filenames):
            cand = Path(dirpath) / f
            try:
                if not cand.is_symlink() and cand.stat().st_size == size and cand not in out:
                    out.append(cand)
            except OSError:
                continue
    return out


# --------------------------------------------------------------------------------------------
# many sources, and exports


@dataclass
class SourceFetch:
    """What happened to one source in a `fetch` run."""

    manifest: Manifest
    source: Source
    status: str  # "cached" | "downloaded" | "local" | "local-tree" | "failed" | "not-tried"
    result: FetchResult | None = None
    error: RevError | None = None

    def to_json(self) -> dict:
        out = {"manifest": self.manifest.id, "source": self.source.name, "kind": self.source.kind,
               "package": self.source.package, "version": self.source.version,
               "rocblas_version": str(self.source.rocblas_version), "cross_version": self.source.cross_version,
               "status": self.status}
        if self.result is not None:
            out.update(self.result.to_json())
        out["error"] = self.error.to_json() if self.error is not None else None
        return out


_STATUS = {"cache": "cached", "download": "downloaded", "local": "local", "local-tree": "local-tree"}


def fetch_manifests(manifests: list[Manifest], cache: Path | Cache, *, mirror: str | None = None,
                    local: Path | None = None, sources: Iterable[str] = (), all_sources: bool = False,
                    progress_for: Callable[[Source], Callable[[int, int | None], None] | None] | None = None,
                    root: Root | None = None, keyrings: Iterable[Path] = (),
                    downloader: Downloader | None = None) -> list[SourceFetch]:
    """For each manifest: its sources in order, stopping at the first that works (version-matched
    sources only), or every source (``all_sources``), or the ones named in ``sources``."""
    cache = cache if isinstance(cache, Cache) else Cache(cache)
    wanted = set(sources)
    out: list[SourceFetch] = []
    for m in manifests:
        if wanted:
            cands = [s for s in m.sources if s.name in wanted]
        elif all_sources:
            cands = list(m.sources)
        else:
            cands = [s for s in m.sources if not s.cross_version]
        done = False
        for s in cands:
            if done and not (all_sources or wanted):
                out.append(SourceFetch(m, s, "not-tried"))
                continue
            prog = progress_for(s) if progress_for else None
            try:
                r = fetch_source(s, cache, mirror=mirror, local=local, progress=prog, root=root, keyrings=keyrings,
                                 downloader=downloader)
            except RevError as exc:
                out.append(SourceFetch(m, s, "failed", error=exc))
                continue
            finally:
                close = getattr(prog, "close", None)
                if close:
                    close()
            out.append(SourceFetch(m, s, _STATUS[r.origin], r))
            done = True
        for s in m.sources:
            if s not in cands:
                out.append(SourceFetch(m, s, "not-tried"))
    return out


def export_artifacts(results: Iterable[FetchResult], dest: Path) -> list[dict]:
    """Copy artifacts (and the signed index files that pin them) to ``dest`` for other hosts:
    ``dest/sources/<source>/<repository path>`` plus ``SHA256SUMS`` and ``rocmrevive-export.json``.
    ``rocmrevive fetch --from dest`` on another host verifies everything again.

    ``dest`` is opened through ``rocmrevive.fs`` (refused when another user could write it, unless
    opted in); every file is written as a fresh ``O_EXCL`` temporary renamed into place, never
    through a link. Lines of an earlier ``SHA256SUMS`` are kept only for files that are still there
    and hash to what the line says."""
    dest = Path(dest)
    entries: dict[str, dict] = {}
    index = {"schema_version": 1, "sources": []}
    with Dir.open(dest, create=True, what="export folder") as dd:
        for r in results:
            if r.origin == "local-tree" or r.sha256 is None:
                continue
            base = Path("sources") / r.source.name
            files = [(base / r.filename, Path(r.path), r.sha256)]
            files += [(base / rel, Path(p), None) for rel, p in sorted(r.index_files.items())]
            for rel, src, sha in files:
                if ".." in rel.parts or not all(printable_name(x) for x in rel.parts):
                    raise RevError("VERIFY_FAILED", f"refusing to export {ascii(str(rel))}: '..' or a control "
                                                    f"character in a repository path")
                digest, size = _copy_verified(src, dd, rel, sha)
                entries[str(rel)] = {"path": str(rel), "sha256": digest, "size": size}
            index["sources"].append({"manifest": r.source.manifest_id, "source": r.source.name,
                                     "file": str(base / r.filename), "sha256": r.sha256, "size": r.size,
                                     "provenance": r.provenance})
        # keep entries of earlier exports into the same folder: only lines that are still true
        try:
            old_sums = dd.read_bytes(EXPORT_SUMS, max_size=MAX_EXPORT_META).decode("utf-8", "replace")
        except (OSError, RevError):
            old_sums = ""
        for line in old_sums.splitlines():
            parts = line.strip().split(None, 1)
            if len(parts) != 2 or parts[1] in entries or not _HEXSHA.match(parts[0]):
                continue
            if not all(printable_name(x) for x in Path(parts[1]).parts):
                continue
            found = _hash_in(dd, Path(parts[1]))
            if found is not None and found[0] == parts[0]:
                entries[parts[1]] = {"path": parts[1], "sha256": found[0], "size": found[1]}
        lines = [f"{e['sha256']}  {p}\n" for p, e in sorted(entries.items())]
        dd.write_atomic(EXPORT_SUMS, "".join(lines).encode())
        try:
            prev = json.loads(dd.read_bytes(EXPORT_INDEX, max_size=MAX_EXPORT_META))
            new = {(x["manifest"], x["source"]) for x in index["sources"]}
            keep = [s for s in prev.get("sources", []) if isinstance(s, dict)
                    and (s.get("manifest"), s.get("source")) not in new and s.get("file") in entries
                    and entries[s["file"]]["sha256"] == s.get("sha256")]
            index["sources"] = keep + index["sources"]
        except (OSError, RevError, ValueError, AttributeError, TypeError):
            pass
        dd.write_atomic(EXPORT_INDEX, (json.dumps(index, indent=2, sort_keys=True) + "\n").encode())
    return [entries[k] for k in sorted(entries)]


MAX_EXPORT_META = 16 << 20
_HEXSHA = re.compile(r"^[0-9a-f]{64}$")


def _walk_to(dd: Dir, rel: Path, *, create: bool) -> Dir | None:
    """The folder of ``rel`` below ``dd`` (each component opened without following a link)."""
    d = dd
    for part in rel.parts[:-1]:
        try:
            nd = d.sub(part, create=create)
        except FileNotFoundError:
            nd = None
        if d is not dd:
            d.close()
        if nd is None:
            return None
        d = nd
    return d


def _hash_in(dd: Dir, rel: Path) -> tuple[str, int] | None:
    """(sha256, size) of the regular file ``rel`` below ``dd``, or None (never through a link)."""
    if ".." in rel.parts or rel.is_absolute() or not rel.parts:
        return None
    try:
        d = _walk_to(dd, rel, create=False)
    except (OSError, RevError, ValueError):
        return None
    if d is None:
        return None
    try:
        fd = d.open_read(rel.parts[-1])
    except (OSError, RevError, ValueError):
        return None
    finally:
        if d is not dd:
            d.close()
    try:
        return hash_fd(fd)
    finally:
        os.close(fd)


def _copy_verified(src: Path, dd: Dir, rel: Path, sha: str | None) -> tuple[str, int]:
    if sha is not None:
        have = _hash_in(dd, rel)
        if have is not None and have[0] == sha:
            return have
    d = _walk_to(dd, rel, create=True)
    try:
        fd = open_regular(src)
        try:
            try:
                return d.copy_in(rel.parts[-1], fd, expect_sha256=sha)
            except RevError as exc:
                if exc.code == "VERIFY_FAILED" and sha is not None:
                    raise RevError("VERIFY_FAILED", f"{src} no longer matches its sha256 in the cache; run "
                                                    f"`rocmrevive fetch` again") from None
                raise
        finally:
            os.close(fd)
    finally:
        if d is not dd:
            d.close()
