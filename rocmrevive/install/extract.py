"""Fetching a manifest's source and extracting its members, once: the extraction is cached per
(artifact, manifest) and re-hashed on every reuse; an unpacked ``--from`` folder (no artifact
hash to key the cache on) is extracted into the install's own staging area.

    source, fetched = fetch_first(root, manifest.sources, cache_dir, mirror=None, from_path=None,
                                  log=print, progress=None)
    files = extracted(fetched, manifest, source, cache_dir, print, area)   # {name: Member}
    files["TensileLibrary_lazy_gfx906.dat"].path, .sha256, .size
"""
from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Callable, NamedTuple

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, disk_full, printable_name
from rocmrevive.hashing import sha256_file
from rocmrevive.install.core import feed
from rocmrevive.sources.cache import Cache
from rocmrevive.sources.fetch import fetch_source, first_reachable
from rocmrevive.sources.http import Downloader
from rocmrevive.sources.unpack import extract_selected

Log = Callable[[str], None]


class Member(NamedTuple):
    """One extracted member: where it is, and the sha256 and size the extraction recorded as it
    wrote those bytes (re-checked on every reuse of the cache)."""

    path: Path
    sha256: str
    size: int


_DOWNLOADER: list = []


def run_downloader():
    """The one Downloader of this process (a CLI run): a mirror that refused the rocBLAS download
    is not tried again for each host library."""
    if not _DOWNLOADER:
        _DOWNLOADER.append(Downloader())
    return _DOWNLOADER[0]


def fetch_first(root, sources, cache_dir: Path, *, mirror, from_path, log: Log, progress, manifests=(),
                snapshot: str | None = None):
    """(source, FetchResult) of the first source that can be fetched; a network failure moves on
    to the next source, any other error stops. ``manifests``: all of the run's, whose pinned
    packages a ``--from`` file may be instead (then it is left to them, not refused)."""
    def attempt(src):
        # a --from is read where it is, not fetched: say so (and which of the manifest's sources it stands for)
        log(f"reading {from_path} as {src.describe()}" if from_path else f"fetching {src.describe()}")
        dl = run_downloader()
        dl.notice = log  # a failed attempt that is tried again is told at once ("no answer from HOST ...")
        got = fetch_source(src, cache_dir, mirror=mirror, local=from_path, root=root,
                           progress=feed(progress, "downloading", "bytes"), downloader=dl,
                           others=[s for m in manifests for s in m.sources], snapshot=snapshot)
        if got.provenance.get("fallback"):
            log(f"{src.package} {src.version}: {got.provenance['fallback']}")
        return src, got

    return first_reachable(sources, attempt)


def extracted(fetched, manifest, source, cache_dir: Path, log: Log, area: Path,
              progress=None) -> dict[str, Member]:
    """The manifest's members of a verified artifact, extracted once per (artifact, manifest)
    into the cache and re-hashed on every reuse: a second tree, a re-install after an upgrade
    or a fleet node with a shared cache skips the decompression (most of an install's time)."""
    if not fetched.sha256 or Cache(cache_dir).private_writes:
        # an unpacked folder given with --from has no artifact hash to key a cache entry on, and
        # nothing another user can write is reused (docs/security.md): extract privately
        log(f"extracting {manifest.id} files from {fetched.basename}")
        return {f.name: Member(f.path, f.sha256, f.size) for f in _members(fetched, source, manifest, area / "files",
                                                                           progress)}
    key = _extracted_key(fetched.sha256, manifest)
    # one extraction per (artifact, manifest) at a time: a concurrent install waits, then reuses it
    def waiting(who: str) -> None:
        log(f"waiting for another rocmrevive{who}: it is extracting {fetched.basename} into the cache "
            f"({Path(cache_dir) / 'partial' / f'extract-{key}.lock'}); this run goes on when it is done")

    with Cache(cache_dir).lock(f"extract-{key}", waiting):
        return _extracted_locked(fetched, manifest, source, cache_dir, key, log, progress)


