"""Errors are values: a stable code, an exit status and one human line (what, where, what to do).

The CLI maps them to exit codes and the JSON ``error`` field in one place (``cli/main.py``);
nothing below ``cli/`` prints or exits.

    raise RevError("NOTHING_SUPPORTED", "no gfx906 GPU found under /; pass --target gfx906 to plan anyway")
"""
from __future__ import annotations

# code -> (exit status, meaning). The README's table and the Ansible collection's ``EXIT`` are
# generated from this one (``make exit-codes``; tests/test_exit_codes.py checks they agree).
EXIT_CODES: dict[str, tuple[int, str]] = {
    "OK": (0, "success (changed or not: see JSON `changed`)"),
    "INTERNAL": (1, "unexpected internal error (a bug; `-v` shows the traceback)"),
    "USAGE": (2, "bad option, missing or malformed input"),
    "NOTHING_SUPPORTED": (3, "nothing applicable: no gfx906 GPU, unsupported tree, no code object"),
    "PERMISSION": (4, "not root, a tree another user owns or can write, tree read-only, disk full, "
                      "device nodes inaccessible"),
    "NETWORK": (5, "download or mirror failure (retry)"),
    "VERIFY_FAILED": (6, "checksum, signature, ELF target or Tensile cross-reference wrong"),
    "LOCKED": (7, "another rocmrevive (or apt/dpkg) is running (retry)"),
    "DRIFT": (8, "managed files changed outside rocmrevive (`--force` overrides)"),
    "INTERRUPTED": (9, "an interrupted transaction was found: run `rocmrevive recover`"),
    "SMOKE_FAILED": (10, "a smoke test failed"),
    "PROBLEMS_FOUND": (11, "`doctor` found at least one error on the machine"),
    "SMOKE_SLOW": (12, "`smoke`: results right, but a shape class several times slower than this "
                       "card's last pass or its floor, or llama.cpp's tokens/s several times below its last pass"),
    "CHANGES_PENDING": (20, "`install --check`: changes would be made"),
    "CANCELLED": (130, "interrupted (Ctrl-C) and nothing was left to recover"),
    "PIPE_CLOSED": (141, "stdout closed early (a reader such as `head` stopped): output ends there, quietly"),
}


def exit_code(code: str) -> int:
    return EXIT_CODES.get(code, EXIT_CODES["INTERNAL"])[0]


def by_exit_status() -> list[tuple[int, str, str]]:
    """The table as rows ``(exit, code, meaning)``, lowest exit first.

        for num, code, meaning in by_exit_status(): ...
    """
    return sorted((num, code, meaning) for code, (num, meaning) in EXIT_CODES.items())


def exit_table_markdown() -> str:
    """The README's exit-code table (Markdown), generated from ``EXIT_CODES``."""
    rows = ["| exit | code | meaning |", "|---|---|---|"]
    rows += [f"| {num} | {code} | {meaning} |" for num, code, meaning in by_exit_status()]
    return "\n".join(rows) + "\n"


def exit_table_python(name: str = "EXIT") -> str:
    """The Ansible collection's copy (standard library only there, so it cannot import this)."""
    items = [f'"{code}": {num},' for num, code, _ in by_exit_status()]
    lines, line = [], "   "
    for item in items:
        if len(line) + 1 + len(item) > 100:
            lines.append(line)
            line = "   "
        line += " " + item
    lines.append(line)
    return f"{name} = {{\n" + "\n".join(lines) + "\n}\n"


class RevError(Exception):
    """An expected failure with a code from ``EXIT_CODES`` and one line for a human."""

    def __init__(self, code: str, message: str, *, details: dict | None = None):
        if code not in EXIT_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.details = details or {}

    @property
    def exit(self) -> int:
        return exit_code(self.code)

    def to_json(self) -> dict:
        out = {"code": self.code, "exit": self.exit, "message": self.message}
        if self.details:
            out["details"] = self.details
        return out
