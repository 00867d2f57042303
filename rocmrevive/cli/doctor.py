"""``rocmrevive doctor``: problems on this machine, each with a severity, its cause and the fix.

Exit codes: 0 when no finding is an error; 11 (PROBLEMS_FOUND) when at least one is (files
rocmrevive installed that changed or went since, a rocBLAS copy ``verify`` fails, a copy without
gfx906, ...); 9 (INTERRUPTED) when a transaction is pending (the finding's fix is ``recover``); 3
(NOTHING_SUPPORTED) when there are no errors and no gfx906 GPU (nothing to do).
"""
from __future__ import annotations

import os
import re
from pathlib import Path

import click

from rocmrevive.cli.detect import run_survey, shared_options
from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import UI, Outcome, text_file_option
from rocmrevive.hardware.findings import FixKind, Severity
from rocmrevive.hardware.vulkan import parse_vulkan_devices
from rocmrevive.invocation import shell_command

STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "yellow", Severity.INFO: "cyan"}


def _n(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def hanging(head: str, text: str, width: int, *, atomic: bool = False) -> list[str]:
    """``head`` + ``text`` folded to ``width`` between words, continuation lines indented under
    the text; a `backquoted command` (or the whole text when ``atomic``: a fix that is one
    command) is never split, so it copies as one command. A piece longer than the line stays
    whole on its own line (the terminal folds it without a newline in it).

        hanging("  fix:   ", "run `sudo update-grub` and reboot", 80)
    """
    pieces = [text] if atomic else [p for p in re.split(r"(`[^`]*`\S*|\S+)", text) if p.strip()]
    pad = " " * len(head)
    lines, line = [], head
    for piece in pieces:
        if line not in (head, pad) and len(line) + 1 + len(piece) > width:
            lines.append(line)
            line = pad
        line += ("" if line in (head, pad) else " ") + piece
    lines.append(line)
    return lines


def render_doctor(doc: dict, root=None):
    from rocmrevive.cli.ui import runnable
    from rocmrevive.rootfs import Root

    root = root or Root("/")

    def render(console) -> None:
        from rich.text import Text

        def say(*parts) -> None:
            console.print(Text.assemble(*parts))

        s = doc["summary"]
        say(f"{_n(s['amd_gpus'], 'AMD GPU', 'AMD GPUs')}, {s['gfx906_gpus']} gfx906; "
            f"{_n(s['rocm_installs'], 'ROCm install', 'ROCm installs')}, "
            f"{_n(s['rocblas_copies'], 'rocBLAS copy', 'rocBLAS copies')}")
        for g in doc["gpus"]:
            say(f"  GPU{g['index']} {g['bdf']} {g['target'] or '?'} {g['model']}")
        if not doc["findings"]:
            say("No problems found.")
        def folded(head: str, text: str, style: str | None = None, *, atomic: bool = False) -> None:
            for n, line in enumerate(hanging(head, text, console.width, atomic=atomic)):
                first = (line[:len(head)], style) if n == 0 and style else line[:len(head)]
                console.print(Text.assemble(first, line[len(head):]), soft_wrap=True)

        for f in doc["findings"]:
            folded(f"{f['severity']:7} ", f["message"], STYLE[f["severity"]])
            if f["cause"]:
                folded("         cause: ", f["cause"])
            if f["fix_kind"] != FixKind.NONE:
                folded("         fix:   ", runnable(f["fix"], root), atomic=f["fix_kind"] == FixKind.COMMAND)
        c = doc["counts"]
        say(f"{_n(c[Severity.ERROR], 'error', 'errors')}, {_n(c[Severity.WARNING], 'warning', 'warnings')}, "
            f"{_n(c[Severity.INFO], 'note', 'notes')}")
    return render


@policy(writes=False, on_pending=OnPending.REPORT, reads_machine_state=True)
@click.command("doctor")
@shared_options
@click.option("--user", metavar="NAME", help="Check device-node access for this user "
              "(default: $SUDO_USER, else the current user).")
@click.option("--vulkaninfo", "vulkan_file", type=click.Path(exists=True, dir_okay=False),
              callback=text_file_option(lambda t: bool(parse_vulkan_devices(t)) or "vulkan" in t.lower(),
                                        "vulkaninfo or llama.cpp --list-devices output"),
              help="vulkaninfo (or llama.cpp --list-devices) output saved to a file.")
@click.pass_obj
def doctor(ui: UI, pythons, trees, rocminfo_file, deep, no_search, user, vulkan_file):
    """Find problems on this machine and say how to fix them.

    Besides the hardware and the trees: files rocmrevive installed that were changed since
    (what `status` calls drift), a rocBLAS copy `verify` fails, and a transaction a killed run left
    open are errors with their fix; a copy no rocmrevive source serves gets `rocmrevive recipe`.

    Exit code 0 with no errors, 11 when any finding is an error, 9 when a transaction is pending
    (run `rocmrevive recover`), 3 when nothing applies (no gfx906).
    """
    def work() -> Outcome:
        from rocmrevive.trees.survey import diagnose

        s = run_survey(ui, pythons, trees, rocminfo_file, deep, no_search)
        vulkan = Path(vulkan_file).read_text(errors="replace") if vulkan_file else None
        findings = with_rocmrevive_findings(ui, s, diagnose(s, user=user, vulkan_text=vulkan))
        if s.hardware.gpus:
            from rocmrevive.diagnose.programs import find_programs, program_findings

            targets = [g.target for g in s.hardware.gpus if g.target is not None]
            if targets:
                progs = find_programs(ui.root, list(dict.fromkeys(targets)), pythons=pythons,
                                      common=not no_search)
                findings += program_findings(progs)
            from rocmrevive.advice.findings import box_findings  # HSA override, vBIOS, Vulkan+small BAR, MIOpen

            findings += box_findings(ui.root, s, env=os.environ, vulkan_text=vulkan)
        order = list(Severity)
        findings.sort(key=lambda f: order.index(f.severity))
        counts = {sev: sum(1 for f in findings if f.severity is sev) for sev in Severity}
        full = s.to_json()
        # a fix is what the user types: with sudo and this run's --root (pasted, it acts on this machine folder)
        doc = {"summary": full["summary"], "counts": counts,
               "findings": [_runnable_fix(f.to_json(), ui.root) for f in findings],
               "gpus": [{k: g[k] for k in ("index", "node", "bdf", "target", "model", "model_certain")}
                        for g in full["gpus"]]}
        if counts[Severity.ERROR]:
            code, msg = "PROBLEMS_FOUND", (f"{_n(counts[Severity.ERROR], 'error', 'errors')}: "
                                          + "; ".join(f.message for f in findings if f.severity is Severity.ERROR))
        elif not s.supported:
            code, msg = "NOTHING_SUPPORTED", "no gfx906 GPU on this machine; nothing for rocmrevive to do"
        else:
            code, msg = "OK", None
        return Outcome(data=doc, render=render_doctor(doc, ui.root), code=code, message=msg)

    ui.run("doctor", work)


def _runnable_fix(finding: dict, root) -> dict:
    from rocmrevive.cli.ui import runnable

    if finding.get("fix"):
        finding["fix"] = runnable(finding["fix"], root)
    return finding


def with_rocmrevive_findings(ui: UI, s, findings: list) -> list:
    """``findings`` and what rocmrevive did and whether it holds: a pending transaction, drifted or
    missing installed files (``status``'s verdict), a copy ``verify`` fails (``verify``'s), each an
    error with its fix; a copy no manifest has a source for gets the recipe as its fix."""
    from rocmrevive.diagnose.health import state_findings, verify_findings, with_source_fixes
    from rocmrevive.diagnose.status import machine_status
    from rocmrevive.diagnose.verify import verify_machine
    from rocmrevive.errors import RevError
    from rocmrevive.hardware.findings import Finding
    from rocmrevive.txn.state import DEFAULT_STATE_DIR

    sd = ui.state_dir or DEFAULT_STATE_DIR
    try:
        found = state_findings(machine_status(ui.root, state_dir=sd))
    except (RevError, OSError) as exc:
        found = [Finding("journals-unreadable", Severity.WARNING, sd, f"cannot read rocmrevive's journals in {sd}: "
                         f"{getattr(exc, 'message', None) or exc}", "", "none", FixKind.NONE)]
    if not s.supported or not s.copies:
        return findings + found
    has_source = _source_check(s.copies)
    findings = with_source_fixes(findings, has_source)
    flagged = {f.subject for f in findings if f.severity is Severity.ERROR}
    serving = [c for c in s.selected if c.path not in flagged]   # as the survey selected them, once
    if serving:
        try:
            rep = verify_machine(ui.root, copies=serving, targets=[str(g.target) for g in s.hardware.gfx906],
                                 state_dir=ui.state_dir)
        except RevError as exc:
            return findings + found + [Finding("verify-unavailable", Severity.WARNING, "machine",
                                               f"verify could not run: {exc.message}", "", "none", FixKind.NONE)]
        found += verify_findings(rep, flagged, lambda lib: (shell_command(["install", "--tree", lib]) if has_source(lib)
                                                            else shell_command(["recipe", "--tree", lib])))
    return findings + found


def _source_check(copies):
    """``has_source(copy path)``: whether a shipped manifest pins a gfx906 source built for that
    copy's rocBLAS (what ``install`` would take without ``--from``)."""
    from rocmrevive.errors import RevError
    from rocmrevive.sources.manifest import TARGET, choose_manifest
    from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests

    try:
        manifests = load_manifests(default_manifest_dir())
    except RevError:
        manifests = []
    versions = {c.path: c.rocblas_version for c in copies}

    def has_source(path: str) -> bool:
        if not manifests:
            return True  # cannot tell: keep install's own answer
        version = versions.get(path)
        m = choose_manifest(manifests, version, TARGET)
        return m is not None and bool(m.sources_for(version))

    return has_source
