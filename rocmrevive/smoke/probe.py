#!/usr/bin/env python3
"""rocmrevive's PyTorch smoke probe: torch + the standard library only (with probe_gemm.py beside it).

rocmrevive runs it with the *user's* interpreter (the one with their ROCm PyTorch), so rocmrevive
itself never imports torch:

    python probe.py --json-lines                   # every visible GPU
    python probe.py --json-lines --cpu-test-mode   # the CPU as 2 "devices" (tests the checking)
    python probe.py --json-lines --timeout 120     # seconds per step before it counts as a hang

What it checks, each step in its own process with its own time limit (a hang is a failure with a
message, never a stuck run):

  enumerate  torch, its HIP/CUDA version, each visible device: name, arch (gcnArchName on ROCm,
             compute capability on CUDA), memory, compute units, the card's vendor peak
  gemm       per device (probe_gemm.py): fp32/fp16/bf16 GEMMs in the shapes workloads run
             (decode M = 1-16, prefill, tall-skinny, deep K, batched, square; transposes),
             each timed (TFLOPS per shape) and checked whole, every element (Freivalds:
             C.x against A.(B.x) in float64, against the rounding bound); the 8192^3 product's
             TFLOPS against the vendor peak: a card that works but crawls stands out; then a
             large device copy (1 GiB), timed (GB/s against the card's HBM figure) and checked
  stack      (after device 0's GEMMs) torch, HIP/CUDA, the BLAS libraries mapped and rocBLAS's Tensile
             folder: rocmrevive keys its per-shape speed records by this fingerprint
  peer       per ordered pair of devices: peer access, and a copy checked byte for byte
  allreduce  with 2 or more devices: torch.distributed all-reduce (nccl = RCCL on ROCm) in one
             process per device, checked for the exact sum
  soak       with --soak SECONDS: every device at once repeats the checked products for that
             long ({"type": "soak_tick"} about once a second, {"type": "soak"} at the end)

Output: JSON lines on stdout, one object per line, each with a "type"; the last one is
{"type": "result", "status": ..., "exit": ...}. Exit status: 0 passed, 10 a check failed,
3 nothing to test (torch missing, or no GPU devices).

Environment hints that users need are applied to the worker processes and reported as
{"type": "hint"} records (TORCH_BLAS_PREFER_HIPBLASLT=0 on gfx906, which hipBLASLt does not
support). A value the user set is kept and reported.

Fault injection, for rocmrevive's own tests (never set it otherwise):
    ROCMREVIVE_PROBE_FAULT=gemm            corrupt one GEMM result (first device, first case)
    ROCMREVIVE_PROBE_FAULT=gemm:bf16       ... only in bf16
    ROCMREVIVE_PROBE_FAULT=perf            corrupt the timed GEMM
    ROCMREVIVE_PROBE_FAULT=copy            corrupt one peer copy
    ROCMREVIVE_PROBE_FAULT=bandwidth       corrupt the device copy (first device)
    ROCMREVIVE_PROBE_FAULT=soak            corrupt the 8th product of the soak
    ROCMREVIVE_PROBE_FAULT=allreduce       corrupt the all-reduce on rank 0
    ROCMREVIVE_PROBE_FAULT=hang:STEP       hang in STEP (enumerate, gemm, peer, allreduce)
    ROCMREVIVE_PROBE_FAULT=hang:peer:1-0   hang in the copy from device 1 to device 0
    ROCMREVIVE_PROBE_FAULT=crash:STEP      the worker dies with SIGABRT in STEP
Several, comma-separated.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
import time

# probe_gemm.py ships beside this file; -I (isolated) leaves the script's folder off sys.path
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import probe_gemm  # noqa: E402

PROBE_VERSION = 2
EXIT_PASSED, EXIT_FAILED, EXIT_NOTHING = 0, 10, 3
FAULT_ENV = "ROCMREVIVE_PROBE_FAULT"
DTYPES = probe_gemm.DTYPES

# A device whose best GEMM reaches less than this share of its vendor peak is flagged "slow"
# (a healthy MI50 reaches ~0.6-0.8 in fp32; a memory clock stuck at its lowest level costs 2.5-9x).
SLOW_RATIO = 0.3

# Vendor peak TFLOPS (boost clock): fp32, fp16, bf16. gfx906 has no bf16 units: rocBLAS runs bf16
# on the fp32 ALUs, so its bf16 peak is the fp32 one. A copy of rocmrevive/data/cards.toml (each
# figure's source is there; tests/test_smoke_expect.py checks that the two agree): the probe runs
# in the user's interpreter and reads nothing of rocmrevive.
PEAKS = {
    "MI50": (13.4, 26.8, 13.4),
    "MI60": (14.7, 29.5, 14.7),
    "Radeon VII": (13.8, 27.7, 13.8),
    "Radeon Pro VII": (13.1, 26.1, 13.1),
    # NVIDIA, dense tensor-core figures for fp16/bf16; lets the probe be tried there.
    "H100": (67.0, 989.0, 989.0),
    "H100 PCIe": (51.0, 756.0, 756.0),
    "H200": (67.0, 989.0, 989.0),
}
# Memory bandwidth, GB/s (the HBM figure the copy probe is held to); from the same table.
HBM_GB_S = {"MI50": 1024.0, "MI60": 1024.0, "Radeon VII": 1024.0, "Radeon Pro VII": 1024.0,
            "H100": 3350.0, "H100 PCIe": 2000.0, "H200": 4800.0}

# Environment hints per arch prefix: (variable, value, why)
HINTS = {
    "gfx906": [("TORCH_BLAS_PREFER_HIPBLASLT", "0",
                "hipBLASLt has no gfx906 kernels; PyTorch must use rocBLAS for matmul")],
}


# --------------------------------------------------------------------------------------------
# small helpers (both sides)
# --------------------------------------------------------------------------------------------
_EMIT_LOCK = threading.Lock()


def emit(rec: dict) -> None:
    line = json.dumps(rec, sort_keys=False, default=str) + "\n"
    with _EMIT_LOCK:  # the soak's and all-reduce's threads relay records too
        sys.stdout.write(line)
        sys.stdout.flush()


def faults() -> list:
    return [f.strip() for f in os.environ.get(FAULT_ENV, "").split(",") if f.strip()]


def fault_point(step: str) -> None:
    """Injected hang or crash in ``step`` (tests only)."""
    for f in faults():
        if f == "hang:" + step:
            emit({"type": "progress", "what": "injected hang in " + step})
            while True:
                time.sleep(3600)
        if f == "crash:" + step:
            sys.stdout.flush()
            os.abort()


def identify_card(name: str, arch: str, cus) -> tuple:
    """(model, (fp32, fp16, bf16) peaks, how) from what torch reports. Names are unreliable on
    ROCm ("AMD Instinct MI50/MI60", "AMD Radeon Graphics"), so gfx906 goes by compute units."""
    low = (name or "").lower()
    if (arch or "").startswith("gfx906"):
        if "pro vii" in low:
            return "Radeon Pro VII", PEAKS["Radeon Pro VII"], "name"
        if "radeon vii" in low:
            return "Radeon VII", PEAKS["Radeon VII"], "name"
        if cus == 64:
            return "MI60", PEAKS["MI60"], "64 compute units"
        if cus == 60:
            return "MI50", PEAKS["MI50"], "60 compute units (Radeon VII/Pro VII peaks differ by <5%)"
        return None, None, "gfx906 with %s compute units: unknown board" % cus
    for model in ("H200", "H100"):
        if model.lower() in low:
            if model == "H100" and "pcie" in low:
                model = "H100 PCIe"
            return model, PEAKS[model], "name"
    return None, None, "no vendor peak known for this device"


# --------------------------------------------------------------------------------------------
# workers: each runs in its own process, imports torch, prints JSON lines
# --------------------------------------------------------------------------------------------
def _import_torch():
    import torch  # noqa: F401, PLC0415 — probe.py runs in the user's interpreter, where torch is imported when the probe runs

    # fp32 means fp32: no TF32 (which would fail the fp32 tolerance, rightly). Newer PyTorch has
    # fp32_precision and refuses a mix of the old and new switches, so set only one of them.
    try:
        if hasattr(torch.backends.cuda.matmul, "fp32_precision"):
            torch.backends.cuda.matmul.fp32_precision = "ieee"
        else:
            torch.backends.cuda.matmul.allow_tf32 = False
    except Exception:  # noqa: BLE001 - a torch without this switch, or one that refuses it: the default stays
        pass
    # fp16/bf16 accumulate in fp32 throughout (split-K partial sums too), as rocBLAS does on gfx906
    for switch in ("allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction"):
        try:
            setattr(torch.backends.cuda.matmul, switch, False)
        except Exception:  # noqa: BLE001 - a torch without this switch, or one that refuses it: the default stays
            pass
    return torch


def _platform(torch) -> str:
    if getattr(torch.version, "hip", None):
        return "rocm"
    if getattr(torch.version, "cuda", None):
        return "cuda"
    return "cpu"


def _dev(torch, args, index: int):
    return torch.device("cpu") if args.cpu_test_mode else torch.device("cuda", index)


def _sync(torch, dev) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def worker_enumerate(args) -> int:
    emit({"type": "progress", "what": "import torch"})
    try:
        torch = _import_torch()
    except Exception as exc:  # noqa: BLE001 - no torch in this interpreter, or a broken one: a result to report
        emit({"type": "env", "torch": None, "python": sys.executable,
              "error": "%s: %s" % (type(exc).__name__, exc)})
        return 0
    fault_point("enumerate")
    plat = _platform(torch)
    env = {"type": "env", "torch": torch.__version__, "python": sys.executable,
           "python_version": sys.version.split()[0], "platform": plat,
           "hip": getattr(torch.version, "hip", None), "cuda": getattr(torch.version, "cuda", None)}
    if args.cpu_test_mode:
        env.update(mode="cpu-test", device_count=args.cpu_devices)
        emit(env)
        for i in range(args.cpu_devices):
            emit({"type": "device", "index": i, "name": "CPU (test mode)", "arch": "cpu",
                  "compute_capability": None, "memory_bytes": None, "compute_units": os.cpu_count(),
                  "pci_bus_id": None, "model": None, "peak_tflops": None, "uuid": None,
                  "peak_source": "the CPU in test mode has no vendor peak", "hbm_gb_per_s": None})
        return 0
    emit({"type": "progress", "what": "torch.cuda.device_count()"})
    try:
        avail = bool(torch.cuda.is_available())
        count = torch.cuda.device_count() if avail else 0
    except Exception as exc:  # noqa: BLE001 - a broken ROCm runtime raises anything: a result to report
        env.update(device_count=0, error="%s: %s" % (type(exc).__name__, exc))
        emit(env)
        return 0
    env["device_count"] = count
    env["visible"] = {k: os.environ[k] for k in ("HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES",
                                                  "CUDA_VISIBLE_DEVICES") if k in os.environ}
    emit(env)
    for i in range(count):
        emit({"type": "progress", "what": "properties of device %d" % i})
        p = torch.cuda.get_device_properties(i)
        arch = getattr(p, "gcnArchName", None) if plat == "rocm" else None
        cc = "%d.%d" % (p.major, p.minor) if plat == "cuda" else None
        cus = getattr(p, "multi_processor_count", None)
        model, peak, how = identify_card(p.name, arch or "", cus)
        bus = None
        if getattr(p, "pci_bus_id", None) is not None:
            bus = "%04x:%02x:%02x" % (getattr(p, "pci_domain_id", 0), p.pci_bus_id,
                                      getattr(p, "pci_device_id", 0))
        emit({"type": "device", "index": i, "name": p.name, "arch": arch or ("sm_%d%d" % (p.major, p.minor)),
              "compute_capability": cc, "memory_bytes": int(p.total_memory), "compute_units": cus,
              "pci_bus_id": bus, "model": model, "uuid": _uuid(p),
              "peak_tflops": dict(zip(DTYPES, peak)) if peak else None, "peak_source": how,
              "hbm_gb_per_s": HBM_GB_S.get(model) if model else None})
    return 0


def _uuid(props):
    """The device's unique id as torch reports it (CUDA, and ROCm builds that fill it), or None."""
    u = getattr(props, "uuid", None)
    try:
        text = str(u) if u is not None else ""
    except Exception:  # noqa: BLE001 - an odd object: no id
        text = ""
    return text or None


