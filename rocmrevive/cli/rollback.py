"""``rocmrevive rollback [TXID]`` and ``rocmrevive recover``: undo a transaction from its journal;
finish or undo one that a crash interrupted."""
from __future__ import annotations

from collections import Counter

import click

from rocmrevive.cli.options import cache_option, manifests_option, orphan_sources, state_dir_option
from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome
from rocmrevive.trees.trust import refuse_untrusted_undo


def _verbs(actions, dry: bool) -> str:
    from rocmrevive.txn.plan import Op

    counts = Counter(a.op for a in actions)
    words = {Op.RESTORE: ("restored", "restore"), Op.REMOVE: ("removed", "remove"),
             Op.RMDIR: ("folders removed", "remove folders"), Op.KEEP: ("already as before", "already as before")}
    parts = [f"{counts[op]} {words[op][1 if dry else 0]}" for op in words if counts.get(op)]
    return ", ".join(parts) or "nothing to do"


def _render_actions(con, actions, verbose: int) -> None:
    from rich.table import Table

    shown = actions if verbose or len(actions) <= 12 else actions[:10]
    if not shown:
        return
    t = Table(show_edge=False, box=None, pad_edge=False)
    for col in ("op", "path", "sha256 now", "sha256 after"):
        t.add_column(col)
    for a in shown:
        t.add_row(a.op, a.path, (a.before or "-")[:12], (a.after or "-")[:12])
    con.print(t)
    if len(shown) < len(actions):
        con.print(f"… and {len(actions) - len(shown)} more (-v or --json lists them all)")


@policy(writes=True, on_pending=OnPending.OWN, dry_run_reads_machine_state=True)
@click.command()
@click.argument("txid", required=False)
@click.option("--force", is_flag=True, help="Restore files that changed since the install too "
                                           "(their current bytes are kept in the backups folder).")
@click.option("--dry-run", is_flag=True, help="Check every file's hash and say what would happen; change nothing.")
@click.option("--orphans", is_flag=True, help="Remove the files `status` recognises as a manifest's but no journal "
                                              "records (the state folder was lost).")
@state_dir_option
@cache_option
@manifests_option
@click.pass_obj
def rollback(ui, txid, force, dry_run, orphans, state_dir, cache, manifests_dir):
    """Undo the last install transaction (or TXID), byte for byte.

    Every file's sha256 is checked first: if one changed since the install (drift) nothing is
    touched and the files are named (exit 8) unless --force. `rocmrevive status` lists TXIDs.

    With --orphans: the files that are byte for byte a manifest's files as an install extracted
    them into the cache, but that no journal records (the state folder was removed), are
    deleted as one journaled transaction per folder; nothing else is restored.
    """
    from rocmrevive.txn.state import require_no_pending
    from rocmrevive.txn.undo import rollback as do_rollback

    if orphans:
        if txid or force:
            raise click.UsageError("--orphans takes no TXID and no --force")
        ui.run("rollback", lambda: _remove_orphans(ui, dry_run, state_dir, orphan_sources(ui.root, cache, manifests_dir)))
        return

    def work() -> Outcome:
        # An interrupted transaction is not rolled back behind the user's back here: undoing
        # it and then "the last one" too would undo more than asked. `recover` handles it.
        require_no_pending(ui.root, state_dir=state_dir)
        if not dry_run:
            refuse_untrusted_undo(ui.root, [do_rollback(ui.root, txid, force=True, state_dir=state_dir, dry_run=True)])
        with ui.progress("restoring", None) as advance:
            res = do_rollback(ui.root, txid, force=force, state_dir=state_dir, dry_run=dry_run, progress=advance)
        data = res.to_json()
        data.pop("changed")
        data["dry_run"] = dry_run

        def render(con):
            if res.txid is None:
                con.print("nothing to roll back: no committed transaction")
                return
            if not res.actions:
                con.print(f"transaction {res.txid} was already rolled back; nothing to do")
                return
            head = "would roll back" if dry_run else "rolled back"
            con.print(f"{head} transaction {res.txid} on {res.tree or '(tree unknown)'}: "
                      f"{_verbs(res.actions, dry_run)}")
            _render_actions(con, res.actions, ui.verbose)

        return Outcome(data=data, render=render, changed=res.changed and not dry_run,
                       warnings=[w for w in res.warnings if res.actions])

    ui.run("rollback", work)


