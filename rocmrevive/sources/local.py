"""Local copies given with ``--from``: a file, a folder of files, an export made by ``fetch --to``,
or an unpacked tree. Nothing is used unless it is the pinned artifact (size and sha256, from the
manifest or a signed index cached earlier); an unpacked tree is used in place, unverified, and its
code objects are checked when installed.

    r = from_local(source, Path("/media/usb/gfx906"), cache, root, keyrings, downloader)
    r.origin        # "local" (copied into the cache), "cache" (already there), "local-tree"
"""
from __future__ import annotations

import os
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.sources.artifact import FetchResult, Origin, remember_resolution, repo_filename, resolution_key
from rocmrevive.sources.cache import Cache, sha256_file
from rocmrevive.sources.export import EXPORT_SUMS
from rocmrevive.sources.http import Downloader
from rocmrevive.sources.manifest import Source
from rocmrevive.sources.resolve import resolve
from rocmrevive.sources.unpack import norm_prefix


class OtherArtifact(RevError):
    """--from names a file that is not this source's artifact at all (another size)."""

    def __init__(self, message: str):
        super().__init__("VERIFY_FAILED", message)


def from_local(source: Source, p: Path, cache: Cache, root: Root, keyrings: list[Path], dl: Downloader
               ) -> FetchResult:
    """The artifact of ``source`` found at ``p`` (a file, an export, a folder holding the pinned
    file, an unpacked tree: tried in that order). Raises OtherArtifact for a file of another size,
    RevError VERIFY_FAILED when nothing there is the pinned artifact, USAGE when ``p`` is missing."""
    if not p.exists():
        raise RevError("USAGE", f"--from {p}: no such file or folder")
    expected, filename, prov = _expected(source, p, cache)
    if p.is_file():
        return _from_file(source, p, cache, expected, filename, prov)
    export = p / "sources" / source.name
    if export.is_dir() and not source.pinned and expected is None:
        return _from_export(source, p, export, cache, root, keyrings, dl)
    if expected is not None:
        for cand in _find_in_folder(p, expected):
            try:
                return _adopt(cand, source, cache, expected, filename, prov)
            except RevError:
                continue
    tree = p / norm_prefix(source.member_prefix)
    if tree.is_dir():
        return FetchResult(p, source, Origin.LOCAL_TREE, None, None, str(p), None, False,
                           {"from": str(p), "pinned_by": None,
                            "warning": "an unpacked folder: no package checksum; the code objects are verified "
                                       "when installed"})
    if expected is None:
        raise RevError("VERIFY_FAILED", f"--from {p}: no export of {source.name} there, and {source.describe()} has "
                                        f"no pinned sha256 to look for")
    raise RevError("VERIFY_FAILED", f"--from {p}: no file with the pinned sha256 {expected[0][:16]}... "
                                    f"({expected[1]} bytes) of {source.describe()}, and no "
                                    f"{source.member_prefix} folder")


def _expected(source: Source, p: Path, cache: Cache) -> tuple[tuple[str, int] | None, str, dict]:
    """What the artifact must be: (sha256, size) from the manifest or a cached signed resolution
    (None when neither), its repository file name, and the provenance so far."""
    prov: dict = {"from": str(p)}
    if source.pin is not None:
        prov["pinned_by"] = "manifest"
        return source.pin, repo_filename(source), prov
    rec = cache.load_resolution(resolution_key(source))
    if not rec:
        return None, repo_filename(source), prov
    prov.update(rec.get("provenance", {}))
    prov["pinned_by"] = "signed index (cached)"
    return (rec["sha256"], rec["size"]), rec["filename"], prov


def _from_file(source: Source, p: Path, cache: Cache, expected: tuple[str, int] | None, filename: str,
               prov: dict) -> FetchResult:
    if expected is None:
        raise RevError("VERIFY_FAILED", f"--from {p}: {source.describe()} has no pinned sha256 and no verified "
                                        f"index is cached, so the file cannot be checked; run `rocmrevive fetch` "
                                        f"once with network, or copy a folder made by `rocmrevive fetch --to`")
    if p.stat().st_size != expected[1]:
        raise OtherArtifact(f"--from {p} is not {source.describe()} ({p.stat().st_size} bytes, the pinned "
                            f"size is {expected[1]})")
    return _adopt(p, source, cache, expected, filename, prov)


def _from_export(source: Source, p: Path, export: Path, cache: Cache, root: Root, keyrings: list[Path],
                 dl: Downloader) -> FetchResult:
    """An export made by ``fetch --to``: a small repository of its own; the signed chain is
    verified again (with the keys the export carries, trusted only through the fingerprint)."""
    entry, prov, files = resolve(f"file://{export.resolve()}", source, root,
                                 keyrings + sorted(export.glob("*.gpg")), dl, cache)
    candidate = export / entry.filename
    if not candidate.is_file():
        raise RevError("VERIFY_FAILED", f"--from {p}: the export lacks {entry.filename}")
    res = _adopt(candidate, source, cache, (entry.sha256, entry.size), entry.filename, {**prov, "from": str(p)})
    res.index_files = remember_resolution(cache, source, entry, None, res.provenance, files)
    return res


def _adopt(path: Path, source: Source, cache: Cache, expected: tuple[str, int], filename: str, prov: dict
           ) -> FetchResult:
    sha, size = expected
    st = path.stat()
    if st.st_size != size:
        raise RevError("VERIFY_FAILED", f"{path} is not {source.describe()}: {st.st_size} bytes, pinned size "
                                        f"is {size}")
    got = cache.artifact(sha, size)
    if got is not None:
        _check_sha(path, source, sha)
        return FetchResult(got, source, Origin.CACHE, sha, size, filename, None, True, prov)
    if not cache.shared and cache.has(sha):  # add_local would not hash this file: check it here
        _check_sha(path, source, sha)
    # otherwise one pass: the copy into the cache hashes on the way and keeps nothing unless it is the pin
    try:
        dest = cache.add_local(path, sha)
    except RevError as exc:
        if exc.code != "VERIFY_FAILED":
            raise
        raise RevError("VERIFY_FAILED", f"{path} is not {source.describe()}: its sha256 is not the pinned "
                                        f"{sha}; nothing was kept") from None
    return FetchResult(dest, source, Origin.LOCAL, sha, size, filename, None, True, prov)


def _check_sha(path: Path, source: Source, sha: str) -> None:
    digest, _ = sha256_file(path)
    if digest != sha:
        raise RevError("VERIFY_FAILED", f"{path} is not {source.describe()}: sha256 {digest}, pinned {sha}")


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
