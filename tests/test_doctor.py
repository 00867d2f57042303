"""``rocmrevive doctor`` from the outside: findings with severity, cause and fix; exit codes."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from machines import capture, fresh_machine, machine  # noqa: F401
from rocmrevive.cli.main import cli


def doctor(root, *extra):
    res = CliRunner().invoke(cli, ["--json", "--root", str(root), "doctor", *extra], catch_exceptions=False)
    doc = json.loads(res.stdout)
    return res.exit_code, doc, {f["id"]: f for f in doc["findings"]}


def test_demo_machine_findings(machine):
    code, doc, f = doctor(machine("dual-mi50"), "--user", "alice")
    assert code == 11 and doc["error"]["code"] == "PROBLEMS_FOUND"
    assert doc["counts"]["error"] == 1
    miss = f["rocblas-missing-gfx906"]
    assert miss["severity"] == "error" and miss["fix"] == "rocmrevive install --tree /opt/rocm-6.4.3/lib/rocblas/library"
    p2p = f["p2p-impossible"]
    assert p2p["severity"] == "warning" and p2p["subject"] == "GPU0,GPU1"
    assert "different root complexes (0000:16 and 0000:64)" in p2p["message"]
    assert "RCCL all-reduce may fail" in p2p["message"] and "NCCL_P2P_DISABLE=1" in p2p["fix"]
    assert "Above 4G Decoding" in p2p["fix"]
    assert f["small-bar"]["fix_kind"] == "setting"
    assert "iommu=pt" in f["iommu-not-passthrough"]["fix"]
    assert "user-not-in-render-group" not in f            # alice is in render
    for finding in doc["findings"]:
        assert finding["severity"] in ("error", "warning", "info")
        assert finding["message"] and finding["cause"] is not None and finding["fix"]
    # errors come first
    sev = [x["severity"] for x in doc["findings"]]
    assert sev == sorted(sev, key=["error", "warning", "info"].index)


def test_no_errors_exit_zero(machine):
    code, doc, f = doctor(machine("dual-mi50-am5"), "--user", "root")
    assert code == 0 and doc["error"] is None and doc["counts"]["error"] == 0
    assert "p2p-impossible" not in f


def test_nothing_to_do_exit_three(machine):
    for name in ("mi100-gfx908", "no-amd-gpu", "rx6900xt-gfx1030"):
        code, doc, f = doctor(machine(name))
        assert code == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED", name
        assert {"no-gfx906", "no-amd-gpu"} & f.keys()


def test_user_not_in_render_group(machine):
    code, doc, f = doctor(machine("rocm643-torch-venv"), "--user", "alice")
    g = f["user-not-in-render-group"]
    assert g["severity"] == "error" and g["fix"].startswith("sudo usermod -aG render,video alice")
    assert "/dev/kfd" in g["message"] and code == 11
    code, doc, f = doctor(machine("rocm643-torch-venv"), "--user", "nobody-here")
    assert "user-unknown" in f and f["user-unknown"]["severity"] == "info"


def test_memory_clock_and_vulkan(machine, tmp_path):
    text = capture("gfx906_mi50_66a0_lspci_sysfs_vulkan_hip_lota09.txt")
    vk = tmp_path / "vk.txt"
    vk.write_text(text)
    code, doc, f = doctor(machine("mi50-66a0-lota09"), "--vulkaninfo", str(vk))
    m = f["mclk-lowest"]
    assert m["severity"] == "warning" and "350 MHz of 1000 MHz" in m["message"]
    assert "/sys/class/drm/card2/device/pp_dpm_mclk" in m["fix"]
    assert f["vulkan-sees-gpu"]["severity"] == "info"
    vk.write_text("deviceName = Intel(R) UHD Graphics 630 (CFL GT2)\n")
    _, _, f = doctor(machine("mi50-66a0-lota09"), "--vulkaninfo", str(vk))
    assert f["vulkan-missing-gpu"]["severity"] == "warning"


def test_rocminfo_disagreement_is_an_error(machine, tmp_path):
    ri = tmp_path / "ri.txt"
    ri.write_text(capture("gfx906_mi50x4_rocminfo_grep_rocm3999.txt"))
    code, _, f = doctor(machine("dual-mi50"), "--rocminfo", str(ri), "--user", "alice")
    assert code == 11 and f["rocminfo-mismatch"]["severity"] == "error"


def test_kfd_missing_is_an_error(machine):
    code, _, f = doctor(machine("mi50-radeon-vii", no_kfd=True))
    assert code == 11 and f["kfd-missing"]["severity"] == "error" and "modprobe amdgpu" in f["kfd-missing"]["fix"]


def test_stock_kernel_p2p_fix(machine):
    _, _, f = doctor(machine("dual-mi50-am5", stock_kernel=True), "--user", "root")
    assert "CONFIG_HSA_AMD_P2P=y" in f["p2p-impossible"]["fix"]
    assert "CONFIG_PCI_P2PDMA" in f["p2p-impossible"]["cause"]


def test_human_output(machine):
    root = machine("dual-mi50")
    res = CliRunner().invoke(cli, ["--root", str(root), "doctor", "--user", "alice"])
    assert res.exit_code == 11
    out = res.stdout
    assert "error   rocBLAS 4.4.1 in /opt/rocm-6.4.3/lib/rocblas/library has no gfx906 Tensile files" in out
    # a fix line is what to type: sudo for a command that writes, and the --root this run looked at
    assert f"fix:   sudo rocmrevive --root {root} install --tree /opt/rocm-6.4.3/lib/rocblas/library" in out
    assert "1 error, " in out and "(s)" not in out
    assert "rocmrevive doctor: 1 error: " in res.stderr


@pytest.mark.parametrize("name", ["mi50x8", "mi50x4-switch", "mi50-w5700-mixed", "mi50-radeon-vii"])
def test_every_machine_diagnoses(machine, name):
    code, doc, _ = doctor(machine(name), "--user", "root")
    assert code in (0, 11) and (code == 11) == (doc["counts"]["error"] > 0)
