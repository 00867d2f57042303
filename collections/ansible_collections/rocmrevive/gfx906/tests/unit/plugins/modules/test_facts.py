"""rocmrevive.gfx906.facts: detect and status as host facts, with the real CLI."""
from __future__ import annotations

from ansible_collections.rocmrevive.gfx906.plugins.modules import facts, gfx906_patch as patch

LIB = "/opt/rocm-6.4.3/lib/rocblas/library"


def test_facts_of_a_dual_mi50_before_and_after_install(hosts, cli, run_module):
    code, res = run_module(facts, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli), check=True)
    assert code == 0 and res["changed"] is False
    f = res["ansible_facts"]["rocmrevive"]
    assert f["bin"] == cli and f["gfx906"] is True and f["targets"] == ["gfx906:sramecc+:xnack-"]
    assert [g["bdf"] for g in f["gpus"]] == ["0000:19:00.0", "0000:67:00.0"]
    assert all(g["processor"] == "gfx906" and g["model"].startswith("AMD Instinct MI50") for g in f["gpus"])
    assert f["needs"] == [LIB] and f["managed"] == [] and f["message"] == ""
    assert [t["path"] for t in f["trees"]] == [LIB] and f["trees"][0]["rocm_version"] == "6.4.3"
    assert "detect" not in f

    run_module(patch, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, manifests=str(hosts / "manifests"),
                           source=str(hosts / "librocblas4_6.4.4-4_amd64.deb"), cache=str(hosts / "c")))
    code, res = run_module(facts, dict(root=str(hosts / "mi50"), rocmrevive_bin=cli, full=True))
    f = res["ansible_facts"]["rocmrevive"]
    assert f["needs"] == []
    assert [(m["tree"], m["state"], m["files_managed"]) for m in f["managed"]] == [(LIB, "intact", 9)]
    assert f["detect"]["pairs"] and f["detect"]["command"] == "detect"


def test_facts_of_a_host_without_amd_gpu(hosts, cli, run_module):
    code, res = run_module(facts, dict(root=str(hosts / "nogpu"), rocmrevive_bin=cli, status=False))
    assert code == 0 and res.get("failed") is not True
    f = res["ansible_facts"]["rocmrevive"]
    assert f["gfx906"] is False and f["gpus"] == [] and f["targets"] == [] and f["needs"] == []
    assert f["message"].startswith("no AMD GPU found")
