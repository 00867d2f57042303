"""Run the PyTorch probe (``probe.py``, beside this file) with the user's interpreter and read
its JSON lines. rocmrevive never imports torch: the probe runs in another process, and the probe
itself runs every step in a process of its own with a time limit.

    res = run_torch_probe("/opt/venv/bin/python", timeout=180)
    res["status"]   # PartStatus.PASSED | FAILED | UNAVAILABLE
"""
from __future__ import annotations

import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from rocmrevive.rootfs import Root
from rocmrevive.smoke.record import PartStatus
from rocmrevive.trees.pythonenv import find_envs

PROBE = Path(__file__).with_name("probe.py")
FAULT_ENV = "ROCMREVIVE_PROBE_FAULT"


def _has_torch(python: str, timeout: float = 30) -> bool:
    """Whether ``python`` can find a torch package (found, not imported: cheap)."""
    try:
        r = subprocess.run([python, "-c", "import importlib.util,sys;"
                            "sys.exit(0 if importlib.util.find_spec('torch') else 1)"],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=timeout)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return r.returncode == 0


def _interpreter_of(prefix: str, version: str | None) -> str | None:
    names = ([f"python{version}"] if version else []) + ["python3", "python"]
    for n in names:
        p = os.path.join(prefix, "bin", n)
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def candidate_pythons() -> list[tuple[str, str]]:
    """Interpreters that may carry PyTorch, best first: (path, why). ROCm builds first (found
    by the Python-environment scan), then any torch, then this interpreter and python3 on PATH."""
    out: list[tuple[str, str]] = []
    try:

        envs, _ = find_envs(Root("/"), (), common=True)
    except Exception:  # noqa: BLE001 - the scan is a convenience; never a reason not to smoke
        envs = []
    envs = [e for e in envs if e.torch_version and e.prefix]
    envs.sort(key=lambda e: (e.torch_hip is None,))
    for e in envs:
        py = _interpreter_of(e.prefix, e.python)
        if py:
            kind = f"ROCm {e.torch_hip}" if e.torch_hip else "not a ROCm build"
            out.append((py, f"torch {e.torch_version} ({kind}) in {e.site_packages}"))
    for py, why in ((sys.executable, "rocmrevive's own interpreter"),
                    (shutil.which("python3"), "python3 on PATH")):
        if py and all(os.path.realpath(py) != os.path.realpath(p) for p, _ in out):
            out.append((py, why))
    return out


def pick_python(given: str | None) -> tuple[str | None, str]:
    """(interpreter, why) — ``given`` as it is, else the first candidate with torch."""
    if given:
        return (shutil.which(given) if os.sep not in given else None) or given, "--python"
    looked = []
    for py, why in candidate_pythons():
        looked.append(py)
        if _has_torch(py):
            return py, why
    return None, "no Python with PyTorch found (looked at: %s); pass --python PATH" % (
        ", ".join(looked) or "nothing")


def run_torch_probe(python: str, *, timeout: float = 180.0, cpu_test_mode: bool = False,
                    cpu_devices: int = 2, perf_size: int | None = None,
                    extra_env: dict[str, str] | None = None, only: str | None = None,
                    quiet_limit: float | None = None, soak: float = 0.0,
                    on_record: Callable[[dict], None] | None = None) -> dict:
    """Run the probe; return a JSON-ready summary with every record it printed."""
    res: dict = {"status": PartStatus.UNAVAILABLE, "reason": None, "python": python, "torch": None,
                 "platform": None, "hip": None, "cuda": None, "mode": "cpu-test" if cpu_test_mode else "gpu",
                 "devices": [], "hints": [], "peer": [], "allreduce": None, "skipped": [],
                 "failures": [], "warnings": [], "probe_exit": None, "seconds": None, "check_seconds": None,
                 "check_share": None, "stack": None, "soak": [], "records": []}
    if not (os.path.isfile(python) and os.access(python, os.X_OK)) and not shutil.which(python):
        res["reason"] = f"{python} is not an executable interpreter"
        return res
    argv = _probe_argv(python, timeout, cpu_test_mode, cpu_devices, perf_size, only, soak)
    env = dict(os.environ)
    env.update(extra_env or {})
    env.setdefault("PYTHONUNBUFFERED", "1")

    # the probe bounds every step itself; this is the net under it: silence for this long
    # means the probe's own supervisor is stuck
    if quiet_limit is None:
        quiet_limit = timeout * 1.5 + 60
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    err, stuck = _read_records(proc, quiet_limit, res["records"], on_record)
    if stuck:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    res["probe_exit"] = proc.returncode
    res["seconds"] = round(time.monotonic() - t0, 2)
    _summarise(res, err.decode("utf-8", "replace"), stuck, quiet_limit)
    return res


def _probe_argv(python: str, timeout: float, cpu_test_mode: bool, cpu_devices: int,
                perf_size: int | None, only: str | None, soak: float = 0.0) -> list[str]:
    """The probe's command line for these options."""
    argv = [python, str(PROBE), "--json-lines", "--timeout", str(timeout)]
    if cpu_test_mode:
        argv += ["--cpu-test-mode", "--cpu-devices", str(cpu_devices)]
    if perf_size:
        argv += ["--perf-size", str(perf_size)]
    if only:
        argv += ["--only", only]
    if soak:
        argv += ["--soak", str(soak)]
    return argv


