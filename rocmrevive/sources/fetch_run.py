"""A ``rocmrevive fetch`` run over manifests: each one's sources fetched in order (the first that
works, every one, or the named ones), then the selected files unpacked (``--extract``) and the
artifacts exported for other hosts (``--to``); the outcome says which manifests got nothing.

    run = run_fetch(Root("/"), manifest_ids=["rocblas-4.4-gfx906"], to_dir="/srv/gfx906")
    run.code, run.message, run.to_json()["manifests"][0]["ok"]      # "OK", None, True
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.sources.artifact import FetchResult, Origin
from rocmrevive.sources.cache import Cache, default_cache_dir
from rocmrevive.sources.export import EXPORT_SUMS, export_artifacts
from rocmrevive.sources.extract import extract_into
from rocmrevive.sources.fetch import fetch_source
from rocmrevive.sources.http import CONNECT_TIMEOUT, RETRIES, STALL_TIMEOUT, Downloader
from rocmrevive.sources.manifest import Manifest, Source
from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests
from rocmrevive.strenum import StrEnum

Progress = Callable[[int, int | None], None]


class FetchStatus(StrEnum):
    """What happened to one source in a `fetch` run (its JSON and table ``status``)."""

    CACHED = "cached"
    DOWNLOADED = "downloaded"
    LOCAL = "local"
    LOCAL_TREE = "local-tree"
    FAILED = "failed"
    NOT_TRIED = "not-tried"

    @classmethod
    def of(cls, origin: Origin) -> FetchStatus:
        return _OF_ORIGIN[origin]


_OF_ORIGIN = {Origin.CACHE: FetchStatus.CACHED, Origin.DOWNLOAD: FetchStatus.DOWNLOADED, Origin.LOCAL: FetchStatus.LOCAL,
              Origin.LOCAL_TREE: FetchStatus.LOCAL_TREE}


@dataclass
class SourceFetch:
    """What happened to one source in a `fetch` run."""

    manifest: Manifest
    source: Source
    status: FetchStatus
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


def fetch_manifests(manifests: list[Manifest], cache: Path | Cache, *, mirror: str | None = None,
                    local: Path | None = None, sources: Iterable[str] = (), all_sources: bool = False,
                    progress_for: Callable[[Source], Progress | None] | None = None,
                    root: Root | None = None, keyrings: Iterable[Path] = (),
                    downloader: Downloader | None = None, snapshot: str | None = None) -> list[SourceFetch]:
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
                out.append(SourceFetch(m, s, FetchStatus.NOT_TRIED))
                continue
            prog = progress_for(s) if progress_for else None
            try:
                r = fetch_source(s, cache, mirror=mirror, local=local, progress=prog, root=root, keyrings=keyrings,
                                 downloader=downloader, others=[o for mm in manifests for o in mm.sources],
                                 snapshot=snapshot)
            except RevError as exc:
                out.append(SourceFetch(m, s, FetchStatus.FAILED, error=exc))
                continue
            finally:
                close = getattr(prog, "close", None)
                if close:
                    close()
            out.append(SourceFetch(m, s, FetchStatus.of(r.origin), r))
            done = True
        for s in m.sources:
            if s not in cands:
                out.append(SourceFetch(m, s, FetchStatus.NOT_TRIED))
    return out


@dataclass
class FetchRun:
    """What a `fetch` run did: every source's fate, per manifest whether one worked (and what was
    extracted), the export, and the outcome (a code, its one line, warnings)."""

    cache: Cache
    manifests_dir: Path | str
    mirror: str | None
    from_path: str | None
    results: list[SourceFetch]
    manifests: dict[str, dict]  # id -> {"id", "ok", "sources": [SourceFetch JSON], "extracted"}
    export: dict | None = None
    changed: bool = False
    code: str = "OK"
    message: str | None = None
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"cache": str(self.cache.base), "manifests_dir": str(self.manifests_dir), "mirror": self.mirror,
                "from": self.from_path, "manifests": list(self.manifests.values()), "export": self.export}


def run_fetch(root: Root, *, manifests_dir: str | None = None, manifest_ids: Iterable[str] = (),
              source_names: Iterable[str] = (), all_sources: bool = False, mirror: str | None = None,
              from_path: str | None = None, to_dir: str | None = None, extract_dir: str | None = None,
              cache_dir: str | None = None, keyrings: Iterable[str] = (), timeout: float = STALL_TIMEOUT,
              retries: int = RETRIES, progress_for: Callable[[Source], Progress | None] | None = None,
              notice: Callable[[str], None] | None = None, snapshot: str | None = None) -> FetchRun:
    """Fetch the chosen manifests' sources into the cache (touching no tree), then extract and
    export what was fetched. Raises RevError("USAGE") for an unknown manifest or source; a source
    that could not be fetched is an outcome (``run.code``), not an exception."""
    manifest_ids, source_names = tuple(manifest_ids), tuple(source_names)
    mdir = manifests_dir or default_manifest_dir()
    ms = _chosen(load_manifests(mdir), mdir, manifest_ids, source_names)
    cache = Cache(cache_dir or default_cache_dir(root))
    dl = Downloader(timeout=(min(15.0, max(CONNECT_TIMEOUT, timeout)), timeout), retries=retries, notice=notice)
    results = fetch_manifests(
        ms, cache, mirror=mirror, local=Path(from_path) if from_path else None, sources=source_names,
        all_sources=all_sources, root=root, keyrings=[Path(k) for k in keyrings], downloader=dl,
        progress_for=progress_for, snapshot=snapshot)
    run = FetchRun(cache, mdir, mirror, from_path, results, _per_manifest(ms, results))
    run.changed = any(r.status in (FetchStatus.DOWNLOADED, FetchStatus.LOCAL) for r in results)
    run.warnings = [f"{r.source.key}: {r.result.provenance['warning']}" for r in results
                    if r.result is not None and r.result.provenance.get("warning")]
    if extract_dir:
        for r in results:
            if r.result is not None:
                run.manifests[r.manifest.id]["extracted"] = extract_into(r.result.path, Path(extract_dir),
                                                                         r.manifest.id, r.source, r.manifest.select)
                run.changed = True
    if to_dir:
        files = export_artifacts([r.result for r in results if r.result is not None], Path(to_dir))
        run.export = {"dir": str(to_dir), "files": files, "sha256sums": str(Path(to_dir) / EXPORT_SUMS)}
        run.changed = run.changed or bool(files)
    _judge(run, explicit=bool(manifest_ids or source_names))
    return run


def _chosen(ms: list[Manifest], mdir, manifest_ids: tuple[str, ...], source_names: tuple[str, ...]
            ) -> list[Manifest]:
    """The manifests named (all when none), narrowed to those holding a named source; a name that
    is not there is a usage error listing the ones that are."""
    if manifest_ids:
        known = {m.id for m in ms}
        bad = [i for i in manifest_ids if i not in known]
        if bad:
            raise RevError("USAGE", f"no manifest {bad[0]!r} in {mdir}; there are: {', '.join(sorted(known))}")
        ms = [m for m in ms if m.id in manifest_ids]
    if source_names:
        known = {s.name for m in ms for s in m.sources}
        bad = [n for n in source_names if n not in known]
        if bad:
            raise RevError("USAGE", f"no source {bad[0]!r} in the chosen manifests; there are: "
                                    f"{', '.join(sorted(known))}")
        ms = [m for m in ms if any(s.name in source_names for s in m.sources)]
    return ms


def _per_manifest(ms: list[Manifest], results: list[SourceFetch]) -> dict[str, dict]:
    per: dict[str, dict] = {m.id: {"id": m.id, "ok": False, "sources": [], "extracted": None} for m in ms}
    for r in results:
        per[r.manifest.id]["sources"].append(r.to_json())
        if r.result is not None:
            per[r.manifest.id]["ok"] = True
    return per


def _judge(run: FetchRun, *, explicit: bool) -> None:
    """A manifest that got nothing fails the run, except with --from where only some manifests
    (not named ones) found nothing there: a warning each."""
    failed = [m for m in run.manifests.values() if not m["ok"]]
    if failed and (not run.from_path or explicit or len(failed) == len(run.manifests)):
        first = next((r.error for r in run.results if r.manifest.id == failed[0]["id"] and r.error is not None),
                     None)
        run.code = first.code if first else "NETWORK"
        run.message = (f"{failed[0]['id']}: no source could be fetched"
                       + (f" ({first.message})" if first else ""))
    elif failed:
        run.warnings += [f"{m['id']}: nothing in --from {run.from_path} for this manifest" for m in failed]
