"""What rocmrevive changed on this machine, per tree, and whether it is still intact: the
roll-up behind ``rocmrevive status`` (the transactions' own integrity, the last smoke test, dpkg
diversions that drifted).

    rep = machine_status(Root("/"), state_dir="/var/lib/rocmrevive")
    rep.code, rep.message         # "DRIFT", "transaction 0002-… on /opt/rocm-6.4.3: …"
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from rocmrevive.diagnose.orphans import find_orphans
from rocmrevive.rootfs import Root
from rocmrevive.smoke.record import read_last
from rocmrevive.trees.select import given_trees
from rocmrevive.txn.divert import findings as divert_findings
from rocmrevive.txn.history import Integrity, TxSummary, list_transactions
from rocmrevive.txn.journal import PENDING, TxState

# a tree's state: the worst of its transactions (interrupted first), else its live files' integrity
INTEGRITY_ORDER = (Integrity.DRIFTED, Integrity.MISSING, Integrity.PARTIAL)


@dataclass
class StatusReport:
    state_dir: str
    transactions: Sequence[TxSummary]
    trees: list[dict] = field(default_factory=list)
    pending: list[TxSummary] = field(default_factory=list)
    smoke: Optional[dict] = None
    diversions: list[dict] = field(default_factory=list)
    orphans: list = field(default_factory=list)   # diagnose.orphans.Orphans: files no journal records
    code: str = "OK"
    message: Optional[str] = None

    def by_tree(self, tree: str) -> list[TxSummary]:
        return [t for t in self.transactions if (t.tree or "(unknown)") == tree]

    @property
    def warnings(self) -> list[str]:
        return [f"{d['path']}: {d['problem']} ({d['hint']})" for d in self.diversions]

    def to_json(self) -> dict:
        return {"state_dir": self.state_dir, "trees": self.trees, "transactions": [t.to_json() for t in self.transactions],
                "pending": [t.txid for t in self.pending], "smoke": self.smoke, "diversions": self.diversions,
                "orphans": [o.to_json() for o in self.orphans]}


def tree_state(items: Sequence[TxSummary]) -> str:
    """One tree's state from its transactions: interrupted, in_progress, an ``Integrity`` or clean."""
    live = [t for t in items if t.state == TxState.COMMITTED]
    if any(t.state in PENDING for t in items):
        return TxState.INTERRUPTED
    if any(t.state == TxState.IN_PROGRESS for t in items):
        return TxState.IN_PROGRESS
    current = [t for t in live if t.integrity != Integrity.SUPERSEDED]
    return next((s for s in INTEGRITY_ORDER if any(t.integrity == s for t in live)),
                Integrity.INTACT if current else Integrity.SUPERSEDED if live else "clean")


def _tree_doc(tree: str, items: Sequence[TxSummary]) -> dict:
    live = [t for t in items if t.state == TxState.COMMITTED]
    return {"tree": tree, "exists": any(t.tree_exists for t in items), "state": tree_state(items),
            "files_managed": sum(len(t.managed) for t in live),
            "transactions": [t.txid for t in items]}


def _verdict(rep: StatusReport) -> None:
    damaged = [t for t in rep.transactions if t.state == TxState.COMMITTED and t.integrity is not None
               and t.integrity not in (Integrity.INTACT, Integrity.SUPERSEDED)]
    if rep.pending:
        rep.code = "INTERRUPTED"
        t = rep.pending[-1]
        rep.message = (f"the journal {t.journal} of transaction {t.txid} is damaged: {t.damage}; rocmrevive "
                       f"will not undo or complete it: check the files by hand, then move the journal aside"
                       if t.damage else
                       f"transaction {t.txid} was interrupted; run `rocmrevive recover` to finish or undo it")
    elif damaged:
        rep.code = "DRIFT"
        d = damaged[-1]
        assert d.integrity is not None  # committed and checked (the filter above)
        what = {Integrity.MISSING: "its files are gone (was the tree upgraded or reinstalled? install again)",
                Integrity.PARTIAL: f"{len(d.missing)} of its files are gone (install again)",
                Integrity.DRIFTED: f"{len(d.drifted)} of its files were changed by something else"}[d.integrity]
        rep.message = f"transaction {d.txid} on {d.tree or '(tree unknown)'}: {what}"


def machine_status(root: Root, *, state_dir: str, trees=(), orphans_from=None) -> StatusReport:
    """Every transaction (or those of ``trees``, selected by ``trees.select``: RevError("USAGE") for
    one that is not a folder), each file hashed again, rolled up per tree;
    ``code`` is INTERRUPTED, DRIFT or OK with one line. ``orphans_from`` (cache folder,
    manifests): also the installed files no journal records (diagnose.orphans)."""
    # a tree names itself and every folder inside it: /opt/rocm-6.4.3 holds the
    # transactions on /opt/rocm-6.4.3/lib/rocblas/library
    wanted = [t.path.rstrip("/") or "/" for t in given_trees(root, trees)]
    every = txs = list_transactions(root, state_dir=state_dir)
    if trees:
        txs = tuple(t for t in every if t.tree and any(t.tree == w or t.tree.startswith(w.rstrip("/") + "/")
                                                     for w in wanted))
    by_tree: dict[str, list[TxSummary]] = {}
    for t in txs:
        by_tree.setdefault(t.tree or "(unknown)", []).append(t)
    rep = StatusReport(state_dir, txs, trees=[_tree_doc(tree, items) for tree, items in by_tree.items()],
                       pending=[t for t in txs if t.state in PENDING])
    _verdict(rep)
    rep.smoke = read_last(root)
    rep.diversions = divert_findings(root, state_dir)
    if orphans_from is not None:
        known = {c.path for t in every if t.state == TxState.COMMITTED for c in t.changes}
        found = find_orphans(root, cache_dir=orphans_from[0], manifests=orphans_from[1], known=known)
        rep.orphans = [o for o in found if not trees or any(_inside(o.folder, w) for w in wanted)]
    return rep


def _inside(path: str, tree: str) -> bool:
    return path == tree or path.startswith(tree.rstrip("/") + "/")