def _remove_orphans(ui, dry_run: bool, state_dir: str, sources) -> Outcome:
    """``rollback --orphans``: one transaction per folder, each delete pinned to the recognised
    bytes (a file changed since is refused by the apply, and nothing of that folder is touched)."""
    from rocmrevive.diagnose.orphans import find_orphans
    from rocmrevive.txn.apply import apply_plan
    from rocmrevive.txn.history import list_transactions
    from rocmrevive.txn.journal import TxState
    from rocmrevive.txn.state import require_no_pending

    require_no_pending(ui.root, state_dir=state_dir)
    known = {c.path for t in list_transactions(ui.root, state_dir=state_dir, verify=False)
             if t.state == TxState.COMMITTED for c in t.changes}
    found = find_orphans(ui.root, cache_dir=sources[0], manifests=sources[1], known=known)
    results = [(o, apply_plan(ui.root, o.removal_plan(), state_dir=state_dir, dry_run=dry_run)) for o in found]

    def render(con):
        if not found:
            con.print("no orphaned files: every file rocmrevive recognises is recorded by a transaction")
        for o, res in results:
            head = "would remove" if dry_run else f"removed (transaction {res.txid})"
            con.print(f"{o.folder}: {head} {len(o.files)} files of manifest {o.manifest}", markup=False)

    return Outcome(data={"dry_run": dry_run, "orphans": [dict(o.to_json(), txid=res.txid) for o, res in results]},
                   render=render, changed=any(res.changed for _, res in results) and not dry_run)


@policy(writes=True, on_pending=OnPending.OWN, dry_run_reads_machine_state=True)
@click.command()
@click.option("--force", is_flag=True, help="Undo files that changed since the interrupted transaction too.")
@click.option("--dry-run", is_flag=True, help="Say what recovery would do; change nothing.")
@state_dir_option
@click.pass_obj
def recover(ui, force, dry_run, state_dir):
    """Finish or undo a transaction that was interrupted (killed, power loss).

    If every file of the interrupted install is already in place it is completed (rolled
    forward); otherwise it is undone from its journal and backups. Safe to run at any time.
    """
    from rocmrevive.txn.result import TxOutcome
    from rocmrevive.txn.undo import recover_pending

    def work() -> Outcome:
        if not dry_run:
            refuse_untrusted_undo(ui.root, recover_pending(ui.root, state_dir=state_dir, force=True, dry_run=True))
        results = recover_pending(ui.root, state_dir=state_dir, force=force, dry_run=dry_run)
        docs = [r.to_json() for r in results]
        changed = bool(results) and not dry_run

        def render(con):
            if not results:
                con.print("nothing to recover: no interrupted transaction")
            for r in results:
                if r.state is TxOutcome.ROLLED_FORWARD:
                    con.print(f"transaction {r.txid} on {r.tree or '(tree unknown)'}: completed (every file was "
                              "already in place)")
                elif r.state is TxOutcome.DRY_RUN:
                    con.print(f"transaction {r.txid} on {r.tree or '(not started)'}: would undo: "
                              f"{_verbs(r.actions, True)}")
                else:
                    con.print(f"transaction {r.txid} on {r.tree or '(not started)'}: undone: {_verbs(r.actions, False)}")
                _render_actions(con, r.actions, ui.verbose)

        return Outcome(data={"dry_run": dry_run, "recovered": docs}, render=render, changed=changed,
                       warnings=[w for r in results for w in r.warnings])

    ui.run("recover", work)