def _extracted_locked(fetched, manifest, source, cache_dir: Path, key: str, log: Log,
                      progress=None) -> dict[str, Member]:
    parent = cache_dir / "extracted"
    done = parent / key
    index = done / "index.json"
    if _real_dir(done):
        try:
            listed = json.loads(index.read_text())
            files = {n: Member(done / "files" / n, *listed[n]) for n in listed}
            rehash = feed(progress, "extracting", "members")

            def same(i: int, n: str, m: Member) -> bool:
                ok = printable_name(n) and ".." not in n.split("/") and sha256_file(m.path, follow_symlinks=False) \
                    == (m.sha256, m.size)
                if rehash:
                    rehash(i + 1, len(files))
                return ok

            if all(same(i, n, m) for i, (n, m) in enumerate(files.items())):
                log(f"using the {len(files)} files extracted earlier from {fetched.basename}")
                return files
        except (OSError, ValueError, TypeError):
            pass
        log(f"extracted files of {fetched.basename} in the cache were damaged; extracting again")
        with Dir.open(parent, what="cache") as pd:
            pd.rmtree(key)
    log(f"extracting {manifest.id} files from {fetched.basename}")
    with Dir.open(parent, create=True, what="cache") as pd:
        sweep_dead(pd)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.{os.getpid()}-", dir=parent))
    try:
        staged = _members(fetched, source, manifest, tmp / "files", progress)
        try:
            (tmp / "index.json").write_text(json.dumps({f.name: [f.sha256, f.size] for f in staged}))
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                raise disk_full(parent, f"writing the index of the files extracted from {fetched.basename}") from None
            raise
        os.replace(tmp, done)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {f.name: Member(done / "files" / f.name, f.sha256, f.size) for f in staged}


def _extracted_key(sha256: str, manifest) -> str:
    return f"{sha256[:32]}-{manifest.id}"


def _real_dir(p: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(p).st_mode)
    except OSError:
        return False


def forget_extracted(fetched, manifest, cache_dir: Path) -> None:
    """Drop an extraction whose files were refused, so a refusal leaves nothing in the cache."""
    if not fetched.sha256 or Cache(cache_dir).read_only:
        return  # check mode extracted privately and leaves the cache as it was
    try:
        with Dir.open(Path(cache_dir) / "extracted", what="cache") as pd:
            if not pd.shared:
                pd.rmtree(_extracted_key(fetched.sha256, manifest))
    except (OSError, RevError):
        pass


def sweep_dead(d: Dir) -> None:
    """Remove staging folders (``stage-<pid>-*``, ``.<key>.<pid>-*``) whose run is gone (a kill)."""
    for name in d.listdir():
        m = re.match(r"^(?:stage(?:-lib)?|\.[0-9a-f]{32}-.+)[.-](\d+)-[A-Za-z0-9_]+$", name)
        if not m:
            continue
        pid = int(m.group(1))
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        d.rmtree(name)


def staging_parent(cache_dir: Path) -> Path:
    """``<cache>/staging`` (checked as the cache is: rocmrevive.fs), swept of what killed runs left;
    a shared cache stages in a private temporary folder instead."""
    cache = Cache(cache_dir)
    if cache.private_writes:
        return cache.private_dir()
    with cache.dir().sub("staging", create=True) as d:
        sweep_dead(d)
    return Path(cache_dir) / "staging"


def _members(fetched, source, manifest, dest: Path, progress=None):
    """Every component's members (the Tensile and library paths share one extraction); the
    "extracting" stage counts them against the number the manifest's source states (``files``;
    without one the total is known only at the end of the one pass over the archive)."""
    step = feed(progress, "extracting", "members")
    total = source.expected_files
    staged = extract_selected(Path(fetched.path), manifest.select, dest, member_prefix=source.member_prefix,
                              progress=step and (lambda n: step(n, total if total and n <= total else None)))
    if step:
        step(len(staged), len(staged))
    if not staged:
        raise RevError("VERIFY_FAILED", f"{fetched.basename}: no member under {source.member_prefix} "
                                        f"matches manifest {manifest.id}")
    return staged


def component_file(fetched, manifest, comp, source, cache_dir: Path, log: Log, area: Path,
                   progress=None) -> Path:
    """The one file of the library component ``comp`` in the artifact."""
    found = extracted(fetched, manifest, source, cache_dir, log, area, progress)
    files = {n: m.path for n, m in found.items() if comp.select(n)}
    if len(files) != 1:
        raise RevError("VERIFY_FAILED", f"{fetched.basename}: {len(files)} members under {source.member_prefix} "
                                        f"match {', '.join(comp.files)} (expected exactly one library file)")
    return next(iter(files.values()))


def cached_component_file(manifest, comp, source, cache_dir: Path) -> Path | None:
    """The component's file as an earlier install extracted it into the cache, or None: what
    ``audit`` checks without fetching or unpacking anything."""
    if not source.sha256:
        return None
    try:  # read-only: never create the cache; nothing another user could have planted is used
        with Dir.open(Path(cache_dir) / "extracted", allow_shared=False, what="cache"):
            pass
    except (OSError, RevError):
        return None
    done = Path(cache_dir) / "extracted" / f"{source.sha256[:32]}-{manifest.id}"
    try:
        listed = json.loads((done / "index.json").read_text())
    except (OSError, ValueError):
        return None
    for name, (_sha, size) in sorted(listed.items()):
        if comp.select(name):
            p = done / "files" / name
            try:
                # audit only reads it (install re-hashes before using it): the size will do
                return p if p.stat().st_size == size else None
            except OSError:
                return None
    return None
