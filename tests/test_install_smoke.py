"""`rocmrevive install --smoke`: the PyTorch smoke right before the first change and after the
install, so that "the graft made it slower" is one command.

From the outside: the dual-MI50 machine with a mini rocBLAS 4.4 tree lacking gfx906 and a real
.deb as the source (as tests/test_install.py), the real smoke on CPU test mode (real PyTorch, CPU
build), and a slowdown injected from outside the probe (tests/smoke_faults: torch's products with
N >= 256 computed 10 times over) that exists only while a file the install adds exists: the
install reports "after the install: N.NNx the time of the pass before it". Without the fault the
same figure stays near 1; --check runs no smoke; an interpreter root may not run is refused
before anything is fetched or changed.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.test_install import demo_machine, tree_hash

FAULTS = REPO / "tests/smoke_faults"
ADDED = "opt/rocm-6.4.3/lib/rocblas/library/TensileLibrary_lazy_gfx906.dat"   # a file the install adds
LINE = re.compile(r"after the install: (\d+\.\d\d)x the time of the pass before it "
                  r"\((\d{4}-\d\d-\d\d \d\d:\d\d UTC); slowest shape class: (\w+) (\d+\.\d\d)x\)")


@pytest.fixture
def demo(tmp_path):
    root, _deb, args = demo_machine(tmp_path)
    return root, args


def _env(fault: str | None = None, **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMREVIVE_")}
    env.update(NO_COLOR="1", PYTHONPATH=os.pathsep.join([str(FAULTS), str(REPO)]),
               PATH=os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin",
               ROCMREVIVE_TEST_FAULT_MIN_SIZE="256")   # CPU test mode's sizes are 1/16 of a GPU's
    if fault:
        env["ROCMREVIVE_TEST_TORCH_FAULT"] = fault
    env.update(extra)
    return env


def rr(root: Path, *args, env: dict):
    return subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), *args],
                          capture_output=True, text=True, env=env, cwd=REPO, timeout=900)


SMOKE = ["--smoke-python", sys.executable, "--smoke-cpu-test-mode"]


def test_an_install_that_slows_products_says_so_and_one_that_does_not_stays_near_1(demo):
    root, args = demo
    smoke_dir = root / "var/lib/rocmrevive/smoke"
    # --check plans and runs no smoke: nothing recorded, no "smoke" in the JSON
    r = rr(root, "--json", "install", "--check", "--smoke", *SMOKE, *args, env=_env())
    assert r.returncode == 20, r.stderr[-2000:]
    assert "smoke" not in json.loads(r.stdout) and not smoke_dir.exists()
    assert "smoke before" not in r.stderr

    # the slowdown exists only once the graft's file does
    slow = _env("slow", ROCMREVIVE_TEST_FAULT_SLOW="10", ROCMREVIVE_TEST_FAULT_IF_EXISTS=str(root / ADDED))
    r = rr(root, "--json", "install", *SMOKE, *args, env=slow)
    assert r.returncode == 0, r.stderr[-3000:]   # a slowdown is reported, not an error
    doc = json.loads(r.stdout)
    assert doc["copies"][0]["status"] == "installed" and (root / ADDED).exists()
    sm = doc["smoke"]
    assert sm["python"] == sys.executable and sm["cpu_test_mode"] is True
    before, after = sm["before"], sm["after"]
    assert before["code"] == "OK" and before["torch"]["status"] == "passed"
    assert before["finished_at"] <= after["started_at"]
    # the pass before the install is this stack's record; the run after it is held to it (slow)
    assert len(before["speed_records"]) == 1 and after["speed_records"] == []
    assert after["code"] == "SMOKE_SLOW" and after["torch"]["status"] == "passed"
    (dev,) = sm["comparison"]["devices"]
    assert dev["overall"] >= 2.0, dev
    assert dev["classes"]["prefill"]["ratio"] >= 4 and dev["classes"]["classic"]["ratio"] < 2, dev["classes"]
    m = LINE.fullmatch(sm["line"])
    assert m, sm["line"]
    assert float(m.group(1)) == pytest.approx(dev["overall"], abs=0.006)
    assert m.group(2) == before["finished_at"][:10] + " " + before["finished_at"][11:16] + " UTC"
    assert "smoke before the install: passed" in r.stderr and "smoke after the install: passed its checks, SLOW" in r.stderr

    # nothing left to change: no smoke at all
    r = rr(root, "--json", "install", *SMOKE, *args, env=slow)
    assert r.returncode == 0, r.stderr[-2000:]
    again = json.loads(r.stdout)["smoke"]
    assert again["before"] is None and again["after"] is None and again["line"] is None

    # undone, then installed again with no fault: the line (as printed) stays near 1
    r = rr(root, "--json", "rollback", env=_env())
    assert r.returncode == 0 and not (root / ADDED).exists(), r.stderr[-2000:]
    r = rr(root, "install", *SMOKE, *args, env=_env())
    assert r.returncode == 0, r.stderr[-3000:]
    m = next(filter(None, (LINE.fullmatch(line) for line in r.stdout.splitlines())), None)
    assert m, r.stdout
    assert float(m.group(1)) < 2.0


def test_an_interpreter_root_may_not_run_is_refused_before_anything_changes(demo, tmp_path):
    root, args = demo
    bad = tmp_path / "shared"
    bad.mkdir()
    os.chmod(bad, 0o777)   # anyone may replace what is in it
    marks = tmp_path / "ran"
    py = bad / "python3"
    py.write_text(f"#!/bin/sh\ntouch {marks}\nexec {sys.executable} \"$@\"\n")
    py.chmod(0o755)
    before = tree_hash(root / "opt")
    r = rr(root, "--json", "install", "--smoke-python", str(py), "--smoke-cpu-test-mode", *args, env=_env())
    assert r.returncode == 4, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    doc = json.loads(r.stdout)
    assert doc["error"]["code"] == "PERMISSION" and "writable" in doc["error"]["message"], doc["error"]
    assert not marks.exists() and tree_hash(root / "opt") == before
    assert "extracting" not in r.stderr   # refused before the source was read
    # --smoke with no interpreter that has PyTorch (under --root only the image is looked in): exit 2
    r = rr(root, "--json", "install", "--smoke", *args, env=_env())
    assert r.returncode == 2, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    err = json.loads(r.stdout)["error"]["message"]
    assert err.startswith("--smoke: no Python with PyTorch found") and "--smoke-python PATH" in err, err
    assert tree_hash(root / "opt") == before and "extracting" not in r.stderr


def test_wrong_results_after_the_install_fail_it_and_name_the_rollback(demo):
    root, args = demo
    broken = _env("zero-block", ROCMREVIVE_TEST_FAULT_BLOCK="8", ROCMREVIVE_TEST_FAULT_IF_EXISTS=str(root / ADDED))
    r = rr(root, "--json", "install", *SMOKE, *args, env=broken)
    assert r.returncode == 10, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    doc = json.loads(r.stdout)
    assert doc["error"]["code"] == "SMOKE_FAILED"
    msg = doc["error"]["message"]
    assert msg.startswith("installed, but the smoke after the install failed: PyTorch: ") and "wrong result" in msg, msg
    assert msg.endswith(f"`sudo rocmrevive --root {root} rollback` undoes the install"), msg   # as typed here
    assert (root / ADDED).exists()   # the install stays: the user decides (rollback named)
    sm = doc["smoke"]
    assert sm["before"]["code"] == "OK" and sm["after"]["code"] == "SMOKE_FAILED" and sm["comparison"] is None
    assert sm["line"].startswith("after the install: the smoke FAILED: ") and sm["line"].endswith("(before it: passed)")
