"""The PyTorch probe, run for real by an interpreter with the real (CPU) PyTorch: no GPU here, so
it must say so; in CPU test mode the checking runs for real; injected faults must fail.

Needs torch in the test interpreter (CI: `pip install torch==2.13.0`, the CPU build).
"""
from __future__ import annotations

import fnmatch
import importlib.util
import json
import math
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

from rocmrevive.smoke import probe, probe_gemm
from rocmrevive.smoke.torch_runner import PROBE, pick_python, run_torch_probe

NEEDS_TORCH = "PyTorch is not installed in the test interpreter: pip install torch==2.13.0 (CPU build)"


@pytest.fixture(scope="module", autouse=True)
def _torch_present():
    if importlib.util.find_spec("torch") is None:
        pytest.fail(NEEDS_TORCH)


def run_probe(*args, fault=None, timeout=120):
    env = dict(os.environ)
    env.pop(probe.FAULT_ENV, None)
    if fault:
        env[probe.FAULT_ENV] = fault
    r = subprocess.run([sys.executable, str(PROBE), "--json-lines", *args], capture_output=True,
                       text=True, env=env, timeout=timeout)
    recs = [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]
    return r.returncode, recs, r.stderr


def of(recs, t):
    return [r for r in recs if r.get("type") == t]


# --- real torch, no GPU -------------------------------------------------------------------
def test_no_gpu_says_so_and_exits_3():
    rc, recs, _ = run_probe()
    assert rc == probe.EXIT_NOTHING == 3
    env = of(recs, "env")[0]
    assert env["torch"].startswith("2.") and env["device_count"] == 0
    res = recs[-1]
    assert res["type"] == "result" and res["status"] == "no_devices" and res["exit"] == 3
    assert res["reason"].startswith("no GPU devices")
    assert not of(recs, "gemm")


# --- CPU test mode: the real checking ------------------------------------------------------
@pytest.fixture(scope="module")
def cpu_run():
    return run_probe("--cpu-test-mode", "--cpu-devices", "2", "--perf-seconds", "0.2")


def test_cpu_test_mode_passes_with_real_numbers(cpu_run):
    rc, recs, err = cpu_run
    assert rc == 0, err
    assert recs[0]["type"] == "probe" and recs[-1] == {**recs[-1], "status": "passed", "exit": 0}
    gemms = of(recs, "gemm")
    cases = probe_gemm.cases(True)
    assert len(gemms) == 2 * 3 * len(cases) == 2 * 3 * 19
    assert {g["dtype"] for g in gemms} == {"fp32", "fp16", "bf16"}
    assert {g["class"] for g in gemms} == {"classic", "decode", "prefill", "tall", "batched", "square"}
    assert sorted({g["shape"][0] for g in gemms if g["class"] == "decode"}) == [1, 2, 4, 8, 16]
    assert {g["op"] for g in gemms} == {"mm", "bmm", "linear"}
    assert {g["transposed"] for g in gemms} == {"", "A", "B", "AB"}
    for g in gemms:
        assert g["ok"] is True and g["vectors"] == 3
        # a real comparison: rounding error is there, and inside the bound
        assert 0 < g["residual"] <= 1, g
        assert g["tflops"] > 0 and g["iterations"] >= 2 and g["check_seconds"] > 0
    perfs = of(recs, "perf")
    assert len(perfs) == 6 and all(p["ok"] and p["tflops"] > 0 and p["iterations"] >= 2 for p in perfs)
    assert all(0 < p["residual"] <= 1 and p["n"] == 512 for p in perfs)  # the timed product, checked whole
    sums = of(recs, "device_summary")
    assert [s["device"] for s in sums] == [0, 1]
    assert all(s["ok"] and s["checks"] == 60 and s["failed_checks"] == 0 and s["slow"] is False
               for s in sums)
    assert all(s["tflops"]["fp32"] > 0 and 0 < s["check_seconds"] < s["gemm_seconds"] for s in sums)
    assert [r["case"] for r in sums[0]["shapes"]] == [c.name for c in cases] + ["timed"]
    assert all(set(r["tflops"]) == {"fp32", "fp16", "bf16"} for r in sums[0]["shapes"])
    res = recs[-1]
    assert res["check_seconds"] == round(sum(s["check_seconds"] for s in sums), 3)
    assert 0 < res["check_share"] < 1


