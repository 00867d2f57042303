"""Faults injected from outside the probe, into the user's PyTorch and llama.cpp themselves
(tests/smoke_faults: torch's product functions wrapped in every child interpreter; a
llama-completion that changes one generated token), the way a broken library fails. Each must
fail the smoke (exit 10) naming the device, dtype and shape, or the token position; the
wrapper alone changes nothing.

Real PyTorch (CPU build) and the real llama.cpp built for the CPU; --cpu-test-mode shrinks the
sizes 16x, so the zero block (128 at 4096 and above on a GPU) is 8 wide from 256 on here.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.smoke import probe_gemm
from rocmrevive.smoke.torch_runner import PROBE

HERE = Path(__file__).resolve().parent
FAULTS = HERE / "smoke_faults"
REPO = HERE.parent
SCALED = {"ROCMREVIVE_TEST_FAULT_MIN_SIZE": "256", "ROCMREVIVE_TEST_FAULT_BLOCK": "8",
          "ROCMREVIVE_TEST_FAULT_SEED": "906"}


def _env(fault: str | None, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMREVIVE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(FAULTS), str(REPO)] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    if fault:
        env["ROCMREVIVE_TEST_TORCH_FAULT"] = fault
    env.update(SCALED, **extra)
    return env


def probe_run(fault: str | None, *args):
    r = subprocess.run([sys.executable, str(PROBE), "--json-lines", "--cpu-test-mode", "--cpu-devices", "1",
                        "--only", "gemm", *args], capture_output=True, text=True, env=_env(fault), timeout=600)
    return r.returncode, [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()], r.stderr


def checked(recs):
    return [r for r in recs if r.get("type") in ("gemm", "perf")]


@pytest.fixture(scope="module")
def baseline():
    return probe_run(None)


def test_the_wrapper_alone_changes_nothing(baseline):
    rc, recs, err = baseline
    assert rc == 0, err
    assert "fault:" not in err
    assert len(checked(recs)) == 3 * (len(probe_gemm.cases(True)) + 1) and all(r["ok"] for r in checked(recs))


def test_a_zero_block_in_every_large_product_fails_each_of_them(baseline):
    rc, recs, err = probe_run("zero-block")
    assert rc == 10
    bad = {(r["dtype"], r["case"]) for r in checked(recs) if not r["ok"]}
    large = {(d, c.name) for d in probe_gemm.DTYPES for c in probe_gemm.cases(True) if max(c.m, c.n, c.k) >= 256}
    large |= {(d, "timed") for d in probe_gemm.DTYPES}
    assert bad == large  # every corrupted product caught, the small ones (not corrupted) pass
    msgs = [r["message"] for r in checked(recs) if not r["ok"]]
    assert all(m.startswith("device 0 (CPU): ") and "wrong result: " in m for m in msgs)
    m = next(r["message"] for r in checked(recs) if (r["dtype"], r["case"]) == ("bf16", "prefill-2048"))
    assert m.startswith("device 0 (CPU): bf16 prefill-2048 (M=128 N=896 K=256, linear: B transposed): wrong result: rows ")
    timed = next(r for r in recs if r["type"] == "perf" and r["dtype"] == "fp16")
    assert not timed["ok"] and timed["residual"] > 1   # the timed product too, checked whole
    res = recs[-1]
    assert res["status"] == "failed" and res["failures"] == len(large)
    assert res["reason"].startswith("device 0 (CPU): fp32 decode-m1 (M=1 N=256 K=256, linear: B transposed): wrong result")


def test_a_wrong_decode_step_fails(baseline):
    rc, recs, err = probe_run("decode")
    assert rc == 10
    bad = {(r["dtype"], r["case"]) for r in checked(recs) if not r["ok"]}
    assert bad == {(d, c.name) for d in probe_gemm.DTYPES for c in probe_gemm.cases(True) if c.m <= 16}
    m = next(r["message"] for r in checked(recs) if (r["dtype"], r["case"]) == ("fp16", "decode-m4"))
    assert m.startswith("device 0 (CPU): fp16 decode-m4 (M=4 N=256 K=896, linear: B transposed): "
                        "wrong result: rows 0-3 (4 of 4 rows)")


def test_a_zero_block_in_one_batch_is_found_in_that_batch():
    env = _env("zero-block", ROCMREVIVE_TEST_FAULT_MIN_SIZE="32")  # the CPU's batches are 32 wide
    r = subprocess.run([sys.executable, str(PROBE), "--json-lines", "--cpu-test-mode", "--cpu-devices", "1",
                        "--only", "gemm", "--perf-size", "64"], capture_output=True, text=True, env=env, timeout=600)
    recs = [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()]
    assert r.returncode == 10
    qk = next(x for x in checked(recs) if (x["dtype"], x["case"]) == ("fp32", "qk"))
    assert not qk["ok"] and " in batch " in qk["message"] and "(1 of 32 batches wrong)" in qk["message"]
    assert qk["message"].startswith("device 0 (CPU): fp32 qk (32 x M=32 N=32 K=16, bmm: B transposed): wrong result: rows ")


# --- the whole smoke, from the outside ------------------------------------------------------
def cli(root: Path, *args, env: dict):
    env = dict(env, PATH=os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin")
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "smoke",
                        "--python", sys.executable, "--cpu-test-mode", "--cpu-devices", "1", "--json", *args],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    return r.returncode, json.loads(r.stdout), r.stderr


def test_the_whole_smoke_fails_on_a_zero_block_naming_device_dtype_and_shape(tmp_path):
    rc, doc, err = cli(tmp_path, "--torch", env=_env("zero-block"))
    assert rc == 10, err
    assert doc["error"]["code"] == "SMOKE_FAILED"
    assert doc["error"]["message"] == "PyTorch: " + doc["torch"]["failures"][0]["message"]
    assert doc["error"]["message"].startswith(
        "PyTorch: device 0 (CPU): fp32 decode-m1 (M=1 N=256 K=256, linear: B transposed): wrong result: row 0 ")
    assert {(f["dtype"], f["case"]) for f in doc["torch"]["failures"]} >= {("bf16", "timed"), ("fp16", "deep-k")}
    assert doc["torch"]["check_seconds"] > 0 and 0 < doc["torch"]["check_share"] < 1


def test_the_whole_smoke_fails_on_a_wrong_token_naming_the_position(tmp_path, llama_bin):
    lie = tmp_path / "bin"
    lie.mkdir()
    (lie / "llama-bench").symlink_to(llama_bin / "llama-bench")
    (lie / "llama-completion").symlink_to(FAULTS / "wrong_token.py")
    env = _env(None, ROCMREVIVE_TEST_LLAMA_REAL=str(llama_bin / "llama-completion"),
               ROCMREVIVE_TEST_WRONG_TOKEN="3")
    rc, doc, err = cli(tmp_path, "--llama", "--llama-bin", str(lie), env=env)
    assert rc == 10, err
    assert doc["llama"]["runs"][0]["ok"]  # tokens/s: fine
    assert doc["error"]["message"].startswith(
        "llama.cpp: llama-completion on CPU generated other tokens than on the CPU with the same "
        "binary: first difference at generated token 3 (CPU: ")
    assert "llama.cpp: CPU tokens: FAILED" in err
    # the same binary, told the truth: passes
    rc, doc, err = cli(tmp_path, "--llama", "--llama-bin", str(llama_bin), env=_env(None))
    assert rc == 0 and doc["llama"]["output"]["runs"][0]["ok"], err
