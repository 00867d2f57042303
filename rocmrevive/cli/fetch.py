"""``rocmrevive fetch``: download and verify manifest sources into the cache (touching no tree),
optionally export them for other hosts (``--to``) or unpack the selected files (``--extract``)."""
from __future__ import annotations

from pathlib import Path

import click

from rocmrevive.cli.ui import Outcome


class _Bar:
    """Adapts fetch's progress(done, total) calls to the UI's progress bar."""

    def __init__(self, ui, desc: str):
        self.ui, self.desc = ui, desc
        self.cm = self.advance = None
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


@click.command()
@click.option("--manifest", "manifest_ids", multiple=True, metavar="ID", help="Only this manifest (repeatable).")
@click.option("--source", "source_names", multiple=True, metavar="NAME",
              help="Only this source (repeatable); cross-version sources are fetched only when named.")
@click.option("--all-sources", is_flag=True, help="Every source of each manifest, not just the first that works.")
@click.option("--mirror", metavar="URL", help="Debian mirror base URL (default: the one in the machine's apt "
                                              "configuration under --root).")
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
@click.option("--timeout", default=60.0, show_default=True, metavar="SECONDS",
              help="Give up on a connection that sends nothing for this long (then retry).")
@click.option("--retries", default=4, show_default=True, metavar="N",
              help="Retries on transient errors (5xx, timeouts, cut connections) without progress.")
@click.pass_obj
def fetch(ui, manifest_ids, source_names, all_sources, mirror, from_path, to_dir, extract_dir, cache_dir,
          manifests_dir, keyrings, timeout, retries):
    """Download and verify the sources of the manifests into the cache, touching no ROCm tree.

    For each manifest the sources are tried in order and the first that works is kept; sources
    that are not version-matched (cross-version) are only fetched when named with --source.
    Nothing enters the cache unless its size and sha256 are right (pinned in the manifest or
    through a signed apt index). Exit 0: done; 5: network trouble (retry); 6: a checksum or
    signature is wrong; 2: bad manifest or options.
    """
    from rocmrevive.errors import RevError
    from rocmrevive.sources.cache import Cache, default_cache_dir
    from rocmrevive.sources.fetch import export_artifacts, fetch_manifests
    from rocmrevive.sources.http import Downloader
    from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests

    def work() -> Outcome:
        mdir = manifests_dir or default_manifest_dir()
        ms = load_manifests(mdir)
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
        cache = Cache(cache_dir or default_cache_dir(ui.root))
        dl = Downloader(timeout=(min(15.0, timeout), timeout), retries=retries)
        results = fetch_manifests(
            ms, cache, mirror=mirror, local=Path(from_path) if from_path else None, sources=source_names,
            all_sources=all_sources, root=ui.root, keyrings=[Path(k) for k in keyrings], downloader=dl,
            progress_for=lambda s: _Bar(ui, f"{s.package} {s.version}"))

        per: dict[str, dict] = {m.id: {"id": m.id, "ok": False, "sources": [], "extracted": None} for m in ms}
        for r in results:
            per[r.manifest.id]["sources"].append(r.to_json())
            if r.result is not None:
                per[r.manifest.id]["ok"] = True
        changed = any(r.status in ("downloaded", "local") for r in results)
        warnings = [f"{r.source.key}: {r.result.provenance['warning']}" for r in results
                    if r.result is not None and r.result.provenance.get("warning")]

        if extract_dir:
            for r in results:
                if r.result is None:
                    continue
                per[r.manifest.id]["extracted"] = _extract(r, Path(extract_dir))
                changed = True
        export = None
        if to_dir:
            got = [r.result for r in results if r.result is not None]
            files = export_artifacts(got, Path(to_dir))
            export = {"dir": str(to_dir), "files": files, "sha256sums": str(Path(to_dir) / "SHA256SUMS")}
            changed = changed or bool(files)

        failed = [m for m in per.values() if not m["ok"]]
        code, message = "OK", None
        explicit = bool(manifest_ids or source_names)
        if failed and (not from_path or explicit or len(failed) == len(per)):
            first = next((r for r in results if r.manifest.id == failed[0]["id"] and r.error is not None), None)
            code = first.error.code if first else "NETWORK"
            message = (f"{failed[0]['id']}: no source could be fetched"
                       + (f" ({first.error.message})" if first else ""))
        elif failed:
            warnings += [f"{m['id']}: nothing in --from {from_path} for this manifest" for m in failed]
        data = {"cache": str(cache.base), "manifests_dir": str(mdir), "mirror": mirror,
                "from": from_path, "manifests": list(per.values()), "export": export}
        return Outcome(data=data, render=lambda con: _render(con, results, per, export, cache), changed=changed,
                       code=code, message=message, warnings=warnings)

    ui.run("fetch", work)


def _extract(r, base: Path) -> dict:
    """Unpack the selected files of one fetched source into base/<manifest>/<source>/, replacing an
    earlier extraction only once the new one is complete. Every folder is opened through
    ``rocmrevive.fs`` (a link planted at base/<manifest> is refused, never followed)."""
    from rocmrevive.sources.extract import extract_into

    return extract_into(r.result.path, base, r.manifest.id, r.source, r.manifest.select)


def _render(con, results, per, export, cache) -> None:
    from rich.table import Table

    t = Table(show_edge=False, title=f"cache {cache.base}", title_justify="left")
    for col in ("manifest", "source", "status", "size", "sha256", "from"):
        t.add_column(col)
    for r in results:
        res = r.result
        where = ""
        if res is not None:
            where = res.url or res.provenance.get("from") or res.origin
        elif r.error is not None:
            where = r.error.message
        t.add_row(r.manifest.id, r.source.name, r.status, f"{res.size:,}" if res and res.size else "",
                  (res.sha256 or "")[:16] if res else "", where)
    con.print(t)
    for m in per.values():
        if m["extracted"]:
            e = m["extracted"]
            con.print(f"{m['id']}: {e['files']} files ({e['bytes']:,} bytes) in {e['dir']}", markup=False)
    if export:
        con.print(f"exported {len(export['files'])} files to {export['dir']} (see SHA256SUMS)", markup=False)
