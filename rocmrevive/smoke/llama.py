"""Run the user's llama.cpp on a tiny model written here, on each GPU in turn and then on all.

The binary is ``llama-bench`` (preferred: ``-o json`` gives tokens/s directly) or, failing that,
``llama-completion``/``llama-cli`` (tokens/s parsed from its timing lines), from ``--llama-bin
DIR`` or PATH. Each GPU runs alone, made the only visible one through its backend's variable
(HIP_VISIBLE_DEVICES for ROCm, CUDA_VISIBLE_DEVICES for CUDA, GGML_VK_VISIBLE_DEVICES for
Vulkan), every layer offloaded (``-ngl 99``); then all GPUs together. A run that exits non-zero,
hangs past its time limit, prints no result or runs on no GPU is a failure. A binary built
without a GPU backend is reported as such.

    res = run_llama_smoke(bin_dir=None, timeout=120)
    res["status"]  # PartStatus.PASSED | FAILED | UNAVAILABLE
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from contextvars import ContextVar
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from rocmrevive import fs
from rocmrevive.errors import RevError
from rocmrevive.smoke.gguf_model import write_tiny_llama
from rocmrevive.smoke.llama_output import GEN_TOKENS as OUTPUT_TOKENS
from rocmrevive.smoke.llama_output import (
    PROMPT,
    SEED,
    GenRun,
    difference_message,
    find_generator,
    first_difference,
    generate_argv,
    generated_tokens,
)
from rocmrevive.smoke.record import PartStatus
from rocmrevive.trees.owner_run import Account, popen_as, runner_for

BENCH_NAMES = ("llama-bench",)
CLI_NAMES = ("llama-completion", "llama-cli")
# who this smoke's llama.cpp programs run as (None: this process's user); set by run_llama_smoke
_RUN_AS: ContextVar[Account | None] = ContextVar("llama_run_as", default=None)
GPU_BACKENDS = ("ROCm", "HIP", "CUDA", "Vulkan", "SYCL", "Metal", "MUSA", "CANN", "OpenCL")
VISIBILITY_ENV = {"ROCm": "HIP_VISIBLE_DEVICES", "HIP": "HIP_VISIBLE_DEVICES",
                  "CUDA": "CUDA_VISIBLE_DEVICES", "MUSA": "MUSA_VISIBLE_DEVICES",
                  "Vulkan": "GGML_VK_VISIBLE_DEVICES"}
PROMPT_TOKENS, GEN_TOKENS = 64, 32
# llama-bench's repetitions: the records keep the best one. On the CPU test build (2 cores shared by
# busy sessions) one repetition's tokens/s ranged 44x within a run; the best of 5 ranged 1.3x over
# 10 runs (bench/smoke_spread.py --llama measures it through the whole smoke)
REPETITIONS = 10
# llama-completion/llama-cli write every line through an asynchronous logger that is not flushed on
# a normal exit (llama.cpp's common/log.cpp leaks it on purpose), so on a busy machine a run that
# exited 0 can lose its closing timing lines. Such a run is repeated; measured here under load,
# about half the runs lost them, so eight tries leave well under 1% to chance.
CLI_ATTEMPTS = 8


@dataclass
class LlamaDevice:
    name: str  # as llama.cpp names it: ROCm0, CUDA1, Vulkan0
    backend: str
    index: int
    description: str = ""
    memory_mib: int | None = None


@dataclass
class LlamaRun:
    label: str  # "ROCm0", "all GPUs", "CPU"
    argv: list[str]
    env: dict[str, str]
    ok: bool = False
    exit_status: int | None = None
    seconds: float = 0.0
    prompt_tps: float | None = None  # prompt processing, tokens/s
    gen_tps: float | None = None  # generation, tokens/s
    # the best repetition's tokens/s (llama-bench's samples_ts; other work on the machine only
    # ever slows a repetition): what the speed records keep
    prompt_best_tps: float | None = None
    gen_best_tps: float | None = None
    repeated: bool = False  # judged slow once, so measured again (the best of both kept)
    backends: str | None = None
    gpu_info: str | None = None
    message: str | None = None
    timed_out: bool = False


@dataclass
class ProcResult:
    rc: int | None
    out: str
    err: str
    seconds: float
    timed_out: bool
    raw: bytes = b""  # stdout as printed: generated tokens are bytes, not always UTF-8


def run_proc(argv: list[str], env: dict[str, str] | None, timeout: float) -> ProcResult:
    """Run with a time limit, as the account ``run_llama_smoke`` decided (never root for a
    user's build); the whole process group is killed on a hang, and root does not wait for
    pipes a leftover process keeps open."""
    t0 = time.monotonic()
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    try:
        proc = popen_as(argv, _RUN_AS.get(), full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                        stdin=subprocess.DEVNULL)
    except OSError as exc:
        return ProcResult(None, "", f"cannot start {argv[0]}: {exc}", 0.0, False)
    try:
        out, err = proc.communicate(timeout=timeout)
        timed_out = False
    except subprocess.TimeoutExpired:
        for kill in (lambda: os.killpg(proc.pid, signal.SIGKILL), proc.kill):
            try:
                kill()
            except OSError:
                pass
        try:
            out, err = proc.communicate(timeout=5)
        except subprocess.TimeoutExpired:  # a process outside the group holds the pipes: leave them
            for f in (proc.stdout, proc.stderr):
                if f is not None:
                    f.close()
            proc.wait()
            out, err = b"", b""
        timed_out = True
    return ProcResult(proc.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"),
                      time.monotonic() - t0, timed_out, out)


def _tail(text: str, n: int = 4) -> str:
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return " | ".join(lines[-n:])


def find_binary(bin_dir: str | os.PathLike | None) -> tuple[Path | None, str | None, list[str]]:
    """(path, kind "bench"|"cli", where looked)."""
    looked = []
    for kind, names in (("bench", BENCH_NAMES), ("cli", CLI_NAMES)):
        for name in names:
            if bin_dir is not None:
                p = Path(bin_dir) / name
                looked.append(str(p))
                if p.is_file() and os.access(p, os.X_OK):
                    return p, kind, looked
            else:
                looked.append(f"{name} on PATH")
                w = shutil.which(name)
                if w:
                    return Path(w), kind, looked
    return None, None, looked


_DEV_LINE = re.compile(r"^\s+(?P<name>[A-Za-z_]+?)(?P<idx>\d+):\s*(?P<desc>.*?)\s*(?:\((?P<mib>\d+) MiB[^)]*\))?\s*$")


def parse_list_devices(text: str) -> list[LlamaDevice] | None:
    """Devices from ``--list-devices`` output; None when it printed no such list."""
    if "Available devices:" not in text:
        return None
    devs = []
    for line in text.split("Available devices:", 1)[1].splitlines():
        m = _DEV_LINE.match(line)
        if not m:
            continue
        devs.append(LlamaDevice(name=m["name"] + m["idx"], backend=m["name"], index=int(m["idx"]),
                                description=m["desc"], memory_mib=int(m["mib"]) if m["mib"] else None))
    return devs


def parse_bench_json(text: str) -> list[dict] | None:
    """The list llama-bench prints with ``-o json``; None if there is none."""
    text = text.strip()
    start = text.find("[")
    if start < 0:
        return None
    try:
        data = json.loads(text[start:])
    except (ValueError, RecursionError):   # the user's build may print anything
        return None
    if not isinstance(data, list):
        return None
    return [d for d in data if isinstance(d, dict)]


_CLI_TPS = re.compile(r"(?P<what>prompt eval|eval) time\s*=.*?(?P<tps>[\d.]+|inf|nan) tokens per second")


def parse_cli_timings(text: str) -> tuple[float | None, float | None]:
    """(prompt tokens/s, generation tokens/s) from llama-cli/llama-completion's timing lines."""
    pp = tg = None
    for m in _CLI_TPS.finditer(text):
        try:
            v = float(m["tps"])
        except ValueError:
            continue
        if m["what"] == "eval":
            tg = v
        else:
            pp = v
    return pp, tg


def _cli_backends(text: str) -> str:
    """Backends named on the system_info line (the CLI has no JSON)."""
    found = [b for b in GPU_BACKENDS if re.search(rf"\b{b} :", text)]
    return ",".join(found) if found else "CPU"


def _good(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


def bench_argv(binary: Path, kind: str, model: Path, ngl: int) -> list[str]:
    if kind == "bench":
        return [str(binary), "-m", str(model), "-ngl", str(ngl), "-o", "json",
                "-p", str(PROMPT_TOKENS), "-n", str(GEN_TOKENS), "-r", str(REPETITIONS)]
    return [str(binary), "-m", str(model), "-ngl", str(ngl), "-n", str(GEN_TOKENS),
            "-p", "The quick brown fox jumps over the lazy dog", "-no-cnv", "--temp", "0",
            "-s", "906"]


def run_one(label: str, binary: Path, kind: str, model: Path, env: dict[str, str], timeout: float,
            ngl: int = 99, expect_gpu: bool = True, extra: list[str] | None = None) -> LlamaRun:
    argv = bench_argv(binary, kind, model, ngl) + list(extra or [])
    run = LlamaRun(label=label, argv=argv, env=env)
    for _ in range(1 if kind == "bench" else CLI_ATTEMPTS):
        pr = run_proc(argv, env, timeout)
        if pr.timed_out or pr.rc != 0 or parse_cli_timings(pr.err + "\n" + pr.out)[1] is not None:
            break
    run.exit_status, run.seconds, run.timed_out = pr.rc, round(pr.seconds, 3), pr.timed_out
    name = binary.name
    if pr.timed_out:
        run.message = (f"{name} on {label} did not finish within {timeout:g} s: a hang "
                       f"(GPU or driver stuck? check dmesg)")
        return run
    if pr.rc is None:
        run.message = pr.err
        return run
    if pr.rc != 0:
        sig = f" (signal {-pr.rc})" if pr.rc < 0 else ""
        run.message = f"{name} on {label} exited with status {pr.rc}{sig}: {_tail(pr.err) or 'no message'}"
        return run
    if kind == "bench":
        rows = parse_bench_json(pr.out)
        if not rows:
            run.message = (f"{name} on {label} exited 0 but printed no result"
                           + (f": {_tail(pr.err)}" if pr.err.strip() else ""))
            return run
        for r in rows:
            if (r.get("n_gen") or 0) > 0:
                run.gen_tps, run.gen_best_tps = r.get("avg_ts"), _best(r)
            elif (r.get("n_prompt") or 0) > 0:
                run.prompt_tps, run.prompt_best_tps = r.get("avg_ts"), _best(r)
        run.backends = rows[0].get("backends")
        run.gpu_info = rows[0].get("gpu_info")
    else:
        run.prompt_tps, run.gen_tps = parse_cli_timings(pr.err + "\n" + pr.out)
        run.prompt_best_tps, run.gen_best_tps = run.prompt_tps, run.gen_tps
        run.backends = _cli_backends(pr.err)
        run.gpu_info = None
    if not (_good(run.gen_tps) and (kind != "bench" or _good(run.prompt_tps))):
        run.message = (f"{name} on {label} printed no usable tokens/s "
                       f"(prompt {run.prompt_tps}, generation {run.gen_tps})")
        return run
    if expect_gpu and kind == "bench" and not (run.gpu_info or "").strip():
        run.message = f"{name} on {label} ran, but on no GPU (llama.cpp saw none: is the device visible?)"
        return run
    run.ok = True
    return run


def _most(a: float | None, b: float | None) -> float | None:
    return max(a, b) if a is not None and b is not None else a if a is not None else b


def _best(row: dict) -> float | None:
    """The best repetition's tokens/s of a llama-bench row (its ``samples_ts``), else its mean."""
    samples = row.get("samples_ts")
    good = [v for v in samples if _good(v)] if isinstance(samples, list) else []
    return max(good) if good else row.get("avg_ts")


IDENTITY_READ_LIMIT = 1 << 30   # a program larger than this is known by its first GiB, size and mtime
_LIB = re.compile(r"^lib(ggml|llama|mtmd)[\w.+-]*\.so[\d.]*$")


def _sha256_file(path: str, limit: int = IDENTITY_READ_LIMIT) -> str | None:
    """sha256 of a regular file, read (never run) through ``fs.open_regular`` (no final link
    followed, a FIFO or device refused without waiting); None when it is not one."""
    try:
        fd = fs.open_regular(path)
    except (OSError, RevError):   # gone, a link, a FIFO or a device: no identity, never a wait
        return None
    try:
        st = os.fstat(fd)
        h, left = hashlib.sha256(), limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            left -= len(chunk)
        if st.st_size > limit:
            h.update(f"size={st.st_size} mtime={st.st_mtime_ns}".encode())
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def build_identity(binary: Path, model: Path) -> dict:
    """What a run's tokens/s are held to: the program's sha256, the llama.cpp/ggml libraries in its
    folder and in ../lib (name, size, mtime: a rebuilt libggml-hip is another build), and the
    model's sha256. Read as files; nothing is run."""
    real = Path(os.path.realpath(binary))
    libs = {}
    for folder in (real.parent, real.parent.parent / "lib"):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        for name in names:
            if _LIB.match(name):
                try:
                    st = os.stat(folder / name)
                except OSError:
                    continue
                libs[f"{folder}/{name}"] = [st.st_size, st.st_mtime_ns]
    return {"binary": str(binary), "binary_sha256": _sha256_file(str(real)), "libraries": libs,
            "model_sha256": _sha256_file(str(model))}


def _visible_env(dev: LlamaDevice) -> tuple[dict[str, str], list[str]]:
    """(environment, extra argv) that leave only ``dev`` visible."""
    var = VISIBILITY_ENV.get(dev.backend)
    if var is None:
        return {}, ["-dev", dev.name]
    current = os.environ.get(var)
    if current:
        ids = [x.strip() for x in current.split(",") if x.strip()]
        if dev.index < len(ids):
            return {var: ids[dev.index]}, []
    return {var: str(dev.index)}, []


def _beside(binary: Path) -> list[Path]:
    """The other llama.cpp programs beside ``binary`` that the smoke may run."""
    return [p for p in (binary.with_name(n) for n in BENCH_NAMES + CLI_NAMES)
            if p != binary and p.is_file() and os.access(p, os.X_OK)]


def run_llama_smoke(bin_dir: str | os.PathLike | None = None, *, timeout: float = 180.0,
                    cpu_test_mode: bool = False, model: str | os.PathLike | None = None,
                    workdir: str | os.PathLike | None = None,
                    on_run: Callable[[LlamaRun], None] | None = None,
                    slow: Callable[[dict, dict], bool] | None = None) -> dict:
    """Run the llama.cpp smoke; returns a JSON-ready dict (see module doc). ``slow(run, out)``:
    whether a speed run that passed is far slower than its record; such a run is measured once
    more and the best of the two kept (a stall of the machine during one run is no verdict)."""
    out: dict = {"status": PartStatus.UNAVAILABLE, "reason": None, "binary": None, "kind": None,
                 "model": None, "backends": None, "gpu_backend": None, "devices": [], "runs": [],
                 "failures": [], "warnings": []}
    binary, kind, looked = find_binary(bin_dir)
    if binary is None:
        where = f"in {bin_dir}" if bin_dir is not None else "on PATH"
        out["reason"] = (f"no llama-bench, llama-completion or llama-cli {where}; "
                         f"pass --llama-bin DIR (the folder with llama.cpp's programs)")
        return out
    out["binary"], out["kind"] = str(binary), kind
    # a build in a user's folder runs as that user, never as root (RevError: refused, one line)
    who = runner_for([str(binary)] + ([str(p) for p in _beside(binary)]))
    out["run_as"] = who.account.name if who.account else None

    tmp = None
    if model is None:

        tmp = tempfile.mkdtemp(prefix="rocmrevive-smoke-", dir=workdir)
        os.chmod(tmp, 0o755)   # the model is read by the account the build runs as
        try:
            model = write_tiny_llama(Path(tmp) / "tiny-llama.gguf")
            os.chmod(model, 0o644)
        except RevError as exc:  # no gguf package: this part cannot run
            shutil.rmtree(tmp, ignore_errors=True)
            out["reason"] = exc.message
            return out
    model = Path(model)
    out["model"] = {"path": str(model), "bytes": model.stat().st_size}
    out["identity"] = build_identity(binary, model)
    token = _RUN_AS.set(who.account)
    try:
        return _run(out, binary, kind, model, timeout, cpu_test_mode, on_run, slow)
    finally:
        _RUN_AS.reset(token)
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


def _run(out, binary, kind, model, timeout, cpu_test_mode, on_run, slow=None) -> dict:
    def measure(label: str, env: dict[str, str], **kw) -> LlamaRun:
        run = run_one(label, binary, kind, model, env, timeout, **kw)
        if run.ok and slow is not None and slow(asdict(run), out):
            again = run_one(label, binary, kind, model, env, timeout, **kw)
            if again.ok:
                run = replace(run, repeated=True,
                              prompt_best_tps=_most(run.prompt_best_tps, again.prompt_best_tps),
                              gen_best_tps=_most(run.gen_best_tps, again.gen_best_tps))
        return run

    def record(run: LlamaRun):
        d = asdict(run)
        out["runs"].append(d)
        if not run.ok:
            out["failures"].append({"step": "llama", "label": run.label, "message": run.message})
        if on_run:
            on_run(run)
        return run

    gpus = _listed_gpus(out, binary, timeout)
    if gpus is None:
        return out

    generator = find_generator(binary, kind, None)
    if cpu_test_mode:  # the CPU plays the device: its tokens against the CPU-only reference run
        run = record(measure("CPU", {}, ngl=0, expect_gpu=False))
        out["backends"] = run.backends
        out["gpu_backend"] = bool(run.backends and run.backends != "CPU") if run.backends else None
        compare_outputs(out, generator, model, timeout, [("CPU", {}, [], 0)], on_run)
        return _finish(out)

    if not gpus:
        gpus = _gpus_from_a_run(out, binary, kind, model, timeout, record)
        if gpus is None:
            return out

    out["gpu_backend"] = True
    targets = []
    for dev in gpus:
        env, extra = _visible_env(dev)
        run = record(measure(dev.name, env, extra=extra))
        out["backends"] = out["backends"] or run.backends
        targets.append((dev.name, env, extra, 99))
    if len(gpus) >= 2:
        record(measure("all GPUs", {}))
        targets.append(("all GPUs", {}, [], 99))
    else:
        out["warnings"].append("one GPU: no all-GPUs run")
    compare_outputs(out, generator, model, timeout, targets, on_run)
    return _finish(out)


def generate_one(label: str, binary: Path, model: Path, env: dict[str, str], timeout: float,
                 ngl: int, cpu_only: bool = False, extra: list[str] | None = None) -> GenRun:
    """One greedy generation (llama_output); repeated while the output comes back cut short."""
    argv = generate_argv(binary, model, ngl, cpu_only) + list(extra or [])
    tokens = None
    for _ in range(CLI_ATTEMPTS):
        pr = run_proc(argv, env, timeout)
        if pr.timed_out or pr.rc != 0:
            break
        tokens = generated_tokens(pr.raw)
        if tokens is not None:
            break
    name, message = binary.name, None
    if pr.timed_out:
        message = f"{name} generating on {label} did not finish within {timeout:g} s: a hang"
    elif pr.rc != 0:
        sig = f" (signal {-pr.rc})" if pr.rc is not None and pr.rc < 0 else ""
        message = f"{name} generating on {label} exited with status {pr.rc}{sig}: {_tail(pr.err) or 'no message'}"
    elif tokens is None:
        message = (f"{name} on {label} printed no {OUTPUT_TOKENS} generated tokens after the "
                   f"prompt in {CLI_ATTEMPTS} tries")
    return GenRun(label=label, argv=argv, env=env, ok=message is None, exit_status=pr.rc,
                  seconds=round(pr.seconds, 3), tokens=tokens if message is None else None,
                  message=message, timed_out=pr.timed_out)


def compare_outputs(out: dict, generator: Path | None, model: Path, timeout: float,
                    targets: list, on_run: Callable | None) -> None:
    """Greedy tokens on each target (label, env, extra argv, -ngl) against a CPU-only run of the
    same binary; sets ``out["output"]`` and adds a failure per target that differs."""
    if generator is None:
        out["output"] = {"compared": False, "reason": "no llama-completion or llama-cli beside "
                                                      "llama-bench: the output was not compared"}
        out["warnings"].append("llama.cpp output not compared: no llama-completion or llama-cli "
                               "beside llama-bench")
        return
    ref = generate_one("CPU reference", generator, model, {}, timeout, ngl=0, cpu_only=True)
    res: dict = {"compared": ref.ok, "binary": str(generator), "prompt": PROMPT,
                 "tokens": OUTPUT_TOKENS, "seed": SEED, "reference": asdict(ref), "runs": []}
    out["output"] = res
    if on_run:
        on_run(ref)
    if not ref.ok:
        out["failures"].append({"step": "llama-output", "label": ref.label, "message": ref.message})
        return
    for label, env, extra, ngl in targets:
        run = generate_one(label, generator, model, env, timeout, ngl, extra=extra)
        diff = first_difference(run.tokens, ref.tokens or []) if run.tokens is not None else None
        if diff is not None:
            run = replace(run, ok=False, position=diff.position,
                          message=difference_message(label, diff, generator.name))
        res["runs"].append(asdict(run))
        if not run.ok:
            out["failures"].append({"step": "llama-output", "label": label, "message": run.message,
                                    "position": run.position})
        if on_run:
            on_run(run)


def _listed_gpus(out: dict, binary: Path, timeout: float) -> list[LlamaDevice] | None:
    """The GPUs ``--list-devices`` names (also set in ``out``); None when it hung (``out`` then
    says failed)."""
    lst = run_proc([str(binary), "--list-devices"], None, min(timeout, 120))
    devices = parse_list_devices(lst.out) if lst.rc == 0 and not lst.timed_out else None
    if lst.timed_out:
        out["failures"].append({"step": "llama", "label": "--list-devices",
                                "message": f"{binary.name} --list-devices did not finish within "
                                           f"{min(timeout, 120):g} s: a hang"})
        out["status"] = PartStatus.FAILED
        out["reason"] = out["failures"][0]["message"]
        return None
    gpus = [d for d in (devices or []) if d.backend in GPU_BACKENDS]
    out["devices"] = [asdict(d) for d in gpus]
    return gpus


def _gpus_from_a_run(out: dict, binary: Path, kind: str, model: Path, timeout: float,
                     record: Callable[[LlamaRun], LlamaRun]) -> list[LlamaDevice] | None:
    """When no GPU was listed, one run tells what the binary was built with and, from an old
    llama-bench without --list-devices, which GPUs it sees. None: nothing more to run (the run
    failed: recorded and ``out`` finished; or ``out["reason"]`` says why not)."""
    probe = run_one("all GPUs", binary, kind, model, {}, timeout, expect_gpu=False)
    out["backends"] = probe.backends
    if not probe.ok:
        record(probe)
        _finish(out)
        return None
    gpu_backend = bool(probe.backends and probe.backends != "CPU")
    out["gpu_backend"] = gpu_backend
    if not gpu_backend:
        out["reason"] = (f"{binary} was built without a GPU backend (it reports backend "
                         f"{probe.backends}); rebuild llama.cpp with -DGGML_HIP=ON")
        out["cpu_run"] = asdict(probe)
        return None
    if kind == "bench" and (probe.gpu_info or "").strip():
        # an old llama-bench without --list-devices: count the GPUs it reports
        names = [x.strip() for x in (probe.gpu_info or "").split(",") if x.strip()]
        be = next((b for b in GPU_BACKENDS if b in (probe.backends or "").split(",")), "ROCm")
        gpus = [LlamaDevice(name=f"{be}{i}", backend=be, index=i, description=n)
                for i, n in enumerate(names)]
        out["devices"] = [asdict(d) for d in gpus]
        return gpus
    out["reason"] = (f"{binary} has a GPU backend ({probe.backends}) but sees no GPU "
                     f"devices (driver, permissions on /dev/kfd, or *_VISIBLE_DEVICES?)")
    return None


def _finish(out: dict) -> dict:
    if out["failures"]:
        out["status"] = PartStatus.FAILED
        out["reason"] = out["failures"][0]["message"]
    elif out["runs"]:
        out["status"] = PartStatus.PASSED
        out["reason"] = None
    return out
