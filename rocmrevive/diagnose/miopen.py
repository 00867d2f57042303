"""Doctor's and audit's verdict on MIOpen's gfx906 databases, per tree (``trees.miopen`` reads
the names): what a missing kernel database, find-db or perf-db costs, and that no pinned source of
built gfx906 databases exists for rocmrevive to install.

    for f in miopen_findings(miopen_trees(root, installs, envs), hw): print(f.message)
"""
from __future__ import annotations

from rocmrevive.hardware.findings import Finding, FixKind, Severity

NO_SOURCE = ("rocmrevive knows no pinned, verifiable source of built gfx906 MIOpen databases (Debian's and "
             "Ubuntu's libmiopen1 ship none; AMD's packages of ROCm 6.4+ none for gfx906), so it installs none")
CACHE = ("the kernels MIOpen compiles on first use are kept in ~/.cache/miopen and its tuning in ~/.config/miopen: "
         "keep both between runs (a container needs them on a volume)")


def miopen_findings(trees, hw) -> list[Finding]:
    """One finding per tree with MIOpen on a machine with a gfx906 card: a warning when the
    tree has no (or only some) gfx906 databases, a note when it has all three kinds."""
    if not any(g.processor == "gfx906" for g in hw.gpus):
        return []
    out = []
    for t in trees:
        v = t.verdict
        data = t.to_json()
        if v == "complete":
            out.append(Finding("miopen-gfx906-db", Severity.INFO, t.prefix,
                               f"MIOpen in {t.prefix} has gfx906 databases ({', '.join(t.kdb + t.find_db + t.perf_db)})",
                               "precompiled kernels and tuned solvers for the card", "none", FixKind.NONE, data))
            continue
        where = t.db_folder or f"{t.prefix}/share/miopen/db (absent)"
        others = f"; it has databases for {', '.join(t.other_targets)} only" if t.other_targets else ""
        out.append(Finding(
            "miopen-no-gfx906-db" if v != "partial" else "miopen-partial-gfx906-db", Severity.WARNING, t.prefix,
            f"MIOpen in {t.prefix} ({t.library}) has {'only some' if v == 'partial' else 'no'} gfx906 databases in "
            f"{where}{others}",
            (t.costs or "") + " (PyTorch convolutions: ComfyUI, Stable Diffusion, Whisper)",
            f"{NO_SOURCE}; {CACHE}", FixKind.NONE, data))
    return out
