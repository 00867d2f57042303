"""Run the PyTorch probe (``probe.py``, beside this file) with the user's interpreter and read
its JSON lines. rocmrevive never imports torch: the probe runs in another process, and the probe
itself runs every step in a process of its own with a time limit.

    res = run_torch_probe("/opt/venv/bin/python", timeout=180)
    res["status"]   # PartStatus.PASSED | FAILED | UNAVAILABLE
"""
from __future__ import annotations

import contextlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

from rocmrevive.rootfs import Root
from rocmrevive.smoke.record import PartStatus
from rocmrevive.trees.owner_run import Account, Runner, owner_deadline, popen_as, runner_for
from rocmrevive.trees.pythonenv import find_envs, sites_for

PROBE = Path(__file__).with_name("probe.py")
FAULT_ENV = "ROCMREVIVE_PROBE_FAULT"


def _has_torch(python: str) -> bool:
    """Whether ``python`` (a real path) has a torch package, from its files alone: a
    ``torch/version.py`` in one of its site-packages folders. Nothing is run to find out."""
    sites, _ = sites_for(Root("/"), python)
    return any(os.path.isfile(os.path.join(s, "torch", "version.py")) for s in sites)


def _interpreter_of(root: Root, prefix: str, version: str | None) -> str | None:
    """The environment's interpreter as a real path (under ``--root``: inside the image)."""
    names = ([f"python{version}"] if version else []) + ["python3", "python"]
    for n in names:
        p = str(root.path(os.path.join(prefix, "bin", n)))
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def candidate_pythons(root: Root | None = None) -> list[tuple[str, str]]:
    """Interpreters that may carry PyTorch, best first: (path, why). ROCm builds first (found
    by the Python-environment scan, which reads files and runs nothing), then any torch, then
    this interpreter and python3 on PATH (on the host only: under ``--root`` nothing outside
    the image is looked at)."""
    root = Root("/") if root is None else root
    out: list[tuple[str, str]] = []
    try:
        envs, _ = find_envs(root, (), common=True)
    except Exception:  # noqa: BLE001 - the scan is a convenience; never a reason not to smoke
        envs = []
    envs = [e for e in envs if e.torch_version and e.prefix]
    envs.sort(key=lambda e: (e.torch_hip is None,))
    for e in envs:
        py = _interpreter_of(root, e.prefix or "", e.python)
        if py:
            kind = f"ROCm {e.torch_hip}" if e.torch_hip else "not a ROCm build"
            out.append((py, f"torch {e.torch_version} ({kind}) in {e.site_packages}"))
    if not root.is_host:
        return out
    for py, why in ((sys.executable, "rocmrevive's own interpreter"),
                    (shutil.which("python3"), "python3 on PATH")):
        if py and all(os.path.realpath(py) != os.path.realpath(p) for p, _ in out):
            out.append((py, why))
    return out


def pick_python(given: str | None, root: Root | None = None) -> tuple[str | None, str]:
    """(interpreter, why) — ``given`` as it is, else the first candidate whose files hold torch."""
    root = Root("/") if root is None else root
    if given:
        return (shutil.which(given) if os.sep not in given else None) or given, "--python"
    looked = []
    for py, why in candidate_pythons(root):
        looked.append(py)
        if _has_torch(py):
            return py, why
    return None, "no Python with PyTorch found (looked at: %s); pass --python PATH" % (
        ", ".join(looked) or "nothing")


def runner_of(python: str) -> Runner:
    """Who runs ``python``: root only when the interpreter, its folders and its site-packages
    are root's alone; else their one owner (trees.owner_run). RevError("PERMISSION") otherwise."""
    if not os.path.lexists(python):   # nothing to run: the probe's runner says so
        return Runner(None, f"{python} does not exist")
    sites, _ = sites_for(Root("/"), python)
    return runner_for([python], sites)


