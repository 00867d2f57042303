"""`smoke --soak DURATION`: the checked products repeated for the duration, every result checked.

Real PyTorch (CPU build) on CPU test mode, 3-second soaks. A fault injected from outside the
probe that starts only after a while (tests/smoke_faults: zero blocks from second 1.5 on) is
caught in the soak, with its time; the probe's own switch corrupts exactly one product.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.smoke.torch_runner import PROBE

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FAULTS = HERE / "smoke_faults"


def _env(**extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMREVIVE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(FAULTS), str(REPO)])
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"
    env.update(extra)
    return env


def soak_probe(**extra):
    r = subprocess.run([sys.executable, str(PROBE), "--json-lines", "--cpu-test-mode", "--cpu-devices", "1",
                        "--only", "soak", "--soak", "3"], capture_output=True, text=True, env=_env(**extra),
                       timeout=300)
    return r.returncode, [json.loads(ln) for ln in r.stdout.splitlines() if ln.strip()], r.stderr


def test_a_clean_soak_checks_every_product_and_reports_its_figures():
    rc, recs, err = soak_probe()
    assert rc == 0, err
    end = [r for r in recs if r["type"] == "soak"]
    assert len(end) == 1 and end[0]["errors"] == 0 and end[0]["products"] > 20
    assert 3.0 <= end[0]["seconds"] < 10 and end[0]["first_failure_s"] is None and end[0]["errors_per_hour"] == 0
    ticks = [r for r in recs if r["type"] == "soak_tick"]
    assert ticks and all(t["seconds"] == 3.0 for t in ticks)
    assert not [r for r in recs if r["type"] in ("gemm", "perf")]  # --only soak


def test_the_probe_switch_corrupts_one_product_and_the_soak_fails_on_it():
    rc, recs, err = soak_probe(ROCMREVIVE_PROBE_FAULT="soak")
    assert rc == 10, err
    end = next(r for r in recs if r["type"] == "soak")
    assert end["errors"] == 1 and end["first_failure_s"] is not None
    assert "wrong result" in end["first_failure"]
    assert recs[-1]["reason"].startswith("device 0: 1 of ")


def test_a_fault_that_starts_late_is_caught_with_its_time():
    rc, recs, err = soak_probe(ROCMREVIVE_TEST_TORCH_FAULT="zero-block", ROCMREVIVE_TEST_FAULT_MIN_SIZE="256",
                               ROCMREVIVE_TEST_FAULT_BLOCK="8", ROCMREVIVE_TEST_FAULT_AFTER="1.5")
    assert rc == 10, err
    end = next(r for r in recs if r["type"] == "soak")
    assert end["errors"] > 0 and end["errors"] < end["products"]
    # the interpreter started before the soak's clock: the first failure comes at most 1.5 s in
    assert 0 <= end["first_failure_s"] <= 1.6
    assert end["errors_per_hour"] == pytest.approx(end["errors"] * 3600 / end["seconds"], rel=0.01)
    firsts = [r for r in recs if r["type"] == "soak_failure"]
    assert 1 <= len(firsts) <= 5 and all("wrong result" in r["message"] for r in firsts)


def test_the_whole_smoke_soaks_and_reports(tmp_path):
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(tmp_path), "smoke", "--torch",
                        "--python", sys.executable, "--cpu-test-mode", "--cpu-devices", "1", "--soak", "3s"],
                       capture_output=True, text=True, env=_env(), cwd=REPO, timeout=600)
    assert r.returncode == 0, r.stderr
    assert "soak, device 0: " in r.stdout and " products checked, 0 wrong (0.0 per hour); no failure" in r.stdout
    assert "torch: device 0: soak of " in r.stderr
    bad = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(tmp_path), "smoke", "--torch",
                          "--soak", "soon"], capture_output=True, text=True, env=_env(), cwd=REPO, timeout=60)
    assert bad.returncode == 2 and "'soon' is not a duration such as 60s, 10m or 1h" in bad.stderr
