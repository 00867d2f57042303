"""Doctor findings about what rocmrevive itself did and whether it still holds: a transaction a
killed run left open, installed files changed since (drift), a rocBLAS copy ``verify`` fails;
and the right fix for a copy no manifest has a source for (``rocmrevive recipe``, not ``install``).

The reports come from ``diagnose.status.machine_status`` and
``diagnose.verify.verify_machine``; this module only turns them into findings, so ``doctor``,
``status`` and ``verify`` cannot disagree about the same machine.

    findings = state_findings(machine_status(root, state_dir=sd)) + verify_findings(verify_machine(root), set())
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable, Iterable

from rocmrevive.hardware.findings import Finding, Severity
from rocmrevive.invocation import shell_command
from rocmrevive.txn.history import TxSummary

# the tree finding whose fix is an install, and becomes the recipe where no source exists
MISSING_ID = "rocblas-missing-gfx906"


def state_findings(status) -> list[Finding]:
    """One error per pending transaction and per committed one whose files changed or went
    (``status``: an ``diagnose.status.StatusReport``)."""
    out: list[Finding] = []
    for t in status.pending:
        if t.damage:
            out.append(Finding(
                "transaction-journal-damaged", Severity.ERROR, t.txid,
                f"the journal {t.journal} of transaction {t.txid} is damaged: {t.damage}",
                "rocmrevive will not undo or complete a transaction it cannot read",
                f"mv {t.journal} {t.journal}.damaged  (after checking the files of "
                f"{t.tree or 'its tree'} by hand)"))
            continue
        out.append(Finding(
            "transaction-interrupted", Severity.ERROR, t.txid,
            f"transaction {t.txid} on {t.tree or '(tree unknown)'} was interrupted: the tree may hold "
            "a mix of old and new files",
            "a run of rocmrevive was killed (power loss, kill -9) before it finished",
            "rocmrevive recover  (finishes or undoes it from the journal)"))
    for t in status.transactions:
        if t.state != "committed" or t.integrity in (None, "intact"):
            continue
        out.append(_damaged(t))
    return out


def _damaged(t: TxSummary) -> Finding:
    tree = t.tree or "(tree unknown)"
    if t.integrity == "drifted":
        return Finding(
            "managed-files-drifted", Severity.ERROR, tree,
            f"{len(t.drifted)} file(s) rocmrevive installed in {tree} (transaction {t.txid}) were changed since: "
            + ", ".join(p.rsplit("/", 1)[-1] for p in t.drifted[:3]),
            "something other than rocmrevive edited or replaced them; rocBLAS may load the changed bytes",
            shell_command(["rollback", "--force", t.txid]) + "  (the edited bytes are kept in the backups), then "
            + shell_command(["install", "--tree", tree]),
            data={"txid": t.txid, "drifted": list(t.drifted)})
    gone = list(t.missing)
    return Finding(
        "managed-files-missing", Severity.ERROR, tree,
        f"{len(gone)} file(s) rocmrevive installed in {tree} (transaction {t.txid}) are gone",
        "the tree was upgraded, reinstalled or cleaned since the install",
        shell_command(["install", "--tree", tree]), data={"txid": t.txid, "missing": gone})


def verify_findings(report, flagged: Iterable[str], fix_for: Callable[[str], str] | None = None) -> list[Finding]:
    """One error per rocBLAS copy ``verify`` fails (``report``: an ``diagnose.verify.VerifyReport``),
    except the copies in ``flagged`` (an error already names them: a copy with no gfx906 files at
    all fails every check, and one finding says it). ``fix_for(copy path)`` gives the fix."""
    skip = set(flagged)
    out: list[Finding] = []
    by_copy: dict[str, list] = {}
    for result, device, check in report.failed:
        by_copy.setdefault(result.library, []).append((device, check))
    for library, fails in by_copy.items():
        if library in skip:
            continue
        device, check = fails[0]
        where = f" for {device.target}" if device is not None else ""
        offender = check.offenders[0] if check.offenders else None
        first = f": {offender['file']}: {offender['problem']}" if offender else f": {check.summary}"
        out.append(Finding(
            "verify-failed", Severity.ERROR, library,
            f"rocmrevive verify fails the rocBLAS copy {library}: {len(fails)} check(s), first {check.name}"
            f"{where}{first}",
            "a file rocBLAS loads is missing, damaged or for another target (`rocmrevive verify --tree "
            f"{library}` lists every offending file and kernel)",
            fix_for(library) if fix_for else shell_command(["install", "--tree", library]),
            data={"checks": sorted({c.name for _d, c in fails})}))
    return out


def recipe_fix(finding: Finding) -> Finding:
    """A copy without gfx906 files that no manifest has a source for: ``install`` would refuse
    it, so the fix is the build ``rocmrevive recipe`` writes (then ``install --from`` takes it)."""
    return replace(finding, fix=shell_command(["recipe", "--tree", finding.subject]) + "  (no rocmrevive source matches "
                                "this rocBLAS: it writes the build, and `install --from <its prefix>` takes it)",
                   data={**finding.data, "source": None})


def with_source_fixes(findings: list[Finding], has_source: Callable[[str], bool]) -> list[Finding]:
    """``findings`` with the fix of every copy that lacks gfx906 and has no source
    (``has_source(copy path)`` False) turned into the recipe."""
    return [recipe_fix(f) if f.id == MISSING_ID and not has_source(f.subject) else f for f in findings]


__all__ = ["state_findings", "verify_findings", "with_source_fixes", "recipe_fix"]
