"""``rocmrevive status`` (alias ``history``): what rocmrevive changed in which tree, when, and
whether it is still intact."""
from __future__ import annotations

from typing import TYPE_CHECKING

import click

from rocmrevive.cli.options import cache_option, manifests_option, orphan_sources, state_dir_option
from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome

if TYPE_CHECKING:
    from rocmrevive.txn.history import TxSummary


@policy(writes=False, on_pending=OnPending.REPORT, reads_machine_state=True)
@click.command()
@click.option("--tree", "trees", multiple=True, metavar="PATH", help="Only this tree (repeatable).")
@state_dir_option
@cache_option
@manifests_option
@click.pass_obj
def status(ui, trees, state_dir, cache, manifests_dir):
    """Per tree: the transactions rocmrevive applied, when, and whether their files are intact.

    Every file of each committed transaction is hashed again. Exit 8 (drift) when a file was
    changed or removed since (e.g. an apt upgrade replaced the tree: install again), 9 when a
    transaction was interrupted (run `rocmrevive recover`), else 0. Files that are byte for
    byte a manifest's files as an install extracted them into the cache, but that no journal
    records (the state folder was removed), are named: `rollback --orphans` removes them.
    """
    from rocmrevive.diagnose.status import machine_status

    def work() -> Outcome:
        rep = machine_status(ui.root, state_dir=state_dir, trees=trees,
                             orphans_from=orphan_sources(ui.root, cache, manifests_dir))
        return Outcome(data=rep.to_json(), render=lambda con: _render(con, rep, ui.verbose), changed=False,
                       code=rep.code, message=rep.message, warnings=rep.warnings)

    ui.run("status", work)


def _render(con, rep, verbose: bool) -> None:
    from rich.table import Table

    smoke = rep.smoke
    if smoke:
        what = smoke.get("status")
        if smoke.get("mode") == "cpu-test":
            what = f"a --cpu-test-mode run ({what}; no GPU was used, it proves nothing about the GPUs)"
        con.print(f"last smoke test: {what} at {smoke.get('finished_at')}; "
                  f"last passed: {smoke.get('last_passed_at') or 'never'}", markup=False)
        for sp in smoke.get("speed") or []:
            said = "; ".join(sp.get("slow") or []) or sp.get("summary") or "no earlier pass to compare with"
            con.print(f"  speed, {sp.get('label') or 'device ' + str(sp.get('device'))}: {said}", markup=False)
    for o in rep.orphans:
        con.print(f"{o.folder}: {len(o.files)} files are manifest {o.manifest}'s ({o.source or 'artifact ' + o.artifact})"
                  f" but no transaction records them; `rocmrevive rollback --orphans` removes them", markup=False)
    if not rep.transactions:
        if not rep.orphans:
            con.print("rocmrevive has changed nothing here (no transactions in "
                      f"{rep.state_dir.rstrip('/')}/tx)")
        return
    for tdoc in rep.trees:
        gone = "" if tdoc["exists"] else " (folder gone)"
        con.print(f"{tdoc['tree']}{gone}: {tdoc['state']}")
        t = Table(show_edge=False, box=None, pad_edge=False)
        for col in ("txid", "state", "when", "files", "MB", "source", "now"):
            t.add_column(col)
        items = rep.by_tree(tdoc["tree"])
        for x in items:
            t.add_row(x.txid, x.state, _when(x).replace("T", " "), str(x.files),
                      f"{x.bytes / 1e6:.1f}", str(x.meta.get("manifest") or x.meta.get("source") or ""),
                      _now(x))
        con.print(t)
        if verbose:
            _render_files(con, items)


def _when(x: TxSummary) -> str:
    from rocmrevive.txn.journal import TxState

    return (x.committed if x.state == TxState.COMMITTED else x.rolled_back or x.began) or ""


def _now(x: TxSummary) -> str:
    if not x.integrity:
        return "-"
    extra = [f"{n} {k}" for k, n in (("drifted", len(x.drifted)), ("missing", len(x.missing))) if n]
    return x.integrity + (" (" + ", ".join(extra) + ")" if extra else "")


def _render_files(con, items: list[TxSummary]) -> None:
    from rocmrevive.txn.journal import TxState

    for x in items:
        if x.state != TxState.COMMITTED or x.now is None:
            continue
        where = {p: k for k in ("intact", "drifted", "missing", "superseded") for p in getattr(x.now, k)}
        for c in x.changes:
            con.print(f"  {x.txid}  {c.op:<7} {where.get(c.path, '-'):<10} {c.path}")
