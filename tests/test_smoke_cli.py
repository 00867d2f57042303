"""`rocmrevive smoke` from the outside: exit codes, JSON, the table and the status record.

Real PyTorch (CPU build) in the test interpreter and the real llama.cpp built for the CPU.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.errors import exit_code
from rocmrevive.rootfs import Root
from rocmrevive.smoke.record import RECORD_PATH, read_last, write_last
from rocmrevive.smoke.run import verdict

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module", autouse=True)
def _torch_present():
    if importlib.util.find_spec("torch") is None:
        pytest.fail("PyTorch is not installed in the test interpreter: pip install torch==2.13.0 (CPU build)")


def cli(*args, root: Path, fault: str | None = None, timeout=300):
    env = dict(os.environ)
    env.pop("ROCMREVIVE_PROBE_FAULT", None)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"  # no llama on PATH
    if fault:
        env["ROCMREVIVE_PROBE_FAULT"] = fault
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "smoke",
                        "--python", sys.executable, *args], capture_output=True, text=True,
                       env=env, cwd=REPO, timeout=timeout)
    return r


@pytest.fixture(scope="module")
def passed_run(tmp_path_factory, llama_bin):
    root = tmp_path_factory.mktemp("root")
    r = cli("--cpu-test-mode", "--llama-bin", str(llama_bin), "--json", root=root)
    return root, r


def test_cpu_test_mode_passes_and_is_recorded(passed_run):
    root, r = passed_run
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["command"] == "smoke" and doc["error"] is None and doc["ok"] is True
    assert doc["torch"]["status"] == "passed" and doc["llama"]["status"] == "passed"
    assert doc["mode"] == "cpu-test" and doc["skipped"] == []
    # what the checks cost, against the whole smoke (PyTorch and llama.cpp)
    assert doc["check_seconds"] == doc["torch"]["check_seconds"] > 0
    assert doc["check_share"] == round(doc["check_seconds"] / doc["seconds"], 4) < doc["torch"]["check_share"]
    devs = doc["torch"]["devices"]
    assert len(devs) == 2 and all(d["gemm"]["checks"] == 60 and d["gemm"]["tflops"]["fp32"] > 0 for d in devs)
    assert doc["torch"]["allreduce"]["ok"] and len(doc["torch"]["peer"]) == 2
    assert any(x["type"] == "gemm" for x in doc["torch"]["records"])  # the probe's JSON is kept
    assert doc["llama"]["runs"][0]["gen_tps"] > 0
    assert doc["record"] == RECORD_PATH
    rec = read_last(Root(root))
    # a CPU test run is recorded as such: it is not a pass of the GPUs
    assert rec["status"] == "passed-cpu-test" and rec["last_passed_at"] is None
    assert json.loads(r.stdout)["changed"] is True            # it wrote the record
    assert rec["parts"]["torch"]["devices"][0]["gemm"]["ok"] and "records" not in rec["parts"]["torch"]
    assert rec["parts"]["torch"]["check_seconds"] > 0
    assert rec["parts"]["llama"]["output"] == {"compared": True, "runs": [
        {"label": "CPU", "ok": True, "position": None, "message": None}]}


def test_the_table_of_real_results(passed_run):
    import io

    from rich.console import Console

    from rocmrevive.cli.smoke import render

    doc = json.loads(passed_run[1].stdout)
    buf = io.StringIO()
    render(Console(file=buf, width=200, no_color=True),
           {"parts": {"torch": doc["torch"], "llama": doc["llama"]}, "skipped": doc["skipped"],
            "code": "OK", "record": doc["record"], "seconds": doc["seconds"],
            "check_seconds": doc["check_seconds"], "check_share": doc["check_share"]})
    out = buf.getvalue()
    for text in ("GEMM checks", "60/60", "TFLOPS per shape", "decode-m16", "checked whole", "of the whole smoke's", "fp32 TFLOPS", "Device-to-device copies", "0 -> 1",
                 "all-reduce (gloo, 2 devices): ok", "llama.cpp:", "gen tok/s",
                 "smoke: passed (recorded in /var/lib/rocmrevive/smoke/last.json)"):
        assert text in out, text


def test_no_gpu_exits_3_and_keeps_the_last_record(tmp_path, llama_bin):
    write_last(Root(tmp_path), {"status": "passed", "finished_at": "2026-01-02T03:04:05+00:00"})
    before = read_last(Root(tmp_path))
    r = cli("--llama-bin", str(llama_bin), "--json", root=tmp_path)
    assert r.returncode == exit_code("NOTHING_SUPPORTED") == 3, r.stderr
    doc = json.loads(r.stdout)
    assert doc["error"]["code"] == "NOTHING_SUPPORTED" and "nothing could run" in doc["error"]["message"]
    reasons = {s["part"]: s["reason"] for s in doc["skipped"]}
    assert reasons["torch"].startswith("no GPU devices")
    assert "built without a GPU backend" in reasons["llama"]
    assert read_last(Root(tmp_path)) == before   # a run that ran nothing is not recorded (issue 39)
    assert doc["record"] is None


def test_injected_fault_exits_10(tmp_path):
    r = cli("--torch", "--cpu-test-mode", "--cpu-devices", "1", "--json", root=tmp_path, fault="gemm")
    assert r.returncode == exit_code("SMOKE_FAILED") == 10, r.stderr
    doc = json.loads(r.stdout)
    assert doc["error"]["code"] == "SMOKE_FAILED" and "wrong result" in doc["error"]["message"]
    assert doc["torch"]["status"] == "failed" and "llama" not in doc
    assert doc["torch"]["failures"][0]["dtype"] == "fp32"
    assert read_last(Root(tmp_path))["status"] == "failed"


def test_asked_for_but_missing_part_fails(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = cli("--torch", "--llama", "--cpu-test-mode", "--cpu-devices", "1", "--llama-bin", str(empty),
            "--json", root=tmp_path)
    assert r.returncode == 10, r.stderr
    doc = json.loads(r.stdout)
    assert doc["torch"]["status"] == "passed" and doc["llama"]["status"] == "unavailable"
    assert doc["error"]["message"].startswith("--llama was asked for but could not run: no llama-bench")


def test_table_output(tmp_path):
    r = cli("--torch", "--cpu-test-mode", "--cpu-devices", "1", root=tmp_path, fault="gemm:fp16")
    assert r.returncode == 10, r.stderr
    out = r.stdout
    for text in ("GEMM checks", "59/60", "FAILED (gemm): device 0 (CPU): fp16 nn (M=96 N=80 K=128, mm): wrong result", "smoke: FAILED"):
        assert text in out, text
    assert "torch: device 0" in r.stderr  # progress on stderr
    assert "rocmrevive smoke: PyTorch: device 0 (CPU): fp16 nn (M=96 N=80 K=128, mm): wrong result" in r.stderr


def test_usage_errors(tmp_path):
    r = cli("--torch", "--llama-bin", "/nonexistent-dir-for-test", root=tmp_path)
    assert r.returncode == 2 and "--llama-bin given without --llama" in r.stderr
    r = cli("--timeout", "0", root=tmp_path)
    assert r.returncode == 2


def test_verdict_rules():
    P, F, U = ({"status": s, "reason": s} for s in ("passed", "failed", "unavailable"))
    assert verdict({"torch": P, "llama": P}, set()) == ("OK", None)
    assert verdict({"torch": P, "llama": U}, set())[0] == "OK"  # not asked for by name
    assert verdict({"torch": P, "llama": U}, {"torch", "llama"})[0] == "SMOKE_FAILED"
    assert verdict({"torch": F, "llama": P}, set())[0] == "SMOKE_FAILED"
    assert verdict({"torch": U, "llama": U}, set())[0] == "NOTHING_SUPPORTED"
    assert verdict({"llama": U}, {"llama"})[0] == "NOTHING_SUPPORTED"


def test_record_unwritable_is_a_warning_not_a_failure(tmp_path):
    (tmp_path / "var").write_text("a file where a folder should be")
    r = cli("--torch", "--cpu-test-mode", "--cpu-devices", "1", "--json", root=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["record"] is None and any("cannot write" in w for w in doc["warnings"])


def test_the_help_lists_every_exit_code_the_smoke_can_end_with(tmp_path):
    """The codes come from the verdict's own names (smoke's run_smoke can end with these four)."""
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "smoke", "--help"], capture_output=True,
                       text=True, cwd=REPO, timeout=120, env={**os.environ, "COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    exits = " ".join(r.stdout.split("Exit ", 1)[1].split())
    for code in ("OK", "SMOKE_FAILED", "NOTHING_SUPPORTED", "SMOKE_SLOW"):
        assert f"{exit_code(code)}" in exits.replace(";", " ").replace(":", " ").split(), (code, exits)
    assert "12 (SMOKE_SLOW)" in exits
