"""``rocmrevive cache clean``: free what the artifact cache holds that no manifest needs."""
from __future__ import annotations

import click

from rocmrevive.cli.options import cache_option, manifests_option
from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome


@policy(writes=False, on_pending=OnPending.IGNORE)
@click.group()
def cache():
    """The download cache (/var/cache/rocmrevive as root, $XDG_CACHE_HOME/rocmrevive otherwise)."""


@policy(writes=True, on_pending=OnPending.IGNORE)
@cache.command("clean")
@click.option("--dry-run", is_flag=True, help="List what would be removed; remove nothing.")
@click.option("--all", "everything", is_flag=True,
              help="Also remove the pinned packages, their extractions and recorded index resolutions (all "
                   "re-fetchable; apt-get clean's counterpart): the next install downloads again.")
@cache_option
@manifests_option
@click.pass_obj
def clean(ui, dry_run, everything, cache, manifests_dir):
    """Remove the artifacts no manifest pins, their extractions, downloads no run holds and
    staging folders of runs that are gone; say how many bytes that freed. With --all, everything
    re-fetchable goes (what a run holds right now stays). No cache yet: nothing to clean, exit 0.

    Every removal goes through descriptors opened from the cache folder; a cache other users
    may write is refused. Installed files and journals are never touched: `rollback` still works.
    """
    from rocmrevive.cli.options import orphan_sources
    from rocmrevive.sources.cache_clean import clean_cache
    from rocmrevive.units import format_bytes

    def work() -> Outcome:
        cache_dir, manifests = orphan_sources(ui.root, cache, manifests_dir)
        res = clean_cache(cache_dir, manifests, dry_run=dry_run, everything=everything)

        def render(con):
            if not res.exists:
                con.print(f"nothing to clean: there is no cache at {res.cache} yet", markup=False)
                return
            for e in res.entries if ui.verbose else ():
                con.print(f"  {e.why:<12} {format_bytes(e.bytes) if e.bytes else '0 B':>10}  {e.name}", markup=False)
            verb = "would free" if dry_run else "freed"
            tail = ""
            if everything and any(e.name.startswith("sha256/") for e in res.entries):
                tail = "; the next install downloads its packages again" if not dry_run else \
                    "; the next install would download its packages again"
            con.print(f"{verb} {format_bytes(res.bytes) if res.bytes else '0 B'} in {res.cache} ({len(res.entries)} entries; "
                      f"{res.kept} kept){tail}", markup=False)

        return Outcome(data=res.to_json(), render=render, changed=bool(res.entries) and not dry_run)

    ui.run("cache clean", work)
