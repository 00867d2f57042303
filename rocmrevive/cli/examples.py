"""One or two examples per command, added to its ``--help`` (and so to the man page, whose
EXAMPLES section is the newcomer's path, NEWCOMER_PATH). Only plain data here: ``--help`` stays cheap.

    EXAMPLES["install"]  # [("sudo rocmrevive install --check --diff", "what would change, changing nothing"), ...]
"""
from __future__ import annotations

import inspect

# the order `rocmrevive --help` lists commands in: a newcomer's first day, then the rest
NEWCOMER_ORDER = ("detect", "doctor", "install", "verify", "status", "rollback")

EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "detect": [("rocmrevive detect", "GPUs, PCIe topology, ROCm installs and rocBLAS copies")],
    "doctor": [("rocmrevive doctor", "every problem found, with the command that fixes it")],
    "install": [("sudo rocmrevive install --check --diff", "what would change; changes nothing (exit 20 if it "
                 "would)"), ("sudo rocmrevive install", "apply, after a prompt (-y for none)"),
                ("sudo rocmrevive install --from librocblas4_6.4.4-4_amd64.deb", "an air-gapped host"),
                ("sudo rocmrevive install --smoke", "the PyTorch smoke before and after: did it get slower?")],
    "verify": [("rocmrevive verify", "every rocBLAS copy against every GPU"),
               ("rocmrevive verify --tree /opt/rocm-6.4.3 --target gfx906", "one tree, one target")],
    "status": [("rocmrevive status", "what rocmrevive changed where, and whether it is intact (exit 8 if not)"),
               ("rocmrevive history -v", "the same (history is its alias), with every file")],
    "rollback": [("sudo rocmrevive rollback --dry-run", "what the undo would do"),
                 ("sudo rocmrevive rollback", "undo the last install, byte for byte"),
                 ("sudo rocmrevive rollback --orphans", "remove installed files whose journal was lost")],
    "recover": [("sudo rocmrevive recover", "finish or undo what a killed run left open")],
    "inspect": [("rocmrevive inspect /opt/rocm/lib/rocblas/library", "the GPU targets of every code object"),
                ("rocmrevive inspect --deep ./my_program", "also every kernel and metadata note")],
    "manifests": [("rocmrevive manifests list", "the shipped sources and what they serve")],
    "manifests list": [("rocmrevive manifests list --json", "as one JSON document")],
    "manifests check": [("rocmrevive manifests check ./my-manifests", "line-precise errors")],
    "manifests show": [("rocmrevive manifests show rocblas-4.4-gfx906", "one manifest's sources and pins")],
    "fetch": [("rocmrevive fetch --to /srv/gfx906", "download and verify, then export for other hosts")],
    "audit": [("rocmrevive audit", "which ROCm libraries carry code for which GPU")],
    "explain": [("rocmrevive explain 'rocBLAS error: Cannot read TensileLibrary.dat'", "cause and fix"),
                ("rocmrevive explain --file ollama.log", "every known error in a log")],
    "smoke": [("rocmrevive smoke", "PyTorch and llama.cpp on every GPU, results checked")],
    "recipe": [("rocmrevive recipe -o build-rocblas.sh", "the exact rocBLAS build for a tree no source serves")],
    "rccl": [("rocmrevive rccl audit", "RCCL targets and peer-to-peer readiness")],
    "rccl audit": [("rocmrevive rccl audit --python ~/venv/bin/python", "with the RCCL a PyTorch uses")],
    "rccl install": [("sudo rocmrevive rccl install --from ./rccl-build", "a gfx906 RCCL beside ROCm's")],
    "rccl recipe": [("rocmrevive rccl recipe -o build-rccl.sh", "the RCCL build for these GPUs")],
    "rccl env": [("rocmrevive rccl env -o rccl.env", "the environment a multi-GPU job needs")],
    "patch": [("rocmrevive patch list", "the patches and whether they apply")],
    "patch list": [("rocmrevive patch list --python ~/venv/bin/python", "for one environment")],
    "patch verify": [("rocmrevive patch verify", "whether applied patches are intact")],
    "patch apply": [("sudo rocmrevive patch apply --dry-run", "what would change")],
    "patch rollback": [("sudo rocmrevive patch rollback", "undo the applied patches")],
    "hook": [("sudo rocmrevive hook install", "check after every apt run")],
    "hook install": [("sudo rocmrevive hook install --reapply", "re-install after an upgrade removed the files")],
    "hook remove": [("sudo rocmrevive hook remove", "back to no hook")],
    "hook status": [("rocmrevive hook status", "whether the hook is installed and what it did last")],
    "hook run": [("rocmrevive hook run --mode check", "what apt runs after dpkg")],
    "cache": [("sudo rocmrevive cache clean --dry-run", "what would be freed")],
    "cache clean": [("sudo rocmrevive cache clean", "free what no manifest needs")],
    "exit-codes": [("rocmrevive exit-codes --json", "the table as JSON")],
    "completion": [('eval "$(rocmrevive completion bash)"', "in ~/.bashrc")],
}


def with_examples(path: str, help_text: str | None) -> str | None:
    """``help_text`` with its command's examples appended (once), kept as written by click (\\b)."""
    rows = EXAMPLES.get(path)
    if not rows or (help_text and "\nExamples:\n" in help_text):
        return help_text
    body = "\n".join(f"  # {why}\n  {c}" for c, why in rows)  # one column: fits 80 (and a copy)
    # click cleans the help's indentation when it prints it: clean it first, or the examples'
    # smaller indent would become the common one
    return f"{inspect.cleandoc(help_text or '').rstrip()}\n\n\b\nExamples:\n{body}"
