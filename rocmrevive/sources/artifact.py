"""A source's verified artifact (``FetchResult``), and what the cache remembers of how an unpinned
source was resolved through its signed index (the record, the index files, the signing key).

    r = FetchResult(path, source, Origin.DOWNLOAD, sha, size, "pool/main/r/rocblas/x.deb", url)
    Path(r), r.basename                                # the cached file, "x.deb"
    index_files = remember_resolution(cache, source, entry, url, provenance, files)

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

from rocmrevive.sources.apt import PackageEntry
from rocmrevive.sources.cache import Cache
from rocmrevive.sources.manifest import Source
from rocmrevive.strenum import StrEnum


class Origin(StrEnum):
    """Where a ``FetchResult`` came from (its JSON ``origin``)."""

    CACHE = "cache"              # already there
    DOWNLOAD = "download"
    LOCAL = "local"              # copied from --from into the cache
    LOCAL_TREE = "local-tree"    # an unpacked folder used in place: not checksummed, ``verified`` False


@dataclass
class FetchResult(os.PathLike):
    """A verified artifact, with its ``Origin``."""

    path: Path
    source: Source
    origin: Origin
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


def repo_filename(source: Source) -> str:
    """The artifact's path in its repository: the manifest's ``filename``, else Debian's pool name."""
    return source.filename or f"{source.package}_{source.version.split(':')[-1]}_{source.arch}.deb"


def cached(source: Source, path: Path, sha, size, filename, url, provenance, index_files=None) -> FetchResult:
    """The artifact found in the cache."""
    return FetchResult(path, source, Origin.CACHE, sha, size, filename, url, True, dict(provenance),
                       index_files or {})


def resolution_key(source: Source) -> str:
    """The cache's name for what a signed index said about ``source`` (changes with anything that
    could change the answer: repository, suite, package, version, key)."""
    ident = json.dumps([source.kind, source.repo, source.suite, source.component, source.arch, source.package,
                        source.version, source.signed_by], sort_keys=True)
    slug = re.sub(r"[^a-z0-9.+-]+", "-", f"{source.manifest_id}--{source.name}".lower())
    return f"{slug}--{hashlib.sha256(ident.encode()).hexdigest()[:12]}"


def remember_resolution(cache: Cache, source: Source, entry: PackageEntry, url: str | None, provenance: dict,
                        files: dict[str, bytes]) -> dict[str, Path]:
    """Record what the signed index said about ``source`` (and keep the index files that say it,
    for ``fetch --to``); returns {repo-relative path: cached copy}, the signing key's file included."""
    names = {rel: rel.replace("/", "__") for rel in files}
    record = {"sha256": entry.sha256, "size": entry.size, "filename": entry.filename, "url": url,
              "provenance": provenance, "index_files": names, "resolved_at": int(time.time())}
    kept = cache.save_resolution(resolution_key(source), record, {names[rel]: data for rel, data in files.items()})
    index_files = {rel: kept[names[rel]] for rel in files}
    index_files.update(key_file(cache, source))
    return index_files


def remembered_index_files(cache: Cache, source: Source, rec: dict) -> dict[str, Path]:
    """The index files kept with a resolution record (and the signing key's file)."""
    key = resolution_key(source)
    out = {}
    for rel, name in rec.get("index_files", {}).items():
        p = cache.resolved_file(key, name) if isinstance(name, str) and _safe_name(name) else None
        if p is not None:
            out[rel] = p
    out.update(key_file(cache, source))
    return out


def _safe_name(name: str) -> bool:
    return bool(name) and "/" not in name and name not in (".", "..")


def key_file(cache: Cache, source: Source) -> dict[str, Path]:
    """{file name: cached copy} of the key that signs ``source``'s index, when one was saved."""
    if not source.signed_by:
        return {}
    kc = cache.key_file(source.signed_by)
    return {kc.name: kc} if kc is not None else {}
