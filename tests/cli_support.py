"""The CLI as a user runs it, for the tests: ``python -m rocmrevive.cli.main --root ROOT ARGS``
in a child process, without colour.

    rc, doc, err = rr_parsed(root, "--json", "rccl", "audit")   # doc: the parsed JSON document
    doc = jrun(root, "detect", rc=0)                            # --json, exit status checked
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def _run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), *args],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})


def rr_parsed(root: Path, *args: str) -> tuple[int, Any, str]:
    """(exit status, the JSON document where ``--json`` is among ``args`` else stdout, stderr)."""
    r = _run(root, *args)
    return r.returncode, (json.loads(r.stdout) if "--json" in args else r.stdout), r.stderr


def jrun(root: Path, *args: str, rc: int) -> Any:
    """The JSON document of ``rocmrevive --json ARGS``; the exit status must be ``rc``."""
    r = _run(root, "--json", *args)
    assert r.returncode == rc, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return json.loads(r.stdout)
