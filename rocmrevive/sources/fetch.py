"""Get one manifest source into the cache, verified: from the cache itself, a local copy
(``--from``: ``local``), a Debian mirror (the host's apt configuration or ``--mirror``) or an apt
repository pinned through its signed index (``resolve``).

    r = fetch_source(manifest.sources[0], Path("/var/cache/rocmrevive"), mirror=None)
    Path(r), r.sha256, r.origin          # cache path, "0561...", "download" | "cache" | "local"
    source, r = first_reachable(manifest.sources, lambda s: (s, fetch_source(s, cache)))

``FetchResult`` (``artifact``) is path-like (``os.fspath(r)`` is the verified artifact), so it can
be passed wherever a Path is expected, e.g. to ``extract_selected``.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable, TypeVar
from urllib.parse import urlsplit

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.sources import apt
from rocmrevive.sources.artifact import (
    FetchResult,
    Origin,
    cached,
    key_file,
    remember_resolution,
    remembered_index_files,
    repo_filename,
    resolution_key,
)
from rocmrevive.sources.cache import Cache
from rocmrevive.sources.http import Downloader
from rocmrevive.sources.local import OtherArtifact, from_local
from rocmrevive.sources.manifest import Source
from rocmrevive.sources.resolve import not_found, resolve
from rocmrevive.sources.snapshot import snapshot_base, snapshot_urls

T = TypeVar("T")
C = TypeVar("C")


def first_reachable(candidates: Iterable[C], attempt: Callable[[C], T]) -> T:
    """``attempt`` of the first candidate (a source, a mirror) that can be reached: a network
    failure (NETWORK) moves on to the next, any other error stops; none reachable raises the last
    network failure."""
    last: RevError | None = None
    for candidate in candidates:
        try:
            return attempt(candidate)
        except RevError as exc:
            if exc.code != "NETWORK":
                raise
            last = exc
    assert last is not None
    raise last


def fetch_source(source: Source, cache: Path | os.PathLike | str | Cache, *, mirror: str | None = None,
                 local: Path | os.PathLike | str | None = None,
                 progress: Callable[[int, int | None], None] | None = None,
                 root: Root | None = None, keyrings: Iterable[Path] = (),
                 downloader: Downloader | None = None, others: Iterable[Source] = (),
                 snapshot: str | None = None) -> FetchResult:
    """The verified artifact of ``source`` in ``cache``, downloading (or copying from ``local``)
    only what is missing: from the cache, else the mirror, else (a Debian pin no mirror serves
    any more) Debian's snapshot archive (``snapshot``: its URL, None for Debian's, "none" for
    never; ``sources.snapshot``). Raises RevError: NETWORK (mirror trouble: retry), VERIFY_FAILED (a
    checksum, size or signature is wrong: nothing was kept), USAGE (no mirror configured).

    A ``local`` file of another size is left aside for ``source`` (fetched from the cache or a
    mirror) only when it is the pinned package of one of ``others`` (the run's other sources: a
    rocSPARSE .deb given for the rocSPARSE graft); a file that is no pinned package at all is
    refused, never silently replaced by the cached copy."""
    cache = cache if isinstance(cache, Cache) else Cache(cache)
    root = root or Root("/")
    dl = downloader or Downloader()
    keyrings = [Path(k) for k in keyrings]
    if local is not None:
        try:
            return from_local(source, Path(local), cache, root, keyrings, dl)
        except OtherArtifact as other:
            # a --from file of another package (a rocSPARSE .deb while this is rocBLAS) leaves
            # this source to its normal places: the cache, then the mirror
            size = Path(local).stat().st_size
            if not any(o.pinned and o.size == size for o in others):
                raise RevError("VERIFY_FAILED", f"{other.message}, nor any other package the manifests pin; "
                                                "nothing was changed: give the pinned package with --from, or "
                                                "leave --from out to use the cache or a mirror") from None
            try:
                return _fetch_normally(source, cache, mirror, root, keyrings, dl, progress, snapshot)
            except RevError as exc:
                raise RevError(exc.code, f"{other.message}, and {exc.message}", details=exc.details) from None
    return _fetch_normally(source, cache, mirror, root, keyrings, dl, progress, snapshot)


def _fetch_normally(source: Source, cache: Cache, mirror, root: Root, keyrings: list[Path], dl: Downloader,
                    progress, snapshot: str | None = None) -> FetchResult:
    """From the cache, else from the first reachable mirror (Debian) or the source's repository,
    else (a Debian pin) from the snapshot archive."""
    got = _from_cache(source, cache)
    if got is not None:
        return got
    if source.kind == "debian":
        bases = [_mirror_base(mirror)] if mirror else apt.debian_mirrors(root)
        if not bases:
            raise RevError("USAGE", f"no Debian archive mirror in {root.machine_path(root.path('/etc/apt'))}"
                                    f"/sources.list(.d) to fetch {source.package} {source.version} from; "
                                    f"pass --mirror URL (a Debian mirror) or --from a copy, or set mirror = \"URL\" once "
                                    f"in /etc/rocmrevive/config.toml")
        snap = snapshot_base(snapshot)
        urls = snapshot_urls(snap, source) if snap is not None and source.pin is not None else []
        if urls:
            return _mirrors_then_snapshot(bases, snap, urls, source, cache, root, keyrings, dl, progress)
    elif source.repo:
        bases = [source.repo]
    else:  # the manifest check requires a repo for every source not from Debian
        raise RevError("USAGE", f"{source.describe()}: its manifest names no repository to fetch it from")
    return first_reachable(bases, lambda base: _fetch_from(base, source, cache, root, keyrings, dl, progress))


def _mirrors_then_snapshot(bases: list[str], snap, urls: list[tuple[str, str]], source: Source, cache: Cache,
                           root: Root, keyrings: list[Path], dl: Downloader, progress) -> FetchResult:
    """The mirrors in turn, then the snapshot archive's URLs in turn (each download checked by the
    pin). A mirror's checksum error stops, as it always has; the snapshot's is one more place that
    failed. None worked: one RevError naming each place and what it said (VERIFY_FAILED when a
    place served other bytes, else NETWORK); nothing was kept."""
    tried: list[tuple[str, RevError]] = []
    for base in bases:
        try:
            return _fetch_from(base, source, cache, root, keyrings, dl, progress)
        except RevError as exc:
            if exc.code != "NETWORK":
                raise
            tried.append((f"the mirror {base}", exc))
    why = ("not on the mirror any more" if all(not_found(e) or " is not in " in e.message for _, e in tried)
           else "the mirror could not be reached")
    assert source.pin is not None
    for url, how in urls:
        try:
            path, origin = _download(url, source, *source.pin, cache, dl, progress)
        except RevError as exc:
            if exc.code not in ("NETWORK", "VERIFY_FAILED"):
                raise
            tried.append((f"Debian's snapshot archive {snap} ({how})", exc))
            if any(url.startswith(host + "/") for host in dl.unreachable):
                break  # nothing answers there: the other form would say the same
            continue
        note = f"{why}: from Debian's snapshot archive ({how})"
        return FetchResult(path, source, origin, source.sha256, source.size, repo_filename(source), url, True,
                           {"url": url, "pinned_by": "manifest", "from": "snapshot", "fallback": note})
    code = "VERIFY_FAILED" if any(e.code == "VERIFY_FAILED" for _, e in tried) else "NETWORK"
    said = "; ".join(f"{where}: {_short(e.message)}" for where, e in tried)
    raise RevError(code, f"{source.package} {source.version}: no place had it ({said}); nothing was kept: "
                         f"give a copy with --from, or check --mirror and --snapshot",
                   details={"tried": [{"place": where, "code": e.code, "message": e.message} for where, e in tried]})


def _short(message: str) -> str:
    """A place's message without its advice (the line ends with one advice for all)."""
    for cut in ("; try another mirror", "; check the network", " (not retried", "; the mirror may not",
                "; retry later", "; the file was deleted", "; refused (wrong mirror"):
        message = message.split(cut, 1)[0]
    return message


