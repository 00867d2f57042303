"""A card's health during the smoke: RAS/ECC and PCIe AER counters read before and after (a new
uncorrectable error fails), temperatures, clocks and throttling sampled, from sysfs trees built
from real captures (tests/machines: the dual MI50; sensor figures from a captured rocm-smi).

Units on the root-side reader (rocmrevive/hardware/health.py), then from the outside: the real
smoke on CPU test mode over the fixture (--root), where a fault injected from outside the probe
(tests/smoke_faults: the user's torch, at its first product) adds an uncorrectable error to the
card's RAS counter file, the way a failing HBM stack reports itself mid-run.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from machines.build import IDLE_MI50_HWMON, build, gpu_metrics_v1_0, write_health

from rocmrevive.hardware import health
from rocmrevive.rootfs import Root

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FAULTS = HERE / "smoke_faults"
GPU0 = "0000:19:00.0"


def machine(tmp_path: Path, *, throttle: int = 0, ras=(0, 0), aer_cor: int = 0) -> tuple[Path, Path]:
    root = build("dual-mi50", tmp_path / "m")
    dev = root / "sys/bus/pci/devices" / GPU0
    dev = dev.resolve()
    write_health(dev, ras={"umc": ras, "gfx": (0, 0)},
                 aer={"correctable": {"Timeout": aer_cor}, "nonfatal": {}, "fatal": {}},
                 hwmon=IDLE_MI50_HWMON, gpu_metrics=gpu_metrics_v1_0(throttle))
    return root, dev


def test_the_reader_takes_every_counter_and_sensor(tmp_path):
    root, _ = machine(tmp_path, throttle=(1 << 1) | (1 << 13), ras=(0, 2), aer_cor=3)
    cards = health.read_health(Root(root))
    assert [c.bdf for c in cards] == [GPU0, "0000:67:00.0"]
    h = cards[0]
    assert h.ras == {"umc": {"ue": 0, "ce": 2}, "gfx": {"ue": 0, "ce": 0}}
    assert h.aer_total("correctable") == 3 and h.aer_total("fatal") == 0
    assert h.temps_c == {"edge": 39.0, "junction": 40.0, "mem": 38.0}
    assert h.clocks_mhz == {"sclk": 938, "mclk": 350} and h.power_w == 19.0
    assert h.gpu_metrics == "v1.0" and h.throttle_status == 0x2002
    assert h.to_json()["throttle_bits"] == [1, 13]
    assert cards[1].ras == {} and cards[1].temps_c == {}  # nothing there: nothing made up


def test_new_uncorrectable_errors_are_told_apart_from_corrected_ones(tmp_path):
    root, dev = machine(tmp_path)
    before = health.read_health(Root(root))
    write_health(dev, ras={"umc": (1, 4)}, aer={"correctable": {"Timeout": 2}, "nonfatal": {"CmpltTO": 1}})
    changes = health.compare(before, health.read_health(Root(root)))
    assert [(c["what"], c["new"]) for c in changes["uncorrectable"]] == [
        ("RAS umc uncorrectable", 1), ("PCIe AER nonfatal", 1)]
    assert [(c["what"], c["new"]) for c in changes["corrected"]] == [
        ("RAS umc corrected", 4), ("PCIe AER correctable", 2)]
    assert health.compare(before, before) == {"uncorrectable": [], "corrected": []}


def test_a_gpu_metrics_table_of_another_layout_is_named_not_guessed():
    odd = bytearray(gpu_metrics_v1_0(0xFFFF))
    odd[2:4] = bytes([1, 3])            # says 1.3 but is 80 bytes long: not 1.3's 120-byte table
    assert health.parse_gpu_metrics(bytes(odd)) == ("v1.3", None)
    odd[2:4] = bytes([1, 4])            # MI300's layout: throttle_status elsewhere
    assert health.parse_gpu_metrics(bytes(odd)) == ("v1.4", None)
    odd[0:4] = (80).to_bytes(2, "little") + bytes([2, 0])   # an APU's
    assert health.parse_gpu_metrics(bytes(odd)) == ("v2.0", None)
    assert health.parse_gpu_metrics(b"\x01") == (None, None)
    assert health.parse_gpu_metrics(gpu_metrics_v1_0(5)[:72]) == ("v1.0", None)   # cut short


@pytest.mark.parametrize("content,size", [(1, 96), (2, 104), (3, 120)])
def test_gpu_metrics_1_1_to_1_3_keep_throttle_status_at_byte_68(content, size):
    # kgd_pp_interface.h: header (4), 6 temperatures (12), 3 activities (6), power (2), u64 energy
    # (8, at 24), u64 clock counter (8), 7 average and 7 current clocks (28): 68
    table = bytearray(size)
    table[0:4] = size.to_bytes(2, "little") + bytes([1, content])
    table[68:72] = (0x2001).to_bytes(4, "little")
    assert health.parse_gpu_metrics(bytes(table)) == (f"v1.{content}", 0x2001)


# --- from the outside ----------------------------------------------------------------------------
def smoke(root: Path, *, fault: str | None = None, **extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ROCMREVIVE_")}
    env["PYTHONPATH"] = os.pathsep.join([str(FAULTS), str(REPO)])
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + "/usr/bin:/bin"
    if fault:
        env["ROCMREVIVE_TEST_TORCH_FAULT"] = fault
    env.update(extra)
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "smoke", "--torch",
                        "--python", sys.executable, "--cpu-test-mode", "--cpu-devices", "1", "--json"],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=900)
    return r.returncode, json.loads(r.stdout), r.stderr


def test_ras_errors_that_appear_during_the_run_fail_the_smoke(tmp_path):
    root, dev = machine(tmp_path, ras=(0, 5))
    rc, doc, err = smoke(root, fault="ras", ROCMREVIVE_TEST_RAS_FILE=str(dev / "ras/umc_err_count"))
    assert rc == 10, err
    assert doc["error"]["code"] == "SMOKE_FAILED"
    # one more per interpreter that ran a product (the probe's workers): at least one
    assert re.fullmatch(rf"health: {GPU0}: [1-9] new RAS umc uncorrectable error\(s\) during the smoke",
                        doc["error"]["message"]), doc["error"]["message"]
    assert doc["torch"]["status"] == "passed"  # every product was right: the card's counters failed it
    assert doc["speed_records"] == []           # not a pass: not a record


def test_throttle_flags_are_reported_and_the_sensors_ranged(tmp_path):
    root, _ = machine(tmp_path, throttle=1 << 13, ras=(0, 5))
    rc, doc, err = smoke(root)
    assert rc == 0, err
    card = doc["health"]["samples"]["cards"][GPU0]
    assert card["throttling"] and card["throttle_bits"] == [13] and card["throttle_samples"] == card["samples"] >= 2
    assert card["temps_c"]["edge"] == [39.0, 39.0] and card["clocks_mhz"]["mclk"] == [350, 350]
    assert any(w.startswith(f"{GPU0}: throttling in ") and "bits 13" in w for w in doc["warnings"])
    assert doc["health"]["changes"] == {"uncorrectable": [], "corrected": []}  # 5 corrected before: not new


def test_likely_causes_of_a_slow_card(tmp_path):
    root, dev = machine(tmp_path)
    slot = dev.parent.parent   # 0000:17:00.0: the MI50's on-card switch, whose link is the slot's
    (dev / "pp_dpm_mclk").write_text("0: 350Mhz *\n1: 800Mhz\n2: 1000Mhz\n")
    (dev / "current_link_width").write_text("1\n")   # the GPU function's own link is on the card: not the slot's
    samples = health.Samples()
    samples.add(health.read_health(Root(root)))
    card = health.read_health(Root(root))[0].to_json()
    assert card["link"]["at"] == "0000:17:00.0" and card["link"]["width"] == 16
    assert health.likely_causes(card, samples.summary()["cards"][GPU0]) == [
        "memory clock stayed at its lowest level (350 MHz of 350-1000) through the run"]
    (slot / "current_link_width").write_text("1\n")
    (slot / "current_link_speed").write_text("2.5 GT/s PCIe\n")
    samples = health.Samples()
    samples.add(health.read_health(Root(root)))
    card = health.read_health(Root(root))[0].to_json()
    assert health.likely_causes(card, samples.summary()["cards"][GPU0]) == [
        "memory clock stayed at its lowest level (350 MHz of 350-1000) through the run",
        "PCIe link x1 of x16 (at 0000:17:00.0)", "PCIe link at 2.5 GT/s of 16 GT/s through the run (at 0000:17:00.0)"]
    (slot / "current_link_speed").write_text("16.0 GT/s PCIe\n")   # the link rose during the run
    samples.add(health.read_health(Root(root)))
    card = health.read_health(Root(root))[0].to_json()
    assert "through the run" not in " ".join(health.likely_causes(card, samples.summary()["cards"][GPU0])[1:])
    (slot / "current_link_width").write_text("16\n")
    (dev / "pp_dpm_mclk").write_text("0: 350Mhz\n1: 800Mhz\n2: 1000Mhz *\n")
    write_health(dev, hwmon={"freq2_input": 1_000_000_000})
    samples.add(health.read_health(Root(root)))   # the clock left its lowest level during the run
    card = health.read_health(Root(root))[0].to_json()
    assert health.likely_causes(card, samples.summary()["cards"][GPU0]) == []


def test_a_slow_verdict_names_the_slot_link_and_generic_only_tensile_files(tmp_path):
    """The dual MI50 with its first card trained x1 at 2.5 GT/s in its slot (the on-card switch's
    link; the GPU function still says x16), and the probe's rocBLAS reading a Tensile folder that
    reaches gfx906 only through the generic fallback: the exit-12 message names both."""
    import shutil

    sys.path.insert(0, str(REPO / "demo"))
    import minirocblas as mr

    root, dev = machine(tmp_path)
    slot = dev.parent.parent
    (slot / "current_link_width").write_text("1\n")
    (slot / "current_link_speed").write_text("2.5 GT/s PCIe\n")
    lib = tmp_path / "tensile"
    mr.build_library(lib)
    shutil.copy(lib / "TensileLibrary_lazy_gfx908.dat", lib / "TensileLibrary_lazy_gfx906.dat")
    extra = {"ROCMREVIVE_TEST_FAULT_MIN_SIZE": "256", "ROCBLAS_TENSILE_LIBPATH": str(lib)}
    rc, doc, err = smoke(root, **extra)
    assert rc == 0, err
    assert doc["torch"]["stack"]["tensile"]["path"] == str(lib)
    rc, doc, err = smoke(root, fault="slow", ROCMREVIVE_TEST_FAULT_SLOW="10", **extra)
    assert rc == 12, err
    msg = doc["error"]["message"]
    assert msg.endswith(
        f"(likely cause: the Tensile folder {lib} reaches gfx906:sramecc+:xnack- only through Tensile's generic "
        "fallback kernels (`rocmrevive verify` says generic-only) | 0000:19:00.0: PCIe link x1 of x16 (at "
        "0000:17:00.0); PCIe link at 2.5 GT/s of 16 GT/s through the run (at 0000:17:00.0))"), msg


def _kfd_users(root: Path, gpu_ids: dict[str, int], procs: dict[int, dict]) -> None:
    """KFD's per-process folders as kfd_process.c makes them (proc/<pid>/vram_<gpu_id>: bytes), the
    topology nodes' gpu_id, and /proc/<pid>/{comm,stat} under the machine root."""
    nodes = root / "sys/class/kfd/kfd/topology/nodes"
    for node in nodes.iterdir():
        props = (node / "properties").read_text()
        for bdf, gid in gpu_ids.items():
            bus, devfn = int(bdf[5:7], 16), int(bdf[8:10], 16) << 3 | int(bdf[11])
            if f"location_id {bus << 8 | devfn}\n" in props:
                (node / "gpu_id").write_text(f"{gid}\n")
    for pid, p in procs.items():
        d = root / "sys/class/kfd/kfd/proc" / str(pid)
        d.mkdir(parents=True, exist_ok=True)
        (d / "pasid").write_text("32769\n")
        for gid, used in p["vram"].items():
            (d / f"vram_{gid}").write_text(f"{used}\n")
        pd = root / "proc" / str(pid)
        pd.mkdir(parents=True, exist_ok=True)
        (pd / "comm").write_bytes(p["comm"] + b"\n")
        (pd / "stat").write_text(f"{pid} ({p['comm'].decode(errors='replace')}) S {p.get('ppid', 1)} {pid} {pid} 0\n")


