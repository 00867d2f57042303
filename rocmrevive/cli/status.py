"""``rocmrevive status`` (alias ``history``): what rocmrevive changed in which tree, when, and
whether it is still intact."""
from __future__ import annotations

import click

from rocmrevive.cli.ui import Outcome


@click.command()
@click.option("--tree", "trees", multiple=True, metavar="PATH", help="Only this tree (repeatable).")
@click.option("--state-dir", default="/var/lib/rocmrevive", show_default=True, metavar="DIR",
              help="Where journals, backups and the lock live (a machine path, under --root).")
@click.pass_obj
def status(ui, trees, state_dir):
    """Per tree: the transactions rocmrevive applied, when, and whether their files are intact.

    Every file of each committed transaction is hashed again. Exit 8 (drift) when a file was
    changed or removed since (e.g. an apt upgrade replaced the tree: install again), 9 when a
    transaction was interrupted (run `rocmrevive recover`), else 0.
    """
    from rocmrevive.txn.transaction import list_transactions, resolve_inside

    def work() -> Outcome:
        from rocmrevive.cli.detect import check_trees

        check_trees(ui.root, trees)
        txs = list_transactions(ui.root, state_dir=state_dir)
        if trees:
            # a tree names itself and every folder inside it: /opt/rocm-6.4.3 holds the
            # transactions on /opt/rocm-6.4.3/lib/rocblas/library
            wanted = [ui.root.machine_path(resolve_inside(ui.root, t, what="tree")).rstrip("/") or "/" for t in trees]
            txs = [t for t in txs if t["tree"] and any(t["tree"] == w or t["tree"].startswith(w.rstrip("/") + "/")
                                                       for w in wanted)]
        by_tree: dict[str, list] = {}
        for t in txs:
            by_tree.setdefault(t["tree"] or "(unknown)", []).append(t)
        tree_docs = []
        for tree, items in by_tree.items():
            live = [t for t in items if t["state"] == "committed"]
            worst = ("interrupted" if any(t["state"] in ("interrupted", "damaged") for t in items) else
                     "in_progress" if any(t["state"] == "in_progress" for t in items) else
                     next((s for s in ("drifted", "missing", "partial") if any(t["integrity"] == s for t in live)),
                          "intact" if live else "clean"))
            tree_docs.append({"tree": tree, "exists": any(t["tree_exists"] for t in items), "state": worst,
                              "files_managed": sum(len(t.get("intact", [])) + len(t.get("drifted", []))
                                                   + len(t.get("missing", [])) for t in live),
                              "transactions": [t["txid"] for t in items]})
        pending = [t for t in txs if t["state"] in ("interrupted", "damaged")]
        damaged = [t for t in txs if t["state"] == "committed" and t["integrity"] != "intact"]
        code, message = "OK", None
        if pending:
            code = "INTERRUPTED"
            t = pending[-1]
            message = (f"the journal {t['journal']} of transaction {t['txid']} is damaged: {t['damage']}; rocmrevive "
                       f"will not undo or complete it: check the files by hand, then move the journal aside"
                       if t.get("damage") else
                       f"transaction {t['txid']} was interrupted; run `rocmrevive recover` to finish or undo it")
        elif damaged:
            code = "DRIFT"
            t = damaged[-1]
            what = {"missing": "its files are gone (was the tree upgraded or reinstalled? install again)",
                    "partial": f"{len(t['missing'])} of its files are gone (install again)",
                    "drifted": f"{len(t['drifted'])} of its files were changed by something else"}[t["integrity"]]
            message = f"transaction {t['txid']} on {t['tree'] or '(tree unknown)'}: {what}"

        from rocmrevive.smoke.record import read_last

        smoke = read_last(ui.root)
        from rocmrevive.txn.divert import findings as divert_findings

        diversions = divert_findings(ui.root, state_dir)

        def render(con):
            from rich.table import Table

            if smoke:
                what = smoke.get("status")
                if smoke.get("mode") == "cpu-test":
                    what = (f"a --cpu-test-mode run ({what}; no GPU was used, it proves nothing about "
                            "the GPUs)")
                con.print(f"last smoke test: {what} at {smoke.get('finished_at')}; "
                          f"last passed: {smoke.get('last_passed_at') or 'never'}", markup=False)
            if not txs:
                con.print("rocmrevive has changed nothing here (no transactions in "
                          f"{state_dir.rstrip('/')}/tx)")
                return
            for tdoc in tree_docs:
                gone = "" if tdoc["exists"] else " (folder gone)"
                con.print(f"{tdoc['tree']}{gone}: {tdoc['state']}")
                t = Table(show_edge=False, box=None, pad_edge=False)
                for col in ("txid", "state", "when", "files", "MB", "source", "now"):
                    t.add_column(col)
                for x in by_tree[tdoc["tree"]]:
                    now = "-"
                    if x["integrity"]:
                        now = x["integrity"]
                        extra = [f"{len(x[k])} {k}" for k in ("drifted", "missing") if x.get(k)]
                        if extra:
                            now += " (" + ", ".join(extra) + ")"
                    meta = x["meta"]
                    source = meta.get("manifest") or meta.get("source") or ""
                    when = x["committed"] if x["state"] == "committed" else x["rolled_back"] or x["began"] or ""
                    t.add_row(x["txid"], x["state"], (when or "").replace("T", " "), str(x["files"]),
                              f"{x['bytes'] / 1e6:.1f}", str(source), now)
                con.print(t)
                if ui.verbose:
                    for x in by_tree[tdoc["tree"]]:
                        if x["state"] != "committed":
                            continue
                        where = {p: k for k in ("intact", "drifted", "missing", "superseded") for p in x.get(k, [])}
                        for c in x["changes"]:
                            con.print(f"  {x['txid']}  {c['op']:<7} {where.get(c['path'], '-'):<10} {c['path']}")

        return Outcome(data={"state_dir": state_dir, "trees": tree_docs, "transactions": txs,
                             "pending": [t["txid"] for t in pending], "smoke": smoke,
                             "diversions": diversions},
                       render=render, changed=False, code=code, message=message,
                       warnings=[f"{d['path']}: {d['problem']} ({d['hint']})" for d in diversions])

    ui.run("status", work)