# the libraries whose build decides how fast a product runs (the fingerprint of the stack)
STACK_LIBS = ("librocblas", "libhipblas", "libhipblaslt", "libamdhip64", "libMIOpen", "libcublas",
              "libcublasLt", "libcudart", "libtorch_hip", "libtorch_cuda", "libtorch_cpu", "libmkl",
              "libopenblas", "libgomp", "libtensile")


def _listing_digest(folder: str):
    """(files, sha256 of the sorted name/size/mtime listing) of one folder, or (None, None)."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return None, None
    h = hashlib.sha256()
    for n in names:
        try:
            st = os.stat(os.path.join(folder, n))
        except OSError:
            continue
        h.update(("%s\0%d\0%d\n" % (n, st.st_size, st.st_mtime_ns)).encode("utf-8", "replace"))
    return len(names), h.hexdigest()[:16]


def stack_fingerprint(torch, dev) -> dict:
    """{"type": "stack"}: what this process's products run on: torch, its HIP/CUDA, the BLAS
    libraries it mapped (path, size, mtime) and rocBLAS's Tensile folder (a digest of its
    listing). rocmrevive keys its speed records by it: a graft or an upgrade is a new stack."""
    try:  # load the BLAS libraries (they are mapped lazily, at the first product)
        for dt in (torch.float32, torch.float16):
            a = torch.ones((64, 64), device=dev, dtype=dt)
            float((a @ a).sum())
    except Exception:  # noqa: BLE001 - a broken BLAS shows in the GEMM step; the fingerprint is what was mapped
        pass
    libs = {}
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            lines = f.read().splitlines()
    except OSError:
        lines = []
    for line in lines:
        fields = line.split(None, 5)
        path = fields[5].strip() if len(fields) == 6 else ""
        base = os.path.basename(path)
        if not path.startswith("/") or base in libs or not base.startswith(STACK_LIBS):
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        libs[base] = {"path": path, "size": st.st_size, "mtime": int(st.st_mtime)}
    tensile = os.environ.get("ROCBLAS_TENSILE_LIBPATH")
    rocblas = next((str(v["path"]) for k, v in libs.items() if k.startswith("librocblas")), None)
    if not tensile and rocblas:
        tensile = os.path.join(os.path.dirname(rocblas), "rocblas", "library")
    files, digest = _listing_digest(tensile) if tensile else (None, None)
    return {"type": "stack", "torch": torch.__version__, "hip": getattr(torch.version, "hip", None),
            "cuda": getattr(torch.version, "cuda", None),
            "libs": libs, "tensile": {"path": tensile, "files": files, "digest": digest} if tensile else None}


def _worker_device(args, step):
    """torch, the worker's device and its index, set up for products; the fault point ``step``."""
    emit({"type": "progress", "what": "import torch"})
    torch = _import_torch()
    i = args.device
    dev = _dev(torch, args, i)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    else:  # small CPU products: one thread is faster than two fighting a busy CI machine
        torch.set_num_threads(1)
    fault_point(step)
    return torch, dev, i