def test_other_processes_on_a_card_are_read_from_kfd_and_named_safely(tmp_path):
    root, _ = machine(tmp_path)
    _kfd_users(root, {GPU0: 9962, "0000:67:00.0": 34443}, {
        4242: {"comm": b"llama-server", "vram": {9962: 12 * 2**30, 34443: 0}},
        4300: {"comm": b"idle-kfd", "vram": {9962: 0}},                     # KFD open, no VRAM: not a user
        4400: {"comm": b"\x1b[31mevil\x07", "vram": {34443: 2**30}},         # a name its owner chose
        4500: {"comm": b"probe", "vram": {9962: 2**30}, "ppid": 4501},       # the smoke's own (below 4501)
        4501: {"comm": b"rocmrevive", "vram": {}},
    })
    r = Root(root)
    ids = health.gpu_ids(r)
    assert ids == {9962: GPU0, 34443: "0000:67:00.0"}
    users = health.read_gpu_users(r, ids, ours=4501)
    assert users == {GPU0: [{"pid": 4242, "name": "llama-server", "vram_bytes": 12 * 2**30}],
                     "0000:67:00.0": [{"pid": 4400, "name": "?[31mevil?", "vram_bytes": 2**30}]}
    assert 4500 in {u["pid"] for u in health.read_gpu_users(r, ids)[GPU0]}   # without `ours` it is one more
    samples = health.Samples()
    samples.add(health.read_health(r), users)
    samples.add(health.read_health(r), {})
    card = health.read_health(r)[0].to_json()
    summary = samples.summary()["cards"]
    assert summary[GPU0]["others"] == [{"pid": 4242, "name": "llama-server", "vram_bytes": 12 * 2**30, "samples": 1}]
    assert health.likely_causes(card, summary[GPU0]) == [
        "another process on the card during the run: pid 4242 (llama-server, 12.0 GiB of VRAM)"]
    assert health.likely_causes(card, {**summary[GPU0], "others": []}) == []


