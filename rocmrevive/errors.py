"""Errors are values: a stable code, an exit status and one human line (what, where, what to do).

The CLI maps them to exit codes and the JSON ``error`` field in one place (``cli/main.py``);
nothing below ``cli/`` prints or exits.

    raise RevError("NOTHING_SUPPORTED", "no gfx906 GPU found under /; pass --target gfx906 to plan anyway")
"""
from __future__ import annotations

# code -> (exit status, meaning). The README's table is generated from the same facts.
EXIT_CODES: dict[str, tuple[int, str]] = {
    "OK": (0, "success (changed or not: see JSON `changed`)"),
    "INTERNAL": (1, "unexpected internal error (a bug; run with -v for the traceback)"),
    "USAGE": (2, "usage error: bad option, missing or malformed input"),
    "NOTHING_SUPPORTED": (3, "nothing applicable: no gfx906 GPU, unsupported ROCm tree, not a code object"),
    "PERMISSION": (4, "permission or environment: not root, tree read-only, device nodes inaccessible"),
    "NETWORK": (5, "download or mirror failure (retry)"),
    "VERIFY_FAILED": (6, "verification failed: checksum, signature, ELF target, Tensile cross-reference"),
    "LOCKED": (7, "another rocmrevive (or apt/dpkg) is running (retry)"),
    "DRIFT": (8, "managed files changed outside rocmrevive (use --force to override)"),
    "INTERRUPTED": (9, "an interrupted transaction was found; run `rocmrevive recover`"),
    "SMOKE_FAILED": (10, "smoke test failed"),
    "PROBLEMS_FOUND": (11, "doctor found at least one error on the machine"),
    "CHANGES_PENDING": (20, "--check: changes would be made"),
}


def exit_code(code: str) -> int:
    return EXIT_CODES.get(code, EXIT_CODES["INTERNAL"])[0]


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