def worker_gemm(args) -> int:
    torch, dev, i = _worker_device(args, "gemm")
    probe_gemm.run_device(torch, dev, i, args, emit, faults())
    if i == 0:  # what the products ran on: the BLAS libraries are mapped by now
        emit(stack_fingerprint(torch, dev))
    return 0


def worker_soak(args) -> int:
    torch, dev, i = _worker_device(args, "soak")
    probe_gemm.soak(torch, dev, i, args, emit, faults())
    return 0


def worker_peer(args) -> int:
    emit({"type": "progress", "what": "import torch"})
    torch = _import_torch()
    fault_point("peer")
    flts = faults()
    nbytes = 64 << 20 if not args.cpu_test_mode else 4 << 20
    gen = torch.Generator().manual_seed(99)
    src_host = torch.randint(-128, 127, (nbytes,), dtype=torch.int8, generator=gen)
    for pair in args.pairs.split(","):
        s, d = (int(x) for x in pair.split("-"))
        emit({"type": "progress", "what": "copy device %d -> device %d" % (s, d), "pair": pair})
        fault_point("peer:" + pair)
        can = None
        if not args.cpu_test_mode:
            try:
                can = bool(torch.cuda.can_device_access_peer(s, d))
            except Exception:  # noqa: BLE001 - torch raises anything for a peer query: unknown, not a crash
                can = None
        try:
            x = src_host.to(_dev(torch, args, s))
            _sync(torch, x.device)
            t0 = time.perf_counter()
            if args.cpu_test_mode:
                y = x.clone()
            else:
                y = x.to(_dev(torch, args, d))
            _sync(torch, y.device)
            _sync(torch, x.device)
            secs = time.perf_counter() - t0
            back = y.cpu()
            if "copy" in flts and pair == args.pairs.split(",")[0]:
                back = back.clone()
                back[12345] += 1
            diff = int((back != src_host).sum())
            rec = {"type": "peer", "src": s, "dst": d, "can_access_peer": can, "ok": diff == 0,
                   "bytes": nbytes, "seconds": round(secs, 6),
                   "gb_per_s": round(nbytes / secs / 1e9, 3) if secs > 0 else None}
            if diff:
                rec["message"] = "copy device %d -> device %d corrupted %d of %d bytes" % (s, d, diff, nbytes)
        except Exception as exc:  # noqa: BLE001 - a failed copy (HIP error, out of memory, ...) is this pair's result
            rec = {"type": "peer", "src": s, "dst": d, "can_access_peer": can, "ok": False,
                   "message": "%s: %s" % (type(exc).__name__, str(exc).strip().splitlines()[0] if str(exc).strip() else "")}
        emit(rec)
    return 0


