"""``rocmrevive doctor``: problems on this machine, each with a severity, its cause and the fix.

Exit codes: 0 when no finding is an error; 11 (PROBLEMS_FOUND) when at least one is; 3
(NOTHING_SUPPORTED) when there are no errors and no gfx906 GPU (nothing to do).
"""
from __future__ import annotations

import re
from pathlib import Path

import click

from rocmrevive.cli.detect import run_survey, shared_options
from rocmrevive.cli.ui import UI, Outcome, text_file_option
from rocmrevive.hardware.findings import FixKind, Severity
from rocmrevive.hardware.vulkan import parse_vulkan_devices

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

    Exit code 0 with no errors, 11 when any finding is an error, 3 when nothing applies (no gfx906).
    """
    def work() -> Outcome:
        from rocmrevive.trees.survey import diagnose

        s = run_survey(ui, pythons, trees, rocminfo_file, deep, no_search)
        vulkan = Path(vulkan_file).read_text(errors="replace") if vulkan_file else None
        findings = diagnose(s, user=user, vulkan_text=vulkan)
        if s.hardware.gpus:
            from rocmrevive.diagnose.programs import find_programs, program_findings

            targets = [g.target for g in s.hardware.gpus if g.target is not None]
            if targets:
                progs = find_programs(ui.root, list(dict.fromkeys(targets)), pythons=pythons,
                                      common=not no_search)
                findings += program_findings(progs)
        counts = {sev: sum(1 for f in findings if f.severity is sev) for sev in Severity}
        full = s.to_json()
        doc = {"summary": full["summary"], "counts": counts,
               "findings": [f.to_json() for f in findings],
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