def _read_records(proc: subprocess.Popen, quiet_limit: float, records: list[dict],
                  on_record: Callable[[dict], None] | None) -> tuple[bytes, bool]:
    """Read the probe's JSON-line records into ``records`` until both pipes close; return
    (the tail of its stderr, whether it went quiet for ``quiet_limit`` seconds: stuck)."""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    buf, err = b"", b""
    open_, last, stuck = 2, time.monotonic(), False
    try:
        while open_:
            if time.monotonic() - last > quiet_limit:
                stuck = True
                break
            for key, _ in sel.select(timeout=1.0):
                chunk = os.read(key.fileobj.fileno(), 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                    open_ -= 1
                    continue
                last = time.monotonic()
                if key.data == "err":
                    err = (err + chunk)[-20000:]
                    continue
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    _take_record(line, records, on_record)
    finally:
        sel.close()
    return err, stuck


def _take_record(line: bytes, records: list[dict], on_record: Callable[[dict], None] | None) -> None:
    """Keep one output line if it is a probe record (a JSON object with a type)."""
    try:
        rec = json.loads(line)
    except ValueError:
        return
    if isinstance(rec, dict) and "type" in rec:
        records.append(rec)
        if on_record:
            on_record(rec)


_DEVICE_KEYS = ("index", "name", "arch", "compute_capability", "model", "memory_bytes",
                "compute_units", "pci_bus_id", "peak_tflops", "peak_source", "uuid", "hbm_gb_per_s")
_GEMM_KEYS = ("ok", "checks", "failed_checks", "tflops", "ratio", "slow", "shapes", "gemm_seconds",
              "check_seconds", "bandwidth")


def _summarise(res: dict, stderr: str, stuck: bool, quiet_limit: float) -> None:
    """Fill ``res`` from the probe's records, then decide its status."""
    recs = res["records"]
    _collect(res, recs)
    summaries = {r["device"]: r for r in recs if r.get("type") == "device_summary"}
    for d in res["devices"]:
        s = summaries.get(d["index"])
        d["gemm"] = None if s is None else {k: s.get(k) for k in _GEMM_KEYS}
    for p in res["peer"]:
        if not p.get("ok"):
            res["failures"].append({"step": "peer", "src": p.get("src"), "dst": p.get("dst"),
                                    "message": p.get("message")})
    ar = res["allreduce"]
    if ar and not ar.get("ok"):
        res["failures"].append({"step": "allreduce", "message": ar.get("message")})
    result = next((r for r in reversed(recs) if r.get("type") == "result"), None)
    if result:
        res["warnings"] += list(result.get("warnings") or [])
        res["check_seconds"], res["check_share"] = result.get("check_seconds"), result.get("check_share")
    _set_status(res, result, stderr, stuck, quiet_limit)


def _collect(res: dict, recs: list[dict]) -> None:
    """Sort the records by type into the summary's lists."""
    for r in recs:
        t = r.get("type")
        rest = {k: v for k, v in r.items() if k != "type"}
        if t == "env":
            res.update(torch=r.get("torch"), platform=r.get("platform"), hip=r.get("hip"),
                       cuda=r.get("cuda"))
        elif t == "device":
            res["devices"].append({k: r.get(k) for k in _DEVICE_KEYS})
        elif t == "hint":
            res["hints"].append(rest)
        elif t == "stack":
            res["stack"] = rest
        elif t == "soak":
            res["soak"].append(rest)
        elif t == "peer":
            res["peer"].append(rest)
        elif t == "allreduce":
            res["allreduce"] = rest
        elif t == "skip":
            res["skipped"].append({"step": r.get("step"), "reason": r.get("reason")})
        elif t in ("gemm", "perf", "bandwidth") and not r.get("ok"):
            res["failures"].append({"step": t, "device": r.get("device"), "dtype": r.get("dtype"),
                                    "case": r.get("case"), "shape": r.get("shape"),
                                    "message": r.get("message")})
        elif t == "failure":
            res["failures"].append(rest)


def _set_status(res: dict, result: dict | None, stderr: str, stuck: bool, quiet_limit: float) -> None:
    """passed / failed / unavailable, with the reason, from the probe's result record."""
    if stuck:
        res["status"] = PartStatus.FAILED
        res["reason"] = (f"the PyTorch probe printed nothing for {quiet_limit:g} s and was killed "
                         f"(its own step limits did not fire: a hang in the driver?)")
        res["failures"].append({"step": "probe", "message": res["reason"], "timeout": True})
    elif result is None:
        res["status"] = PartStatus.FAILED
        tail = " | ".join([ln for ln in stderr.strip().splitlines() if ln.strip()][-4:])
        res["reason"] = (f"the PyTorch probe exited with status {res['probe_exit']} without a result"
                         + (f": {tail}" if tail else ""))
        res["failures"].append({"step": "probe", "message": res["reason"]})
    # the probe's own words (probe.py runs in the user's interpreter and imports nothing of rocmrevive)
    elif result.get("status") == "passed" and res["probe_exit"] == 0 and not res["failures"]:
        res["status"] = PartStatus.PASSED
    elif result.get("status") in ("no_devices", "no_torch"):
        res["status"] = PartStatus.UNAVAILABLE
        res["reason"] = result.get("reason")
    else:
        res["status"] = PartStatus.FAILED
        res["reason"] = result.get("reason") or (res["failures"][0]["message"] if res["failures"] else
                                                 f"probe exit status {res['probe_exit']}")
        if not res["failures"]:
            res["failures"].append({"step": "probe", "message": res["reason"]})