def test_cpu_test_mode_copies_and_all_reduce(cpu_run):
    _, recs, _ = cpu_run
    peers = of(recs, "peer")
    assert sorted((p["src"], p["dst"]) for p in peers) == [(0, 1), (1, 0)]
    assert all(p["ok"] and p["bytes"] == 4 << 20 and p["gb_per_s"] > 0 for p in peers)
    ar = of(recs, "allreduce")[0]
    assert ar["ok"] and ar["world_size"] == 2 and ar["backend"] == "gloo" and ar["ranks_ok"] == 2
    assert ar["elements"] == 1 << 20 and ar["busbw_gb_per_s"] > 0


# --- injected faults must fail -------------------------------------------------------------
def test_corrupted_gemm_fails_the_comparison():
    rc, recs, _ = run_probe("--cpu-test-mode", "--cpu-devices", "1", "--perf-seconds", "0.05",
                            fault="gemm")
    assert rc == probe.EXIT_FAILED == 10
    bad = [g for g in of(recs, "gemm") if not g["ok"]]
    assert len(bad) == 1
    assert (bad[0]["dtype"], bad[0]["case"]) == ("fp32", "nn")
    assert bad[0]["residual"] > 10
    assert bad[0]["message"].startswith("device 0 (CPU): fp32 nn (M=96 N=80 K=128, mm): wrong result: row 0 ")
    assert of(recs, "device_summary")[0]["ok"] is False
    res = recs[-1]
    assert res["status"] == "failed" and res["failures"] == 1 and "wrong result" in res["reason"]


def test_corrupted_bf16_gemm_and_timed_gemm_fail():
    rc, recs, _ = run_probe("--cpu-test-mode", "--cpu-devices", "1", "--perf-seconds", "0.05",
                            fault="gemm:bf16,perf")
    assert rc == 10
    bad = [(g["type"], g["dtype"]) for g in of(recs, "gemm") + of(recs, "perf") if not g["ok"]]
    assert bad == [("gemm", "bf16"), ("perf", "fp32"), ("perf", "fp16"), ("perf", "bf16")]
    assert recs[-1]["failures"] == 4


def test_corrupted_copy_and_all_reduce_fail():
    rc, recs, _ = run_probe("--cpu-test-mode", "--cpu-devices", "2", "--only", "peer,allreduce",
                            fault="copy,allreduce")
    assert rc == 10
    assert not of(recs, "gemm")  # --only
    peers = of(recs, "peer")
    assert [p["ok"] for p in peers] == [False, True]
    assert "corrupted 1 of" in peers[0]["message"]
    ar = of(recs, "allreduce")[0]
    assert ar["ok"] is False and ar["ranks_ok"] == 1 and "sum wrong" in ar["message"]


def test_a_hang_is_a_failure_with_a_clear_message():
    # the step limit must also cover torch's import in the worker on a loaded 2-core CI machine
    rc, recs, _ = run_probe("--cpu-test-mode", "--cpu-devices", "1", "--timeout", "10",
                            fault="hang:gemm", timeout=90)
    assert rc == 10
    f = of(recs, "failure")[0]
    assert f["step"] == "gemm" and f["timeout"] is True and f["device"] == 0
    assert "did not finish within 10" in f["message"] and "a hang" in f["message"]
    assert "injected hang in gemm" in f["message"]  # where it was stuck
    assert recs[-1]["status"] == "failed"


