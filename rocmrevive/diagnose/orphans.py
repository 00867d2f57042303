"""Files rocmrevive installed that no journal records any more (the state folder was removed or
lost): recognised because they are byte for byte the members of a manifest's artifact as an
install extracted it into the cache (``<cache>/extracted/<sha256[:32]>-<manifest>/index.json``).
``status`` names them; ``rollback --orphans`` removes them as one journaled transaction.

    found = find_orphans(Root("/"), cache_dir=Path("/var/cache/rocmrevive"), manifests=ms, known=set())
    found[0].folder, found[0].manifest, len(found[0].files)
    plan = found[0].removal_plan()     # deletes pinned to the recognised bytes
"""
from __future__ import annotations

import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, read_regular
from rocmrevive.hashing import sha256_file
from rocmrevive.rootfs import Root
from rocmrevive.sources.manifest import Manifest
from rocmrevive.trees.installs import find_installs
from rocmrevive.trees.rocblas import find_copies
from rocmrevive.txn.plan import FileChange, Op, Plan

MAX_INDEX = 4 << 20  # an extraction's index.json (a few hundred names)


@dataclass(frozen=True)
class OrphanFile:
    path: str      # machine path
    sha256: str
    size: int


@dataclass(frozen=True)
class Orphans:
    """The files of one library folder that match one cached extraction of a manifest."""

    folder: str                    # machine path of the library folder
    manifest: str                  # manifest id
    artifact: str                  # sha256 prefix of the artifact the files came out of
    source: str | None             # the manifest's source pinned to that artifact, when one is
    files: tuple[OrphanFile, ...]

    def to_json(self) -> dict:
        return {"folder": self.folder, "manifest": self.manifest, "artifact": self.artifact,
                "source": self.source, "files": [f.path for f in self.files],
                "bytes": sum(f.size for f in self.files)}

    def removal_plan(self) -> Plan:
        """Deletes of exactly these files, each pinned to the recognised bytes (the apply refuses
        one that changed since)."""
        changes = [FileChange(f.path, None, None, None, Op.DELETE, f"orphan:{self.manifest}", before_sha256=f.sha256)
                   for f in self.files]
        return Plan(self.folder, changes, {"manifest": self.manifest, "orphans": True,
                                           "source": f"recognised {self.manifest} files"})


def cached_extractions(cache_dir: Path, manifests) -> list[tuple[Manifest, str, dict[str, tuple[str, int]]]]:
    """(manifest, artifact sha256 prefix, {member name: (sha256, size)}) of every extraction an
    install left in a trusted cache; nothing (never an error) when there is none or it is unreadable."""
    by_id = {m.id: m for m in manifests}
    parent = Path(cache_dir) / "extracted"
    try:  # read-only: never create the cache; nothing another user could write is believed
        with Dir.open(parent, allow_shared=False, what="cache") as d:
            names = sorted(d.listdir())
    except (OSError, RevError):
        return []
    out = []
    for name in names:
        sha, _, mid = name.partition("-")
        if len(sha) != 32 or mid not in by_id:
            continue
        listed = _read_index(parent / name / "index.json")
        if listed:
            out.append((by_id[mid], sha, listed))
    return out


def _read_index(p: Path) -> dict[str, tuple[str, int]]:
    try:   # no link followed, a FIFO refused (never waited on), at most MAX_INDEX bytes
        doc = json.loads(read_regular(p, max_size=MAX_INDEX))
    except (OSError, RevError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {n: (v[0], v[1]) for n, v in doc.items()
            if isinstance(n, str) and "/" not in n and n not in (".", "..") and isinstance(v, list) and len(v) == 2
            and isinstance(v[0], str) and isinstance(v[1], int)}


def find_orphans(root: Root, *, cache_dir: Path, manifests, known: set[str]) -> list[Orphans]:
    """Per rocBLAS library folder and cached extraction: the files that are byte for byte that
    extraction's members, that no transaction in ``known`` (machine paths) records and that no
    dpkg package lists (Debian's own librocblas ships gfx906 files with the same bytes)."""
    extractions = cached_extractions(cache_dir, manifests)
    if not extractions:
        return []
    installs, _ = find_installs(root)
    folders = sorted({c.path for c in find_copies(root, installs=installs)})
    packaged = _dpkg_listed(root, folders)
    out = []
    for folder in folders:
        for manifest, sha, listed in extractions:
            files = tuple(f for f in (_same(root, folder, n, want) for n, want in sorted(listed.items()))
                          if f and f.path not in known and f.path not in packaged)
            if files:
                source = next((s.name for s in manifest.sources if s.sha256 and s.sha256.startswith(sha)), None)
                out.append(Orphans(folder, manifest.id, sha, source, files))
    return out


def _same(root: Root, folder: str, name: str, want: tuple[str, int]) -> OrphanFile | None:
    path = f"{folder.rstrip('/')}/{name}"
    real = root.path(path)
    try:
        st = os.lstat(real)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size != want[1]:
        return None  # the size first: only a file that may match is hashed
    try:
        got = sha256_file(real, follow_symlinks=False)
    except OSError:
        return None
    return OrphanFile(path, want[0], want[1]) if got == want else None


def _dpkg_listed(root: Root, folders: list[str]) -> set[str]:
    """Every path under ``folders`` that a dpkg file list names (one read of each list)."""
    info = root.path("/var/lib/dpkg/info")
    try:
        lists = sorted(e for e in os.listdir(info) if e.endswith(".list"))
    except OSError:
        return set()
    prefixes = tuple(f.rstrip("/") + "/" for f in folders)
    out: set[str] = set()
    for e in lists:
        try:
            with open(info / e, "rb") as fh:
                text = fh.read(64 << 20).decode("utf-8", "replace")
        except OSError:
            continue
        out.update(line for line in text.splitlines() if line.startswith(prefixes))
    return out
