"""``rocmrevive doctor`` from the outside: findings with severity, cause and fix; exit codes."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import capture, fresh_machine, machine  # noqa: F401

from rocmrevive.cli.main import cli


def doctor(root, *extra):
    res = CliRunner().invoke(cli, ["--json", "--root", str(root), "doctor", *extra], catch_exceptions=False)
    doc = json.loads(res.stdout)
    return res.exit_code, doc, {f["id"]: f for f in doc["findings"]}


def test_demo_machine_findings(machine):
    root = machine("dual-mi50")
    code, doc, f = doctor(root, "--user", "alice")
    assert code == 11 and doc["error"]["code"] == "PROBLEMS_FOUND"
    assert doc["counts"]["error"] == 1
    miss = f["rocblas-missing-gfx906"]
    # the fix as the user must type it: sudo, and this run's --root (issue 39: pasted, it acted on /)
    assert miss["severity"] == "error" and \
        miss["fix"] == f"sudo rocmrevive --root {root} install --tree /opt/rocm-6.4.3/lib/rocblas/library"
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


# ------------------------------------------------------------------------------------------
# what rocmrevive did and whether it holds (issue 27): doctor agrees with status and verify

LIB643 = "/opt/rocm-6.4.3/lib/rocblas/library"


@pytest.fixture
def installed(tmp_path):
    """The dual-MI50 machine after a real `install` of gfx906 files from a .deb into its mini
    rocBLAS 4.4.1 tree (tests/test_install.py's demo)."""
    from tests.machines.build import build
    from tests.test_install import mr, rr, write_manifest

    root = build("dual-mi50", tmp_path / "m")
    mr.build_tree(root, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    deb = Path(mr.build_source_deb(tmp_path / "librocblas4_6.4.4-4_amd64.deb")["path"])
    args = ["--manifests", str(write_manifest(tmp_path / "manifests", deb)), "--from", str(deb),
            "--cache", str(tmp_path / "cache"), "--yes"]
    rr(root, "install", *args, check_rc=0)
    return root, args


def _gfx906_code_object(root) -> Path:
    return sorted((root / LIB643.lstrip("/")).glob("*gfx906*.co"))[0]


def test_installed_and_intact_is_no_error(installed):
    root, _args = installed
    code, doc, f = doctor(root, "--user", "alice")
    assert doc["counts"]["error"] == 0 and code == 0, doc["findings"]


def test_an_edited_installed_file_is_an_error_with_its_fix(installed):
    """status exits 8 and verify 6; doctor said 0 errors, exit 0."""
    from tests.test_install import rr

    root, _args = installed
    co = _gfx906_code_object(root)
    co.write_bytes(co.read_bytes()[:-16] + b"\0" * 16)
    assert rr(root, "status").returncode == 8 and rr(root, "verify").returncode == 6
    code, doc, f = doctor(root, "--user", "alice")
    assert code == 11 and doc["error"]["code"] == "PROBLEMS_FOUND"
    drift = f["managed-files-drifted"]
    assert drift["severity"] == "error" and drift["subject"] == LIB643 and co.name in drift["message"]
    txid = drift["data"]["txid"]
    assert drift["fix"].startswith(f"sudo rocmrevive --root {root} rollback --force {txid}")
    assert f"sudo rocmrevive --root {root} install --tree {LIB643}" in drift["fix"]
    bad = f["verify-failed"]
    assert bad["severity"] == "error" and bad["subject"] == LIB643 and "integrity" in bad["data"]["checks"]
    # the human output names both with the line to run
    res = CliRunner().invoke(cli, ["--root", str(root), "doctor", "--user", "alice"], catch_exceptions=False)
    out = " ".join(res.output.split())
    assert res.exit_code == 11 and f"sudo rocmrevive --root {root} rollback --force {txid}" in out


def test_removed_installed_files_are_an_error(installed):
    root, _args = installed
    _gfx906_code_object(root).unlink()
    code, doc, f = doctor(root, "--user", "alice")
    assert code == 11 and f["managed-files-missing"]["fix"] == f"sudo rocmrevive --root {root} install --tree {LIB643}"


def test_a_pending_transaction_is_an_error_with_recover(installed, tmp_path):
    """An install killed mid-rename: doctor exits 9 (INTERRUPTED) and lists it as an error whose
    fix is `recover`."""
    import os
    import subprocess
    import sys

    root, args = installed
    from tests.test_install import rr

    rr(root, "rollback", check_rc=0)
    env = {**os.environ, "ROCMREVIVE_TEST_KILL_AT": "rename:4", "NO_COLOR": "1"}
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "install", *args],
                       capture_output=True, text=True, env=env)
    assert r.returncode == -9, r.stderr
    code, doc, f = doctor(root, "--user", "alice")
    assert code == 9 and doc["error"]["code"] == "INTERRUPTED" and doc["pending"]
    tx = f["transaction-interrupted"]
    assert tx["severity"] == "error" and tx["subject"] == doc["pending"][0] and tx["fix"].startswith(f"sudo rocmrevive --root {root} recover")
    assert doc["counts"]["error"] >= 1


@pytest.mark.debian
def test_a_copy_with_no_source_gets_the_recipe_not_install(tmp_path, debian_pkgs):
    from tests.fixtures import rocm71 as F

    root = F.build_rocm71_machine(tmp_path / "m", debian_pkgs)
    code, doc, f = doctor(root, "--user", "alice")
    miss = f["rocblas-missing-gfx906"]
    assert code == 11 and miss["subject"] == F.LIB
    assert miss["fix"].startswith(f"rocmrevive --root {root} recipe --tree {F.LIB}") and " install --tree" not in miss["fix"]