def worker_allreduce(args) -> int:
    torch = _import_torch()
    from datetime import timedelta  # noqa: PLC0415 — probe.py runs in the user's interpreter, where torch is imported when the probe runs

    import torch.distributed as dist  # noqa: PLC0415 — probe.py runs in the user's interpreter, where torch is imported when the probe runs

    rank, world = args.rank, args.world
    backend = "gloo" if args.cpu_test_mode else "nccl"
    fault_point("allreduce")
    dev = _dev(torch, args, rank)
    if dev.type == "cuda":
        torch.cuda.set_device(dev)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ["MASTER_PORT"] = str(args.port)
    t0 = time.perf_counter()
    dist.init_process_group(backend, rank=rank, world_size=world,
                            timeout=timedelta(seconds=max(10, int(args.timeout))))
    n = (16 << 20) if not args.cpu_test_mode else (1 << 20)
    # integers well inside fp32's exact range: the sum must be exact
    base = (torch.arange(n, dtype=torch.float32) % 1024)
    x = (base * (rank + 1)).to(dev)
    dist.all_reduce(x)  # warm-up and the checked one
    _sync(torch, dev)
    t1 = time.perf_counter()
    y = (base * (rank + 1)).to(dev)
    dist.all_reduce(y)
    _sync(torch, dev)
    secs = time.perf_counter() - t1
    got = x.cpu()
    if rank == 0 and "allreduce" in faults():
        got = got.clone()
        got[777] += 1
    expect = base * (world * (world + 1) // 2)
    bad = int((got != expect).sum()) + int((y.cpu() != expect).sum())
    rec = {"type": "allreduce_rank", "rank": rank, "world_size": world, "backend": backend,
           "ok": bad == 0, "elements": n, "seconds": round(secs, 6),
           "init_seconds": round(t1 - t0, 3),
           "busbw_gb_per_s": round(2 * (world - 1) / world * n * 4 / secs / 1e9, 3) if secs > 0 else None}
    if bad:
        idx = int((got != expect).nonzero()[0]) if bool((got != expect).any()) else None
        rec["message"] = "all-reduce sum wrong in %d of %d elements%s" % (
            bad, 2 * n, "" if idx is None else " (element %d: got %g, expected %g)" % (idx, got[idx].item(), expect[idx].item()))
    emit(rec)
    dist.destroy_process_group()
    return 0


# --------------------------------------------------------------------------------------------
# orchestrator: stdlib only; runs the workers with time limits and judges the results
# --------------------------------------------------------------------------------------------
class StepResult:
    def __init__(self):
        self.records = []
        self.rc = None
        self.timed_out = False
        self.last_progress = None
        self.stderr = ""
        self.seconds = 0.0


def _tail(text: str, n: int = 6) -> str:
    lines = [ln for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def _no_devices_why(envrec: dict, res) -> str:
    """Why PyTorch listed no GPU: its own error, else what kind of build it is (and what it said)."""
    why = envrec.get("error")
    if why:
        return why
    plat = envrec.get("platform")
    why = ("torch %s is a CPU-only build" % envrec.get("torch") if plat == "cpu" else
           "torch %s (%s) sees none" % (envrec.get("torch"), plat))
    said = _tail(res.stderr, 2)  # e.g. a warning about /dev/kfd permissions
    if plat != "cpu" and said:
        why += "; it said: " + said
    return why


def run_step(argv: list, env: dict, timeout: float, relay=None) -> StepResult:
    """Run one worker; collect its JSON lines; kill its process group after ``timeout`` s."""
    res = StepResult()
    t0 = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None   # both piped
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    bufs = {"out": b"", "err": b""}
    open_ = 2
    deadline = t0 + timeout
    while open_:
        left = deadline - time.monotonic()
        if left <= 0:
            res.timed_out = True
            break
        for key, _ in sel.select(timeout=min(left, 1.0)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fileobj)
                open_ -= 1
                continue
            if key.data == "err":
                bufs["err"] = (bufs["err"] + chunk)[-20000:]
                continue
            bufs["out"] += chunk
            while b"\n" in bufs["out"]:
                line, bufs["out"] = bufs["out"].split(b"\n", 1)
                try:
                    rec = json.loads(line.decode("utf-8", "replace"))
                except ValueError:
                    continue  # the user's torch may print to stdout
                if not isinstance(rec, dict):
                    continue
                if rec.get("type") == "progress":
                    res.last_progress = rec.get("what")
                    continue
                res.records.append(rec)
                if relay:
                    relay(rec)
    if res.timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:  # pragma: no cover - unkillable (D state in the driver)
        pass
    sel.close()
    proc.stdout.close()
    proc.stderr.close()
    res.rc = proc.returncode
    res.stderr = bufs["err"].decode("utf-8", "replace")
    res.seconds = time.monotonic() - t0
    return res


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Orchestrator:
    def __init__(self, args):
        self.args = args
        self.failures = []
        self.warnings = []
        self.env = dict(os.environ)
        self.t0 = time.monotonic()
        self.check_seconds = 0.0

    # output --------------------------------------------------------------------------------
    def out(self, rec):
        emit(rec)

    def fail(self, step, message, **kw):
        rec = {"type": "failure", "step": step, "message": message}
        rec.update(kw)
        self.failures.append(rec)
        self.out(rec)

    def worker_argv(self, *extra):
        # the workers run as this process was started: same interpreter, same isolation flags
        flags = [f for f, on in (("-I", sys.flags.isolated), ("-S", sys.flags.no_site),
                                 ("-E", sys.flags.ignore_environment and not sys.flags.isolated),
                                 ("-s", sys.flags.no_user_site and not sys.flags.isolated)) if on]
        argv = [sys.executable] + flags + [os.path.abspath(__file__), "--worker"] + list(extra)
        argv += ["--timeout", str(self.args.timeout)]
        if self.args.cpu_test_mode:
            argv += ["--cpu-test-mode", "--cpu-devices", str(self.args.cpu_devices)]
        if self.args.perf_size:
            argv += ["--perf-size", str(self.args.perf_size)]
        argv += ["--perf-seconds", str(self.args.perf_seconds)]
        if self.args.soak:
            argv += ["--soak", str(self.args.soak)]
        return argv

    def step_failed(self, step, res: StepResult, what: str, **kw) -> bool:
        """Report a worker that hung or died; True when it did."""
        if res.timed_out:
            where = (" (it was at: %s)" % res.last_progress) if res.last_progress else ""
            self.fail(step, "%s did not finish within %s s: a hang%s; the GPU or its driver may "
                      "be stuck (check dmesg), or raise --timeout" % (what, self.args.timeout, where),
                      timeout=True, **kw)
            return True
        if res.rc != 0:
            sig = (" (signal %d)" % -res.rc) if res.rc is not None and res.rc < 0 else ""
            where = (" at: %s" % res.last_progress) if res.last_progress else ""
            self.fail(step, "%s died with exit status %s%s%s: %s" % (
                what, res.rc, sig, where, _tail(res.stderr) or "no message"), exit_status=res.rc, **kw)
            return True
        return False

    # steps ------------------------------------------------------------------------------------
    def run(self) -> int:
        a = self.args
        self.out({"type": "probe", "probe_version": PROBE_VERSION, "python": sys.executable,
                  "mode": "cpu-test" if a.cpu_test_mode else "gpu", "timeout_s": a.timeout,
                  "faults": faults() or None})
        res = run_step(self.worker_argv("enumerate"), self.env, a.timeout, relay=self.out)
        if self.step_failed("enumerate", res, "listing the devices"):
            return self.finish()
        envrec: dict = next((r for r in res.records if r.get("type") == "env"), {})
        devices = [r for r in res.records if r.get("type") == "device"]
        if not envrec.get("torch"):
            return self.finish(nothing="no_torch", reason="PyTorch is not importable by %s: %s" % (
                sys.executable, envrec.get("error", "no output")))
        if not devices:
            return self.finish(nothing="no_devices", reason="no GPU devices: " + _no_devices_why(envrec, res))
        self.apply_hints(devices)
        n = len(devices)
        only = {x.strip() for x in a.only.split(",") if x.strip()}
        want = lambda step: not only or step in only  # noqa: E731
        slow_devices = self.gemm_all(devices) if want("gemm") else []
        if n >= 2:
            if want("peer"):
                self.peer_all(n)
            if want("allreduce"):
                self.allreduce(n)
        else:
            self.out({"type": "skip", "step": "peer", "reason": "needs 2 or more devices"})
            self.out({"type": "skip", "step": "allreduce", "reason": "needs 2 or more devices"})
        if a.soak and (not only or "soak" in only):
            self.soak_all(devices)
        if slow_devices:
            self.warnings.append("device(s) %s work but reach less than %d%% of the vendor peak "
                                 "(memory clock stuck low? check `rocm-smi --showclocks`)"
                                 % (", ".join(map(str, slow_devices)), SLOW_RATIO * 100))
        return self.finish()

    def gemm_all(self, devices) -> list:
        """GEMMs on each device, one worker each; the indexes of the devices found slow."""
        slow_devices = []
        for d in devices:
            i = d["index"]
            recs = run_step(self.worker_argv("gemm", "--device", str(i)), self.env, self.args.timeout,
                            relay=self.out)
            if self.step_failed("gemm", recs, "GEMMs on device %d" % i, device=i):
                continue
            summary = self.judge_gemm(d, recs.records)
            self.out(summary)
            if summary["slow"]:
                slow_devices.append(i)
        return slow_devices

    def soak_all(self, devices) -> None:
        """The soak: every device at once (heat builds as in a real job), one worker each, for
        ``--soak`` seconds; every product checked. One {"type": "soak_summary"} per device."""
        limit = self.args.timeout + self.args.soak
        results = {}

        def one(i):
            results[i] = run_step(self.worker_argv("soak", "--device", str(i)), self.env, limit,
                                  relay=self.out)
        threads = [threading.Thread(target=one, args=(d["index"],)) for d in devices]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for d in devices:
            i = d["index"]
            res = results[i]
            if self.step_failed("soak", res, "the soak on device %d" % i, device=i):
                continue
            end = next((r for r in res.records if r.get("type") == "soak"), None)
            if end is None:
                self.fail("soak", "device %d: the soak worker ended without its summary" % i, device=i)
                continue
            if end.get("errors"):
                self.fail("soak", "device %d: %d of %d products wrong during the soak, the first after "
                          "%s s: %s" % (i, end["errors"], end["products"], end.get("first_failure_s"),
                                        end.get("first_failure")), device=i, soak=end)

    def peer_all(self, n: int) -> None:
        """Peer copies between every ordered pair; a worker that hangs or dies on a pair is
        reported for that pair and a new one goes on with the pairs after it."""
        pairs = ["%d-%d" % (s, t) for s in range(n) for t in range(n) if s != t]
        while pairs:
            res = run_step(self.worker_argv("peer", "--pairs", ",".join(pairs)), self.env,
                           self.args.timeout, relay=self.out)
            done = {"%d-%d" % (r["src"], r["dst"]) for r in res.records if r.get("type") == "peer"}
            for r in res.records:
                if r.get("type") == "peer" and not r.get("ok"):
                    self.failures.append(r)
            left = [p for p in pairs if p not in done]
            if not (res.timed_out or res.rc != 0) or not left:
                if left:
                    self.fail("peer", "the peer-copy worker ended without checking %s" % ", ".join(left))
                break
            stuck = left[0]
            self.step_failed("peer", res, "copy device %s -> device %s" % tuple(stuck.split("-")),
                             pair=stuck)
            pairs = left[1:]

    def apply_hints(self, devices):
        archs = sorted({str(d.get("arch") or "") for d in devices})
        seen = set()
        for arch in archs:
            for prefix, hints in HINTS.items():
                if not arch.startswith(prefix):
                    continue
                for var, val, why in hints:
                    if var in seen:
                        continue
                    seen.add(var)
                    user = os.environ.get(var)
                    if user is None:
                        self.env[var] = val
                    self.out({"type": "hint", "name": var, "value": val, "arch": prefix,
                              "applied": user is None, "user_value": user, "reason": why})

    def judge_gemm(self, dev, recs) -> dict:
        i = dev["index"]
        gemms = [r for r in recs if r.get("type") == "gemm"]
        perfs = [r for r in recs if r.get("type") == "perf"]
        copy = next((r for r in recs if r.get("type") == "bandwidth"), None)
        if copy is None:
            self.fail("gemm", "device %d: the GEMM worker reported no device copy" % i, device=i)
        elif not copy.get("ok"):
            self.failures.append(copy)
        cost: dict = next((r for r in recs if r.get("type") == "gemm_cost"), {})
        bad = [r for r in gemms + perfs if not r.get("ok")]
        for r in bad:
            self.failures.append(r)
        want = (len(probe_gemm.cases(self.args.cpu_test_mode)) + 1) * len(DTYPES)
        if len(gemms) + len(perfs) != want or len(perfs) != len(DTYPES):
            self.fail("gemm", "device %d: the GEMM worker reported %d of %d checks" % (
                i, len(gemms) + len(perfs), want), device=i)
        tflops = {r["dtype"]: r.get("tflops") for r in perfs if r.get("tflops") is not None}
        peak = dev.get("peak_tflops") or {}
        ratio = {k: round(v / peak[k], 3) for k, v in tflops.items() if peak.get(k)}
        slow = bool(ratio) and max(ratio.get("fp32", 0), ratio.get("fp16", 0)) < SLOW_RATIO
        self.check_seconds += cost.get("check_seconds") or 0.0
        return {"type": "device_summary", "device": i, "name": dev.get("name"), "arch": dev.get("arch"),
                "model": dev.get("model"), "ok": not bad and bool(copy and copy.get("ok")), "checks": len(gemms) + len(perfs),
                "failed_checks": len(bad), "tflops": tflops, "peak_tflops": peak or None,
                "ratio": ratio or None, "slow": slow, "shapes": _shapes(gemms + perfs),
                "bandwidth": {k: copy.get(k) for k in ("ok", "bytes", "gb_per_s", "seconds", "message")}
                if copy else None,
                "gemm_seconds": cost.get("seconds"), "check_seconds": cost.get("check_seconds")}

    def allreduce(self, n):
        a = self.args
        port = _free_port()
        procs = []
        results: list = [None] * n
        def one(rank):
            env = dict(self.env)
            env.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            results[rank] = run_step(self.worker_argv("allreduce", "--rank", str(rank), "--world",
                                                      str(n), "--port", str(port)), env, a.timeout)
        for r in range(n):
            t = threading.Thread(target=one, args=(r,))
            t.start()
            procs.append(t)
        for t in procs:
            t.join()
        rank_recs = []
        hung = [r for r in range(n) if results[r].timed_out]
        died = [r for r in range(n) if not results[r].timed_out and results[r].rc != 0]
        for r in range(n):
            rank_recs += [x for x in results[r].records if x.get("type") == "allreduce_rank"]
        rec = {"type": "allreduce", "world_size": n, "backend": "gloo" if a.cpu_test_mode else "nccl",
               "ok": False, "ranks_ok": sum(1 for x in rank_recs if x.get("ok"))}
        if rank_recs:
            secs = max(x.get("seconds") or 0 for x in rank_recs)
            rec.update(elements=rank_recs[0].get("elements"), seconds=secs,
                       busbw_gb_per_s=min((x.get("busbw_gb_per_s") or 0) for x in rank_recs))
        msgs = [x["message"] for x in rank_recs if x.get("message")]
        if hung:
            where = results[hung[0]].last_progress
            rec["message"] = ("all-reduce over %d devices did not finish within %s s on rank(s) %s: "
                              "a hang (RCCL/NCCL peer-to-peer? try NCCL_P2P_DISABLE=1 to narrow it down)%s"
                              % (n, a.timeout, ",".join(map(str, hung)), (" (at: %s)" % where) if where else ""))
            rec["timeout"] = True
        elif died:
            r0 = died[0]
            rec["message"] = "all-reduce rank %d died with exit status %s: %s" % (
                r0, results[r0].rc, _tail(results[r0].stderr) or "no message")
        elif len(rank_recs) != n:
            rec["message"] = "all-reduce: only %d of %d ranks reported" % (len(rank_recs), n)
        elif msgs:
            rec["message"] = msgs[0]
        else:
            rec["ok"] = True
        self.out(rec)
        if not rec["ok"]:
            self.failures.append(rec)

    def finish(self, nothing=None, reason=None) -> int:
        secs = round(time.monotonic() - self.t0, 2)
        cost = {"check_seconds": round(self.check_seconds, 3),
                "check_share": round(self.check_seconds / secs, 4) if secs > 0 else None}
        if nothing:
            rec = {"type": "result", "status": nothing, "exit": EXIT_NOTHING, "reason": reason,
                   "failures": 0, "warnings": self.warnings, "seconds": secs}
        elif self.failures:
            first = self.failures[0]
            rec = {"type": "result", "status": "failed", "exit": EXIT_FAILED,
                   "failures": len(self.failures), "warnings": self.warnings, "seconds": secs,
                   "reason": first.get("message") or "%s check failed" % first.get("type")}
        else:
            rec = {"type": "result", "status": "passed", "exit": EXIT_PASSED, "failures": 0,
                   "warnings": self.warnings, "seconds": secs}
        rec.update(cost)
        self.out(rec)
        return rec["exit"]


def _shapes(recs) -> list:
    """One row per shape: its class, size and TFLOPS in each dtype (the JSON's and table's view)."""
    rows: dict = {}
    for r in recs:
        row = rows.setdefault(r.get("case"), {"case": r.get("case"), "class": r.get("class"),
                                              "op": r.get("op"), "shape": r.get("shape"),
                                              "transposed": r.get("transposed"), "tflops": {}})
        row["tflops"][r.get("dtype")] = r.get("tflops")
    return list(rows.values())


def parse_args(argv=None):
    p = argparse.ArgumentParser(description="rocmrevive PyTorch smoke probe (JSON lines on stdout)")
    p.add_argument("--json-lines", action="store_true", help="JSON lines on stdout (the only format)")
    p.add_argument("--timeout", type=float, default=180.0, help="seconds per step before it is a hang")
    p.add_argument("--cpu-test-mode", action="store_true",
                   help="use the CPU as the compute device(s): tests the checking logic without a GPU")
    p.add_argument("--cpu-devices", type=int, default=2, help="logical devices in --cpu-test-mode")
    p.add_argument("--perf-size", type=int, default=0, help="n of the timed n*n*n GEMM (default 8192, 256 on CPU)")
    p.add_argument("--perf-seconds", type=float, default=None,
                   help="time spent in each timed GEMM (default 0.5, 0.1 on the CPU)")
    p.add_argument("--only", default="", metavar="STEPS",
                   help="comma-separated steps to run: gemm, peer, allreduce, soak (default: all)")
    p.add_argument("--soak", type=float, default=0.0, metavar="SECONDS",
                   help="after the checks, repeat the checked products on every device for this long")
    # internal: worker processes
    p.add_argument("--worker", choices=("enumerate", "gemm", "peer", "allreduce", "soak"), help=argparse.SUPPRESS)
    p.add_argument("--device", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--pairs", default="", help=argparse.SUPPRESS)
    p.add_argument("--rank", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--world", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--port", type=int, default=0, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.perf_seconds is None:
        args.perf_seconds = 0.1 if args.cpu_test_mode else 0.5
    if args.worker:
        return {"enumerate": worker_enumerate, "gemm": worker_gemm, "peer": worker_peer,
                "allreduce": worker_allreduce, "soak": worker_soak}[args.worker](args)
    return Orchestrator(args).run()


if __name__ == "__main__":
    sys.exit(main())
