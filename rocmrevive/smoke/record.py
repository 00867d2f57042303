"""The smoke status record: ``<root>/var/lib/rocmrevive/smoke/last.json``, the outcome of the
last ``rocmrevive smoke`` run, so that ``rocmrevive status`` can say when the stack was last
proven to work (``last_passed_at`` survives a later failed run).

    write_last(root, record) ; read_last(root) -> dict | None
"""
from __future__ import annotations

import json

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir
from rocmrevive.rootfs import Root
from rocmrevive.strenum import StrEnum

RECORD_PATH = "/var/lib/rocmrevive/smoke/last.json"
RECORD_SCHEMA = 1


class PartStatus(StrEnum):
    """One part's outcome (``torch_runner`` and ``llama`` set it; ``smoke.verdict`` reads it)."""

    PASSED = "passed"
    FAILED = "failed"            # a check failed or a step hung
    UNAVAILABLE = "unavailable"  # could not run here (no PyTorch, no GPU, no llama.cpp): ``reason`` says why


class RunStatus(StrEnum):
    """The record's ``status``: the whole run's outcome (``rocmrevive status`` shows it)."""

    PASSED = "passed"
    FAILED = "failed"
    SLOW = "slow"                         # results right, a shape class far slower than expected
    NOTHING_RAN = "nothing_ran"
    PASSED_CPU_TEST = "passed-cpu-test"   # --cpu-test-mode: proves nothing about the GPUs


def read_last(root: Root) -> dict | None:
    p = root.path(RECORD_PATH)
    try:
        with open(p, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def write_last(root: Root, record: dict) -> str:
    """Write atomically; carries ``last_passed_at`` forward. Returns the machine path.
    Raises OSError when the folder cannot be written."""
    prev = read_last(root) or {}
    rec = dict(record)
    rec["record_schema"] = RECORD_SCHEMA
    if rec.get("status") == RunStatus.PASSED:
        rec["last_passed_at"] = rec.get("finished_at")
    else:
        rec["last_passed_at"] = prev.get("last_passed_at")
    p = root.path(RECORD_PATH)
    data = (json.dumps(rec, indent=2, default=str) + "\n").encode()
    try:  # through the state folder's descriptor (rocmrevive.fs): never through a link
        with Dir.open(p.parent, create=True, what="state folder") as d:
            d.write_atomic(p.name, data)
    except RevError as exc:
        raise OSError(exc.message) from None
    return RECORD_PATH
