"""``rocmrevive fetch``: download and verify manifest sources into the cache (touching no tree),
optionally export them for other hosts (``--to``) or unpack the selected files (``--extract``)."""
from __future__ import annotations

from typing import Any

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome, snapshot_option


class _Bar:
    """Adapts fetch's progress(done, total) calls to the UI's progress bar."""

    def __init__(self, ui, desc: str):
        self.ui, self.desc = ui, desc
        self.cm: Any = None
        self.advance: Any = None
        self.last = 0

    def __call__(self, done: int, total: int | None) -> None:
        if self.cm is None:
            self.cm = self.ui.progress(self.desc, total)
            self.advance = self.cm.__enter__()
        if done > self.last:
            self.advance(done - self.last)
        self.last = done

    def close(self) -> None:
        if self.cm is not None:
            self.cm.__exit__(None, None, None)
            self.cm = None


@policy(writes=True, on_pending=OnPending.REFUSE)
@click.command()
@click.option("--manifest", "manifest_ids", multiple=True, metavar="ID", help="Only this manifest (repeatable).")
@click.option("--source", "source_names", multiple=True, metavar="NAME",
              help="Only this source (repeatable); cross-version sources are fetched only when named.")
@click.option("--all-sources", is_flag=True, help="Every source of each manifest, not just the first that works.")
@click.option("--mirror", metavar="URL", help="Debian mirror base URL (default: the one in the machine's apt "
                                              "configuration under --root).")
@click.option("--snapshot", metavar="URL", callback=snapshot_option,
              help="Debian's snapshot archive, tried for a pinned package no mirror serves any more (default: "
                   "Debian's own; 'none': never).")
@click.option("--from", "from_path", metavar="PATH", type=click.Path(exists=True),
              help="A local .deb, tarball, folder of them, an export made by --to, or an unpacked tree; "
                   "no network is used.")
@click.option("--to", "to_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Also export the verified artifacts (and the signed indexes that pin them) with a SHA256SUMS.")
@click.option("--extract", "extract_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Also unpack the selected files into DIR/<manifest>/<source>/ with a SHA256SUMS.")
@click.option("--cache", "cache_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Artifact cache (default /var/cache/rocmrevive as root, $XDG_CACHE_HOME/rocmrevive otherwise).")
@click.option("--manifests", "manifests_dir", metavar="DIR", type=click.Path(file_okay=False),
              help="Folder of manifests (default: the shipped ones).")
@click.option("--keyring", "keyrings", multiple=True, type=click.Path(exists=True, dir_okay=False),
              help="Extra keyring for signed indexes (the manifest's fingerprint still decides).")
@click.option("--timeout", default=3.0, show_default=True, metavar="SECONDS",
              help="End an attempt when no byte came for this long (the connection itself: at most 15 s); then "
                   "retry. Raise it on a slow or lossy link.")
@click.option("--retries", default=2, show_default=True, metavar="N",
              help="Retries on transient errors (5xx, timeouts, cut connections) without progress.")
@click.pass_obj
def fetch(ui, manifest_ids, source_names, all_sources, mirror, snapshot, from_path, to_dir, extract_dir, cache_dir,
          manifests_dir, keyrings, timeout, retries):
    """Download and verify the sources of the manifests into the cache, touching no ROCm tree.

    For each manifest the sources are tried in order and the first that works is kept; sources
    that are not version-matched (cross-version) are only fetched when named with --source.
    Nothing enters the cache unless its size and sha256 are right (pinned in the manifest or
    through a signed apt index). Exit 0: done; 5: network trouble (retry); 6: a checksum or
    signature is wrong; 2: bad manifest or options.
    """
    from rocmrevive.sources.fetch_run import run_fetch

    def work() -> Outcome:
        run = run_fetch(ui.root, manifests_dir=manifests_dir, manifest_ids=manifest_ids, source_names=source_names,
                        all_sources=all_sources, mirror=mirror, snapshot=snapshot, from_path=from_path, to_dir=to_dir,
                        extract_dir=extract_dir, cache_dir=cache_dir, keyrings=keyrings, timeout=timeout,
                        retries=retries, progress_for=lambda s: _Bar(ui, f"{s.package} {s.version}"),
                        notice=ui.log)
        return Outcome(data=run.to_json(), render=lambda con: _render(con, run), changed=run.changed,
                       code=run.code, message=run.message, warnings=run.warnings)

    ui.run("fetch", work)


def _render(con, run) -> None:
    from rich.table import Table

    t = Table(show_edge=False, title=f"cache {run.cache.base}", title_justify="left")
    for col in ("manifest", "source", "status", "size", "sha256", "from"):
        t.add_column(col)
    for r in run.results:
        res = r.result
        where = ""
        if res is not None:
            where = res.url or res.provenance.get("from") or res.origin
        elif r.error is not None:
            where = r.error.message
        t.add_row(r.manifest.id, r.source.name, r.status, f"{res.size:,}" if res and res.size else "",
                  (res.sha256 or "")[:16] if res else "", where)
    con.print(t)
    for r in run.results:
        if r.result is not None and r.result.provenance.get("fallback"):
            con.print(f"{r.source.package} {r.source.version}: {r.result.provenance['fallback']}", markup=False)
    for m in run.manifests.values():
        if m["extracted"]:
            e = m["extracted"]
            con.print(f"{m['id']}: {e['files']} files ({e['bytes']:,} bytes) in {e['dir']}", markup=False)
    if run.export:
        con.print(f"exported {len(run.export['files'])} files to {run.export['dir']} (see SHA256SUMS)",
                  markup=False)
