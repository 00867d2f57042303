"""Exports for other hosts (``fetch --to DIR``): verified artifacts and the signed index files that
pin them, laid out as ``DIR/sources/<source>/<repository path>`` with a ``SHA256SUMS`` and a
``rocmrevive-export.json``. ``rocmrevive fetch --from DIR`` on another host verifies everything again.

    files = export_artifacts([fetch_result], Path("/srv/gfx906"))   # [{"path", "sha256", "size"}]
"""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Iterable, Literal, overload

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, open_regular, printable_name
from rocmrevive.hashing import hash_fd
from rocmrevive.sources.artifact import FetchResult, Origin

EXPORT_SUMS = "SHA256SUMS"
EXPORT_INDEX = "rocmrevive-export.json"
MAX_EXPORT_META = 16 << 20
_HEXSHA = re.compile(r"^[0-9a-f]{64}$")


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
    exported: list[dict] = []
    with Dir.open(dest, create=True, what="export folder") as dd:
        for r in results:
            if r.origin is Origin.LOCAL_TREE or r.sha256 is None:
                continue
            exported.append(_export_one(dd, r, entries))
        # keep entries of earlier exports into the same folder: only lines that are still true
        _keep_earlier_sums(dd, entries)
        lines = [f"{e['sha256']}  {p}\n" for p, e in sorted(entries.items())]
        dd.write_atomic(EXPORT_SUMS, "".join(lines).encode())
        index = {"schema_version": 1, "sources": _earlier_index(dd, exported, entries) + exported}
        dd.write_atomic(EXPORT_INDEX, (json.dumps(index, indent=2, sort_keys=True) + "\n").encode())
    return [entries[k] for k in sorted(entries)]


def _export_one(dd: Dir, r: FetchResult, entries: dict[str, dict]) -> dict:
    """Copy one artifact and its index files into ``dd`` (adding them to ``entries``); returns its
    line of the export index."""
    base = Path("sources") / r.source.name
    files = [(base / r.filename, Path(r.path), r.sha256)]
    files += [(base / rel, Path(p), None) for rel, p in sorted(r.index_files.items())]
    for rel, src, sha in files:
        if ".." in rel.parts or not all(printable_name(x) for x in rel.parts):
            raise RevError("VERIFY_FAILED", f"refusing to export {ascii(str(rel))}: '..' or a control "
                                            f"character in a repository path")
        digest, size = _copy_verified(src, dd, rel, sha)
        entries[str(rel)] = {"path": str(rel), "sha256": digest, "size": size}
    return {"manifest": r.source.manifest_id, "source": r.source.name, "file": str(base / r.filename),
            "sha256": r.sha256, "size": r.size, "provenance": r.provenance}


def _keep_earlier_sums(dd: Dir, entries: dict[str, dict]) -> None:
    """Add the lines of an earlier ``SHA256SUMS`` whose files are still there with that hash."""
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


def _earlier_index(dd: Dir, exported: list[dict], entries: dict[str, dict]) -> list[dict]:
    """The earlier export index's sources that this export did not replace and whose file is
    still listed with the same hash."""
    try:
        prev = json.loads(dd.read_bytes(EXPORT_INDEX, max_size=MAX_EXPORT_META))
        new = {(x["manifest"], x["source"]) for x in exported}
        return [s for s in prev.get("sources", []) if isinstance(s, dict)
                and (s.get("manifest"), s.get("source")) not in new and s.get("file") in entries
                and entries[s["file"]]["sha256"] == s.get("sha256")]
    except (OSError, RevError, ValueError, AttributeError, TypeError):
        return []


@overload
def _walk_to(dd: Dir, rel: Path, *, create: Literal[True]) -> Dir: ...
@overload
def _walk_to(dd: Dir, rel: Path, *, create: bool) -> Dir | None: ...


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