def _from_cache(source: Source, cache: Cache) -> FetchResult | None:
    """The artifact already in the cache: by the manifest's pin, or by a signed resolution recorded
    earlier."""
    pin = source.pin
    if pin is not None:
        got = cache.artifact(*pin)
        return None if got is None else cached(source, got, *pin, repo_filename(source), None, {})
    rec = cache.load_resolution(resolution_key(source))
    if not rec:
        return None
    got = cache.artifact(rec["sha256"], rec.get("size"))
    if got is None:
        return None
    return cached(source, got, rec["sha256"], rec["size"], rec["filename"], rec.get("url"),
                  rec.get("provenance", {}), remembered_index_files(cache, source, rec))


def _mirror_base(mirror: str) -> str:
    """``--mirror`` as a base URL; a malformed one is a usage error (exit 2), not a crash."""
    try:
        u = urlsplit(mirror)
        u.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        raise RevError("USAGE", f"--mirror {mirror!r} is not a URL ({exc})") from None
    if u.scheme not in ("http", "https", "file") or (u.scheme != "file" and not u.hostname):
        raise RevError("USAGE", f"--mirror {mirror!r} is not an http://, https:// or file:// URL of a Debian mirror")
    return mirror.rstrip("/")


def _download(url: str, source: Source, sha: str, size: int, cache: Cache, dl: Downloader, progress
              ) -> tuple[Path, Origin]:
    with cache.lock(sha):
        got = cache.artifact(sha, size)
        if got is not None:
            return got, Origin.CACHE
        part = cache.partial_path(sha)
        dl.download(url, part, size=size, sha256=sha, progress=progress)
        return cache.commit(part, sha), Origin.DOWNLOAD


def _fetch_from(base: str, source: Source, cache: Cache, root: Root, keyrings: list[Path], dl: Downloader,
                progress) -> FetchResult:
    base = base.rstrip("/")
    pin = source.pin
    if pin is not None and source.filename and not source.signed_by:
        url = f"{base}/{source.filename}"
        try:
            path, origin = _download(url, source, *pin, cache, dl, progress)
            return FetchResult(path, source, origin, source.sha256, source.size, source.filename, url, True,
                               {"url": url, "pinned_by": "manifest"})
        except RevError as exc:
            if not not_found(exc):
                raise
            # the pool file is gone: ask the index what this mirror has, for a useful message
            resolve(base, source, root, keyrings, dl, cache)
            raise
    entry, prov, files = resolve(base, source, root, keyrings, dl, cache)
    url = f"{base}/{entry.filename}"
    path, origin = _download(url, source, entry.sha256, entry.size, cache, dl, progress)
    prov = {**prov, "url": url}
    if source.pinned:
        index_files = key_file(cache, source)
    else:
        index_files = remember_resolution(cache, source, entry, url, prov, files)
    return FetchResult(path, source, origin, entry.sha256, entry.size, entry.filename, url, True, prov, index_files)