@contextlib.contextmanager
def staged_probe(account: Account | None) -> Iterator[Path]:
    """The probe's files where ``account`` can read them: beside this file for root; for
    another account a root-owned copy (folder 0755, files 0644) in a fresh temporary folder,
    since rocmrevive itself may live where only root may read (a pyenv under /root)."""
    if account is None:
        yield PROBE
        return
    tmp = tempfile.mkdtemp(prefix="rocmrevive-probe-")
    try:
        os.chmod(tmp, 0o755)
        for src in PROBE.parent.glob("probe*.py"):
            dst = Path(tmp) / src.name
            dst.write_bytes(src.read_bytes())
            os.chmod(dst, 0o644)
        yield Path(tmp) / PROBE.name
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def run_torch_probe(python: str, *, timeout: float = 180.0, cpu_test_mode: bool = False,
                    cpu_devices: int = 2, perf_size: int | None = None,
                    extra_env: dict[str, str] | None = None, only: str | None = None,
                    quiet_limit: float | None = None, soak: float = 0.0,
                    on_record: Callable[[dict], None] | None = None,
                    account: Account | None = None, deadline: float | None = None) -> dict:
    """Run the probe (as ``account`` when given: a user's interpreter never runs as root);
    return a JSON-ready summary with every record it printed. A probe still running after
    ``deadline`` seconds (default for a run as another account: trees.owner_run.owner_deadline)
    is killed, however much it prints: root never waits on a process a user controls.
    ``soak``: seconds to repeat the checked products for (0: one pass)."""
    res: dict = {"status": PartStatus.UNAVAILABLE, "reason": None, "python": python, "torch": None,
                 "platform": None, "hip": None, "cuda": None, "mode": "cpu-test" if cpu_test_mode else "gpu",
                 "devices": [], "hints": [], "peer": [], "allreduce": None, "skipped": [],
                 "failures": [], "warnings": [], "probe_exit": None, "seconds": None, "check_seconds": None,
                 "check_share": None, "stack": None, "soak": [], "records": [],
                 "run_as": account.name if account else None}
    if not (os.path.isfile(python) and os.access(python, os.X_OK)) and not shutil.which(python):
        res["reason"] = f"{python} is not an executable interpreter"
        return res
    env = dict(os.environ)
    env.update(extra_env or {})
    env.setdefault("PYTHONUNBUFFERED", "1")
    if deadline is None and account is not None:
        deadline = owner_deadline()

    # the probe bounds every step itself; this is the net under it: silence for this long
    # means the probe's own supervisor is stuck
    if quiet_limit is None:
        quiet_limit = timeout * 1.5 + 60
    t0 = time.monotonic()
    with staged_probe(account) as probe:
        argv = _probe_argv(python, timeout, cpu_test_mode, cpu_devices, perf_size, only, probe, soak)
        try:
            proc = popen_as(argv, account, env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL)
        except OSError as exc:
            res["reason"] = f"cannot start {python}: {exc.strerror or exc}"
            return res
        err, stuck = _read_records(proc, quiet_limit, res["records"], on_record,
                                   None if deadline is None else t0 + deadline)
        late = stuck and deadline is not None and time.monotonic() - t0 >= deadline
        _reap(proc, stuck, None if deadline is None else max(1.0, t0 + deadline - time.monotonic()))
    res["probe_exit"] = proc.returncode
    res["seconds"] = round(time.monotonic() - t0, 2)
    _summarise(res, err.decode("utf-8", "replace"), stuck, quiet_limit)
    if late and deadline is not None:
        res["reason"] = (f"the PyTorch probe{' run as ' + account.name if account else ''} did not finish "
                         f"in {deadline:g} s and was killed")
        res["failures"][-1]["message"] = res["reason"]
    return res


def _reap(proc: subprocess.Popen, kill: bool, wait: float | None) -> None:
    """Collect the probe: its process group killed first when ``kill``, or when it is still
    there ``wait`` seconds after both its pipes closed (a process that closed its output and
    stopped is not waited on for ever)."""
    if not kill:
        try:
            proc.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            kill = True
    if kill:
        for target in (lambda: os.killpg(proc.pid, signal.SIGKILL), lambda: proc.kill()):
            try:
                target()
            except OSError:
                pass
    proc.wait()
    for f in (proc.stdout, proc.stderr):
        if f is not None:
            f.close()


def _probe_argv(python: str, timeout: float, cpu_test_mode: bool, cpu_devices: int,
                perf_size: int | None, only: str | None, probe: Path = PROBE, soak: float = 0.0) -> list[str]:
    """The probe's command line for these options."""
    argv = [python, str(probe), "--json-lines", "--timeout", str(timeout)]
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
                  on_record: Callable[[dict], None] | None, until: float | None = None) -> tuple[bytes, bool]:
    """Read the probe's JSON-line records into ``records`` until both pipes close; return
    (the tail of its stderr, whether it went quiet for ``quiet_limit`` seconds or was still
    talking at the monotonic time ``until``: stuck)."""
    assert proc.stdout is not None and proc.stderr is not None   # both piped
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    buf, err = b"", b""
    open_, last, stuck = 2, time.monotonic(), False
    try:
        while open_:
            now = time.monotonic()
            if now - last > quiet_limit or (until is not None and now >= until):
                stuck = True
                break
            for key, _ in sel.select(timeout=1.0):
                chunk = os.read(key.fd, 65536)
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
    except (ValueError, RecursionError):   # the user's interpreter may print anything
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