def test_a_slow_verdict_names_another_process_on_the_card(tmp_path):
    """The H100 run beside a GPU hog (bench/gpu_smoke_llama.sh) was slow for a reason the smoke could not
    see: here KFD lists another process holding VRAM on the first MI50 through the run, and the exit-12
    message and the warnings name it (the fault slows the user's torch from outside the probe)."""
    root, _ = machine(tmp_path)
    _kfd_users(root, {GPU0: 9962}, {5151: {"comm": b"python3", "vram": {9962: 30 * 2**30}}})
    extra = {"ROCMREVIVE_TEST_FAULT_MIN_SIZE": "256"}
    rc, doc, err = smoke(root, **extra)
    assert rc == 0, err     # right results, no record yet: the record is this pass
    assert any("another process used the card during the smoke: pid 5151 (python3), 30.0 GiB" in w
               for w in doc["warnings"]), doc["warnings"]
    rc, doc, err = smoke(root, fault="slow", ROCMREVIVE_TEST_FAULT_SLOW="10", **extra)
    assert rc == 12, err
    assert doc["error"]["message"].endswith(
        f"(likely cause: {GPU0}: another process on the card during the run: pid 5151 (python3, 30.0 GiB of VRAM))"), \
        doc["error"]["message"]


def test_a_fifo_where_an_attribute_should_be_is_a_problem_not_a_wait(tmp_path):
    """A machine folder given with --root may be a user's: a FIFO planted at a sensor, the gpu_metrics table and a
    KFD process's VRAM file is named as a problem at once (the shared sysfs reader opens O_NONBLOCK and checks fstat);
    before, the first open waited for a writer forever."""
    import threading

    root, dev = machine(tmp_path)
    hw = next((dev / "hwmon").iterdir())
    for f in (hw / "temp1_input", dev / "gpu_metrics"):
        f.unlink()
        os.mkfifo(f)
    _kfd_users(root, {GPU0: 9962}, {4242: {"comm": b"x", "vram": {}}})
    os.mkfifo(root / "sys/class/kfd/kfd/proc/4242/vram_9962")
    out: list = []
    t = threading.Thread(target=lambda: out.append((health.read_health(Root(root)),
                                                    health.read_gpu_users(Root(root), {9962: GPU0}))), daemon=True)
    t.start()
    t.join(timeout=20)
    assert out, "a FIFO made the reader wait"
    cards, users = out[0]
    assert any("temp1_input is not a regular file" in p for p in cards[0].problems), cards[0].problems
    assert any("gpu_metrics is not a regular file" in p for p in cards[0].problems)
    assert cards[0].gpu_metrics is None and "edge" not in cards[0].temps_c and users == {}
