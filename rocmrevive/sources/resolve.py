"""Find a source's package in an apt repository's index: through the signed ``InRelease`` (the
pinned fingerprint decides) when the source names a key, else the plain ``Packages`` index checked
against the manifest's pin.

    entry, provenance, files = resolve("https://deb.debian.org/debian", source, root, [], dl, cache)
    entry.filename, entry.sha256, entry.size     # "pool/main/r/rocblas/...deb", "0561...", 12345
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.sources import apt
from rocmrevive.sources.cache import Cache
from rocmrevive.sources.http import Downloader
from rocmrevive.sources.manifest import Source

MAX_INRELEASE = 16 << 20
MAX_KEY = 1 << 20


def not_found(exc: RevError) -> bool:
    """A server answered that the file is not there (not a transient network failure)."""
    return exc.code == "NETWORK" and "not found" in exc.message


def resolve(base: str, source: Source, root: Root, keyrings: list[Path], dl: Downloader, cache: Cache
            ) -> tuple[apt.PackageEntry, dict, dict[str, bytes]]:
    """Find the package in the repository's index (through the signed InRelease when the source
    names a key). Returns (entry, provenance, {repo-relative path: bytes} of the index files)."""
    prov: dict = {"repo": base, "suite": source.suite}
    if source.signed_by:
        path, raw, files = _signed_index(base, source, root, keyrings, dl, cache, prov)
    else:
        path, raw, files = _plain_index(base, source, dl, prov)
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


def _signed_index(base: str, source: Source, root: Root, keyrings: list[Path], dl: Downloader, cache: Cache,
                  prov: dict) -> tuple[str, bytes, dict[str, bytes]]:
    """The Packages index the signed InRelease pins: (its path, its bytes, the files of the chain)."""
    dists = f"dists/{source.suite}"
    inrel_url = f"{base}/{dists}/InRelease"
    data = dl.get_bytes(inrel_url, max_size=MAX_INRELEASE)
    text, signer = _verify_with_keys(data, source, root, keyrings, dl, cache, inrel_url)
    rel = apt.parse_release(text.decode("utf-8", "replace"))
    if source.suite not in (rel.suite, rel.codename):
        raise RevError("VERIFY_FAILED", f"{inrel_url} is for suite {rel.suite or '?'} / codename "
                                        f"{rel.codename or '?'}, not {source.suite}; refused")
    path, size, digest = apt.pick_index(rel, source.component, source.arch)
    raw = dl.get_bytes(f"{base}/{dists}/{path}", max_size=size, size=size, sha256=digest)
    prov.update({"signed_by": signer, "inrelease_sha256": hashlib.sha256(data).hexdigest(),
                 "index": f"{dists}/{path}", "index_sha256": digest, "pinned_by": "signed index"})
    return path, raw, {f"{dists}/InRelease": data, f"{dists}/{path}": raw}


def _plain_index(base: str, source: Source, dl: Downloader, prov: dict) -> tuple[str, bytes, dict[str, bytes]]:
    """The first Packages index the repository has (.xz, .gz, plain): trusted only through the
    manifest's pin on the package."""
    dists = f"dists/{source.suite}"
    for ext in (".xz", ".gz", ""):
        path = f"{source.component}/binary-{source.arch}/Packages{ext}"
        try:
            raw = dl.get_bytes(f"{base}/{dists}/{path}", max_size=apt.MAX_INDEX_BYTES)
        except RevError as exc:
            if not not_found(exc):
                raise
            continue
        prov.update({"index": f"{dists}/{path}", "index_sha256": hashlib.sha256(raw).hexdigest(),
                     "pinned_by": "manifest"})
        return path, raw, {}
    raise RevError("NETWORK", f"{base}/{dists}: no Packages index for {source.component}/{source.arch}; "
                              f"is {base} an apt repository with suite {source.suite}?")


def _verify_with_keys(data: bytes, source: Source, root: Root, keyrings: list[Path], dl: Downloader,
                      cache: Cache, where: str) -> tuple[bytes, str]:
    fpr = source.signed_by
    assert fpr is not None
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
