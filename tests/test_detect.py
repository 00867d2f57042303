"""``rocmrevive detect`` from the outside: CliRunner with --root and --json, exit codes, the
human output, this machine, and the committed demo machine."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from machines import CAPTURES, capture, machine  # noqa: F401
from machines.build import build

from rocmrevive.cli.main import cli

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "demo/machines/dual-mi50"

GPU_KEYS = {"index", "node", "bdf", "target", "processor", "gfx_target_version", "model", "model_certain",
            "vram_bytes", "render_node", "numa_node", "pcie", "problems"}
PCIE_KEYS = {"root_complex", "root_port", "chain", "switches", "link", "bars", "large_bar", "iommu_group"}


def run(*args):
    res = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return res


def detect_json(root, *extra):
    res = run("--json", "--root", str(root), "detect", *extra)
    return res.exit_code, json.loads(res.stdout)


def test_json_document_shape(machine):
    code, doc = detect_json(machine("dual-mi50"))
    assert code == 0 and doc["error"] is None
    assert {"schema_version", "command", "root", "changed", "warnings", "error"} <= doc.keys()
    assert {"gpus", "pairs", "iommu", "rocm_installs", "rocm_link", "rocblas_copies", "summary"} <= doc.keys()
    assert doc["command"] == "detect" and doc["changed"] is False
    for g in doc["gpus"]:
        assert GPU_KEYS <= g.keys() and PCIE_KEYS <= g["pcie"].keys()
        assert set(g["pcie"]["link"]) == {"speed", "width", "max_speed", "max_width"}
    g0 = doc["gpus"][0]
    assert (g0["target"], g0["gfx_target_version"], g0["bdf"], g0["render_node"]) == (
        "gfx906:sramecc+:xnack-", 90006, "0000:19:00.0", "/dev/dri/renderD128")
    assert g0["pcie"]["chain"] == ["0000:16:00.0", "0000:17:00.0", "0000:18:00.0"]
    assert (g0["pcie"]["root_complex"], g0["pcie"]["root_port"], g0["pcie"]["iommu_group"]) == (
        "0000:16", "0000:16:00.0", 30)
    (pair,) = doc["pairs"]
    assert {"a", "b", "relation", "p2p_possible", "blockers"} <= pair.keys()
    assert (pair["relation"], pair["p2p_possible"]) == ("NODE", False)
    assert doc["iommu"]["mode"] == "translated"
    (copy,) = doc["rocblas_copies"]
    assert {"path", "layout", "rocblas_version", "targets", "missing_for_gpus"} <= copy.keys()
    assert copy["missing_for_gpus"] == [0, 1]
    assert doc["rocm_link"]["target"] == "rocm-6.4.3" and doc["rocm_installs"][0]["default"] is True


@pytest.mark.parametrize("name,code,gpus,gfx906", [
    ("dual-mi50", 0, 2, 2), ("mi50x4-switch", 0, 4, 4), ("mi50x8", 0, 8, 8), ("mi50-radeon-vii", 0, 2, 2),
    ("mi50-w5700-mixed", 0, 2, 1), ("mi50-66a0-lota09", 0, 1, 1), ("rocm643-torch-venv", 0, 1, 1),
    ("mi100-gfx908", 3, 1, 0), ("rx6900xt-gfx1030", 3, 1, 0), ("no-amd-gpu", 3, 0, 0),
])
def test_exit_codes(machine, name, code, gpus, gfx906):
    rc, doc = detect_json(machine(name))
    assert rc == code
    assert (doc["summary"]["amd_gpus"], doc["summary"]["gfx906_gpus"]) == (gpus, gfx906)
    if code == 3:
        assert doc["error"]["code"] == "NOTHING_SUPPORTED" and doc["error"]["exit"] == 3
        assert "nothing to do" in doc["error"]["message"]


def test_this_machine_without_an_amd_gpu():
    """With --root / on a machine without an AMD GPU (like the CI machines): exit 3, JSON printed."""
    kfd = Path("/sys/class/kfd/kfd/topology/nodes")
    if kfd.is_dir() and any(
            "gfx_target_version 0" not in (p / "properties").read_text() for p in kfd.iterdir()):
        pytest.skip("this machine has an AMD GPU")
    res = run("--json", "--root", "/", "detect", "--no-search")
    doc = json.loads(res.stdout)
    assert res.exit_code == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED" and doc["gpus"] == []
    assert doc["error"]["message"].startswith("no AMD GPU found under /")
    human = run("--root", "/", "detect", "--no-search")
    assert human.exit_code == 3 and "No AMD GPU found." in human.stdout
    assert "no AMD GPU found under /" in human.stderr


def test_human_output_tables_and_drawing(machine):
    res = run("--root", str(machine("mi50x4-switch")), "detect")
    out = res.stdout
    assert res.exit_code == 0
    for text in ("GPUs", "0000:33:00.0", "gfx906:sramecc+:xnack-", "AMD Instinct MI50 32GB",
                 "root complex 0000:20", "switch up 0000:2e:00.0", "switch down 0000:2f:08.0",
                 "[on-card bridges 1022:1470, 1022:1471]", "PIX P2P", "rocBLAS copies",
                 "/opt/rocm-7.14.0/lib/rocblas/library"):
        assert text in out, text
    assert "\x1b[" not in out                     # not a terminal: no colour codes


def test_rocminfo_option(machine, tmp_path):
    text = capture("gfx906_mi50x4_rocminfo_grep_rocm3999.txt")
    f = tmp_path / "rocminfo.txt"
    f.write_text(text)
    _, doc = detect_json(machine("mi50x4-switch"), "--rocminfo", str(f))
    assert doc["rocminfo"]["matches"] is True and len(doc["rocminfo"]["agents"]) == 5   # CPU + 4 GPUs
    _, doc = detect_json(machine("dual-mi50"), "--rocminfo", str(f))
    assert doc["rocminfo"]["matches"] is False
    assert "rocminfo lists 4 GPU agent(s), the KFD topology 2" in doc["rocminfo"]["problems"]


def test_python_tree_and_no_search_options(machine, tmp_path):
    root = machine("rocm643-torch-venv")
    _, doc = detect_json(root, "--no-search")
    assert "python-torch" not in {c["layout"] for c in doc["rocblas_copies"]}
    _, doc = detect_json(root, "--no-search", "--python", "/home/alice/venvs/torch/bin/python",
                         "--tree", "/opt/rocm-6.4.3/lib/rocblas/library")
    layouts = [c["layout"] for c in doc["rocblas_copies"]]
    assert "python-torch" in layouts and layouts.count("amd") == 1    # --tree of a known copy: once
    # a --tree that is no folder is a usage error, not a rocBLAS copy (issue 16)
    code, bad = detect_json(root, "--no-search", "--tree", "/nowhere")
    assert code == 2 and "--tree /nowhere does not exist" in bad["error"]["message"]
    assert [e["named"] for e in doc["python_envs"]] == [True]


def test_deep_option_reports_non_code_placeholders(machine):
    _, doc = detect_json(machine("dual-mi50"), "--deep")
    co = doc["rocblas_copies"][0]["code_objects"]
    assert co["files"] == 18 and co["targets"] == [] and len(co["not_code_objects"]) == 18


def test_detect_json_on_eight_gpus_from_a_new_process(machine):
    """detect --json on an 8-GPU machine, start-up included (its time: bench/bench_detect.py)."""
    root = machine("mi50x8")
    # speed is measured in bench/bench_detect.py (as a ratio), never asserted by the clock here
    p = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--json", "--root", str(root), "detect"],
                       capture_output=True, text=True)
    assert p.returncode == 0 and len(json.loads(p.stdout)["gpus"]) == 8


def test_demo_machine_is_what_the_builder_writes(tmp_path):
    """demo/machines/dual-mi50 is committed; it must stay what tests/machines builds (the lead may
    put real Tensile files into its rocBLAS folder, which is not compared)."""
    fresh = build("dual-mi50", tmp_path / "d")
    skip = "opt/rocm-6.4.3/lib/rocblas/library/"

    def listing(base: Path) -> dict:
        out = {}
        for dirpath, dirnames, filenames in os.walk(base):
            for n in dirnames + filenames:
                p = Path(dirpath) / n
                rel = str(p.relative_to(base))
                if rel.startswith(skip):
                    continue
                if p.is_symlink():
                    out[rel] = "-> " + os.readlink(p)
                elif p.is_file():
                    out[rel] = p.read_bytes()
        return out

    assert listing(DEMO) == listing(fresh)
    assert os.readlink(DEMO / "opt/rocm") == "rocm-6.4.3"
    assert not any(os.readlink(p).startswith("/") for p in DEMO.rglob("*") if p.is_symlink())


def test_demo_runs_as_the_readme_shows():
    p = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--json", "--root", str(DEMO), "detect"],
                       capture_output=True, text=True, cwd=REPO)
    doc = json.loads(p.stdout)
    assert p.returncode == 0 and [g["bdf"] for g in doc["gpus"]] == ["0000:19:00.0", "0000:67:00.0"]
    (copy,) = doc["rocblas_copies"]
    assert copy["rocblas_version"] == "4.4.1" and copy["rocm_version"] == "6.4.3"
    assert "gfx906" not in copy["targets"] and copy["missing_for_gpus"] == [0, 1]
