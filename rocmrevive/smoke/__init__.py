"""Smoke tests: does the user's software compute right on their GPUs, and how fast?

- ``probe.py``: the PyTorch probe, a self-contained script run by the user's interpreter
  (rocmrevive never imports torch); ``torch_runner`` runs it and reads its JSON lines.
- ``llama``: the user's llama.cpp on a tiny model from ``gguf_model``, per GPU and on all.
- ``record``: the status record ``/var/lib/rocmrevive/smoke/last.json``.
- ``run_smoke`` below: both parts, the verdict and the record.

Verdict (the CLI's exit code): any check failed -> SMOKE_FAILED (10); a part asked for by name
(``--torch``/``--llama``) that could not run while another did -> SMOKE_FAILED; nothing could run
at all (no GPU devices, no PyTorch, no llama.cpp) -> NOTHING_SUPPORTED (3); else OK (0).
"""
from __future__ import annotations

import datetime as _dt
import socket
import time
from typing import Callable

from rocmrevive.rootfs import Root
from rocmrevive.smoke import llama as llama_mod
from rocmrevive.smoke import record as record_mod
from rocmrevive.smoke import torch_runner
from rocmrevive.smoke.record import PartStatus, RunStatus

__all__ = ["PARTS", "PartStatus", "run_smoke", "verdict"]

PARTS = ("torch", "llama")


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def verdict(parts: dict[str, dict], explicit: set[str]) -> tuple[str, str | None]:
    """(code, message) from each part's ``status`` (a ``PartStatus``)."""
    failed = [n for n, p in parts.items() if p["status"] == PartStatus.FAILED]
    passed = [n for n, p in parts.items() if p["status"] == PartStatus.PASSED]
    missing = [n for n, p in parts.items() if p["status"] == PartStatus.UNAVAILABLE and n in explicit]
    label = {"torch": "PyTorch", "llama": "llama.cpp"}
    if failed:
        n = failed[0]
        return "SMOKE_FAILED", f"{label[n]}: {parts[n].get('reason')}"
    if not passed:
        why = "; ".join(f"{label[n]}: {p.get('reason')}" for n, p in parts.items())
        return "NOTHING_SUPPORTED", f"nothing could run ({why})"
    if missing:
        n = missing[0]
        return "SMOKE_FAILED", f"--{n} was asked for but could not run: {parts[n].get('reason')}"
    return "OK", None


def run_smoke(root: Root, *, torch: bool, llama: bool, explicit: set[str] | None = None,
              python: str | None = None, llama_bin: str | None = None,
              cpu_test_mode: bool = False, cpu_devices: int = 2, timeout: float = 180.0,
              on_torch_record: Callable[[dict], None] | None = None,
              on_llama_run: Callable | None = None, write_record: bool = True) -> dict:
    """Run the selected parts; return {"parts": {...}, "code", "message", "record", ...}."""
    explicit = set(explicit or ())
    started, t0 = _now(), time.monotonic()
    parts: dict[str, dict] = {}
    if torch:
        py, why = torch_runner.pick_python(python, root)
        if py is None:
            parts["torch"] = {"status": PartStatus.UNAVAILABLE, "reason": why, "python": None}
        else:
            # found by reading files; run as its owner when it is a user's (RevError: refused)
            who = torch_runner.runner_of(py)
            res = torch_runner.run_torch_probe(py, timeout=timeout, cpu_test_mode=cpu_test_mode,
                                               cpu_devices=cpu_devices, on_record=on_torch_record,
                                               account=who.account)
            res["python_chosen_because"] = why
            parts["torch"] = res
    if llama:
        parts["llama"] = llama_mod.run_llama_smoke(llama_bin, timeout=timeout,
                                                   cpu_test_mode=cpu_test_mode, on_run=on_llama_run)
    code, message = verdict(parts, explicit)
    seconds = round(time.monotonic() - t0, 2)
    checks = (parts.get("torch") or {}).get("check_seconds")
    doc = {"started_at": started, "finished_at": _now(), "mode": "cpu-test" if cpu_test_mode else "gpu",
           "parts": parts, "skipped": [{"part": n, "reason": p.get("reason")}
                                       for n, p in parts.items() if p["status"] == PartStatus.UNAVAILABLE],
           "code": code, "message": message, "record": None, "record_error": None, "seconds": seconds,
           # the PyTorch checks' cost against the whole smoke's time (PyTorch and llama.cpp)
           "check_seconds": checks, "check_share": round(checks / seconds, 4) if checks and seconds else None}
    status = {"OK": RunStatus.PASSED, "SMOKE_FAILED": RunStatus.FAILED}.get(code, RunStatus.NOTHING_RAN)
    # a run that ran nothing proved nothing: the last record (and `status`'s line) stays as it was
    if write_record and status is not RunStatus.NOTHING_RAN:
        if cpu_test_mode and status is RunStatus.PASSED:  # ran on the CPU: proves nothing about the GPUs
            status = RunStatus.PASSED_CPU_TEST
        rec = {"started_at": doc["started_at"], "finished_at": doc["finished_at"], "status": status,
               "code": code, "message": message, "mode": doc["mode"], "host": socket.gethostname(),
               "parts": {n: _compact(n, p) for n, p in parts.items()}}
        try:
            doc["record"] = record_mod.write_last(root, rec)
        except OSError as exc:
            doc["record_error"] = f"cannot write {record_mod.RECORD_PATH}: {exc.strerror or exc}"
    return doc


def _compact(name: str, p: dict) -> dict:
    """A part without its raw records, for the status record."""
    if name == "torch":
        keep: tuple[str, ...] = ("status", "reason", "python", "torch", "platform", "hip", "cuda", "devices", "hints",
                "allreduce", "failures", "warnings", "check_seconds", "check_share")
    else:
        keep = ("status", "reason", "binary", "backends", "gpu_backend", "failures", "warnings")
    out = {k: p.get(k) for k in keep if k in p}
    if name == "llama":
        out["runs"] = [{k: r.get(k) for k in ("label", "ok", "prompt_tps", "gen_tps", "message")}
                       for r in p.get("runs", [])]
        gen = p.get("output") or {}
        out["output"] = {"compared": gen.get("compared"),
                         "runs": [{k: r.get(k) for k in ("label", "ok", "position", "message")}
                                  for r in gen.get("runs", [])]}
    return out