def test_a_hung_copy_is_reported_and_the_other_pairs_still_run():
    rc, recs, _ = run_probe("--cpu-test-mode", "--cpu-devices", "3", "--only", "peer",
                            "--timeout", "12", fault="hang:peer:0-2", timeout=150)
    assert rc == 10
    f = of(recs, "failure")
    assert len(f) == 1 and f[0]["pair"] == "0-2" and f[0]["timeout"] is True
    assert "copy device 0 -> device 2" in f[0]["message"]
    done = sorted((p["src"], p["dst"]) for p in of(recs, "peer"))
    assert done == [(0, 1), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert all(p["ok"] for p in of(recs, "peer"))


def test_a_crashing_worker_is_a_failure():
    rc, recs, _ = run_probe("--cpu-test-mode", "--cpu-devices", "1", fault="crash:gemm")
    assert rc == 10
    f = of(recs, "failure")[0]
    assert f["step"] == "gemm" and f["exit_status"] == -6 and "signal 6" in f["message"]


def test_enumerate_hang():
    rc, recs, _ = run_probe("--timeout", "3", fault="hang:enumerate", timeout=60)
    assert rc == 10
    assert of(recs, "failure")[0]["step"] == "enumerate"


# --- units: peaks, hints, the slow flag ----------------------------------------------------
@pytest.mark.parametrize("name,arch,cus,model", [
    ("AMD Instinct MI50/MI60", "gfx906:sramecc+:xnack-", 60, "MI50"),
    ("AMD Instinct MI50/MI60", "gfx906:sramecc+:xnack-", 64, "MI60"),
    ("AMD Radeon Graphics", "gfx906:sramecc-:xnack-", 60, "MI50"),
    ("AMD Radeon VII", "gfx906:sramecc-:xnack-", 60, "Radeon VII"),
    ("AMD Radeon Pro VII", "gfx906:sramecc+:xnack-", 60, "Radeon Pro VII"),
    ("NVIDIA H200", "", 132, "H200"),
    ("NVIDIA H100 80GB HBM3", "", 132, "H100"),
    ("NVIDIA H100 PCIe", "", 114, "H100 PCIe"),
    ("AMD Radeon RX 6900 XT", "gfx1030", 80, None),
])
def test_identify_card(name, arch, cus, model):
    got, peak, how = probe.identify_card(name, arch, cus)
    assert got == model
    assert (peak is None) == (model is None) and how
    if model == "MI50":
        assert peak == (13.4, 26.8, 13.4)  # AMD's launch figures (rocmrevive/data/cards.toml)


def _orch(**kw):
    args = probe.parse_args(["--cpu-test-mode"])
    o = probe.Orchestrator(args)
    o.out = lambda rec: o.__dict__.setdefault("seen", []).append(rec)
    return o


def test_gfx906_hint_is_applied_unless_the_user_set_it(monkeypatch):
    monkeypatch.delenv("TORCH_BLAS_PREFER_HIPBLASLT", raising=False)
    o = _orch()
    o.apply_hints([{"arch": "gfx906:sramecc+:xnack-"}, {"arch": "gfx906:sramecc+:xnack-"}])
    assert o.env["TORCH_BLAS_PREFER_HIPBLASLT"] == "0"
    assert [(h["name"], h["applied"]) for h in o.seen] == [("TORCH_BLAS_PREFER_HIPBLASLT", True)]
    monkeypatch.setenv("TORCH_BLAS_PREFER_HIPBLASLT", "1")
    o = _orch()
    o.apply_hints([{"arch": "gfx906:sramecc+:xnack-"}])
    assert o.env["TORCH_BLAS_PREFER_HIPBLASLT"] == "1"
    assert o.seen[0]["applied"] is False and o.seen[0]["user_value"] == "1"
    o = _orch()
    o.apply_hints([{"arch": "sm_90"}])
    assert not getattr(o, "seen", [])


def _perf(dtype, tflops):
    return {"type": "perf", "dtype": dtype, "ok": True, "tflops": tflops}


COPY_OK = {"type": "bandwidth", "ok": True, "bytes": 1 << 24, "gb_per_s": 12.0}


def _gemms():
    return [{"type": "gemm", "ok": True, "dtype": d} for d in probe.DTYPES
            for _ in probe_gemm.cases(True)] + [COPY_OK]


def test_a_card_that_works_but_crawls_is_flagged():
    dev = {"index": 0, "name": "AMD Instinct MI50/MI60", "arch": "gfx906", "model": "MI50",
           "peak_tflops": dict(zip(probe.DTYPES, probe.PEAKS["MI50"]))}
    healthy = _orch().judge_gemm(dev, _gemms() + [_perf("fp32", 9.8), _perf("fp16", 18.0), _perf("bf16", 6.0)])
    assert healthy["ok"] and not healthy["slow"] and healthy["ratio"]["fp32"] == round(9.8 / 13.4, 3)
    # memory clock stuck at its lowest level: 2.5-9x slower
    crawl = _orch().judge_gemm(dev, _gemms() + [_perf("fp32", 2.1), _perf("fp16", 3.0), _perf("bf16", 1.0)])
    assert crawl["ok"] and crawl["slow"]
    unknown = _orch().judge_gemm({**dev, "peak_tflops": None}, _gemms() + [_perf("fp32", 0.1)] * 3)
    assert unknown["ratio"] is None and not unknown["slow"]


def test_missing_checks_are_a_failure():
    o = _orch()
    s = o.judge_gemm({"index": 0}, _gemms()[:3] + [COPY_OK])
    assert s["ok"]  # what ran passed, but ...
    assert o.failures and "reported 3 of 60 checks" in o.failures[0]["message"]
    o = _orch()
    s = o.judge_gemm({"index": 0}, _gemms()[:-1])
    assert not s["ok"] and o.failures[0]["message"] == "device 0: the GEMM worker reported no device copy"
    o = _orch()
    s = o.judge_gemm({"index": 0}, _gemms()[:-1] + [dict(COPY_OK, ok=False, message="copy corrupted")])
    assert not s["ok"] and o.failures[0] == dict(COPY_OK, ok=False, message="copy corrupted")


# --- the runner rocmrevive uses ------------------------------------------------------------
def test_runner_cpu_test_mode():
    seen = []
    res = run_torch_probe(sys.executable, cpu_test_mode=True, cpu_devices=1, only="gemm",
                          on_record=seen.append)
    assert res["status"] == "passed", res["reason"]
    assert res["torch"].startswith("2.") and res["platform"] == "cpu" and res["probe_exit"] == 0
    assert [d["index"] for d in res["devices"]] == [0]
    assert all(d["gemm"]["ok"] and d["gemm"]["checks"] == 60 and d["gemm"]["tflops"]["bf16"] > 0
               for d in res["devices"])
    assert res["check_seconds"] > 0 and 0 < res["check_share"] < 1
    assert seen and seen[-1]["type"] == "result"
    assert res["records"] == seen


def test_runner_no_gpu_is_unavailable():
    res = run_torch_probe(sys.executable, timeout=60)
    assert res["status"] == "unavailable" and res["probe_exit"] == 3
    assert res["reason"].startswith("no GPU devices")


def _script(tmp_path: Path, name: str, body: str) -> str:
    p = tmp_path / name
    p.write_text("#!/bin/sh\n" + body)
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return str(p)


def test_runner_interpreter_without_torch(tmp_path):
    # the same Python with no site-packages: a real interpreter that has no torch
    py = _script(tmp_path, "python-no-torch", f'exec {sys.executable} -I -S "$@"\n')
    res = run_torch_probe(py, timeout=60)
    assert res["status"] == "unavailable" and res["probe_exit"] == 3
    assert "PyTorch is not importable" in res["reason"]
    assert pick_python(py) == (py, "--python")


def test_runner_broken_interpreter_and_silent_hang(tmp_path):
    bad = _script(tmp_path, "python-broken", 'echo "SyntaxError: invalid syntax" >&2; exit 1\n')
    res = run_torch_probe(bad, timeout=30)
    assert res["status"] == "failed" and res["probe_exit"] == 1
    assert "without a result" in res["reason"] and "SyntaxError" in res["reason"]
    silent = _script(tmp_path, "python-silent", "sleep 60\n")
    res = run_torch_probe(silent, timeout=30, quiet_limit=2)
    assert res["status"] == "failed" and "printed nothing for 2 s" in res["reason"]
    assert res["seconds"] < 20
    res = run_torch_probe(str(tmp_path / "nope"), timeout=30)
    assert res["status"] == "unavailable" and "not an executable" in res["reason"]


def test_probe_file_is_self_contained():
    """Only torch, the standard library and probe_gemm beside it: the probe runs in the user's
    interpreter, without rocmrevive."""
    import ast

    assert PROBE.with_name("probe_gemm.py").is_file()
    # the wheel ships both as package data (tests/test_dist.py builds it): the glob must keep them
    data = tomllib.loads((PROBE.parents[2] / "pyproject.toml").read_text())
    globs = data["tool"]["setuptools"]["package-data"]["rocmrevive"]
    assert all(any(fnmatch.fnmatch("smoke/" + n, g) for g in globs) for n in ("probe.py", "probe_gemm.py"))
    for path in (PROBE, PROBE.with_name("probe_gemm.py")):
        mods = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                mods |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                mods.add(node.module.split(".")[0])
        stdlib = set(sys.stdlib_module_names)
        assert mods - stdlib <= {"torch", "probe_gemm"}, path
    assert math.isfinite(probe.SLOW_RATIO)
