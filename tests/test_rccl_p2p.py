"""Peer-to-peer readiness and the RCCL/NCCL env file, on the fixture machines built from the
captures: two MI50 on different root complexes with 16 GiB BARs (no P2P), four MI50 behind one
switch (P2P everywhere), the B650E pair whose first all-reduce aborted, the EPYC with eight. The
env files are read back by a real bash (`source`) and by the env-file parser."""
from __future__ import annotations

import os
import struct
import subprocess
from pathlib import Path

from rocmrevive.hardware import scan
from rocmrevive.rccl.envfile import parse_env_text
from rocmrevive.rccl.p2p import read_acs, readiness
from rocmrevive.rootfs import Root
from tests.cli_support import rr_parsed as rr
from tests.machines import fresh_machine, machine  # noqa: F401  (pytest fixtures)
from tests.machines.build import build_machine
from tests.machines.catalog import MACHINES


def sourced(text: str, tmp_path: Path, keys=("HSA_FORCE_FINE_GRAIN_PCIE", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
                                              "VLLM_NCCL_SO_PATH", "LD_LIBRARY_PATH")) -> dict:
    """What a shell gets from `source FILE` (unset variables left out)."""
    f = tmp_path / "rccl.env"
    f.write_text(text)
    script = f"set -eu; unset {' '.join(keys)}; source {f}; " + "; ".join(
        f'[ -n "${{{k}+x}}" ] && echo "{k}=${k}" || true' for k in keys)
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True,
                         env={"PATH": os.environ["PATH"]}).stdout
    return dict(line.split("=", 1) for line in out.splitlines())


def test_dual_mi50_different_root_complexes_no_p2p(machine, tmp_path):
    root = machine("dual-mi50")
    rep = readiness(Root(root), scan(Root(root)))
    assert rep.verdict == "no-p2p"
    (p,) = rep.pairs
    assert (p.a, p.b, p.relation, p.verdict, p.kfd_peer_link) == (0, 1, "NODE", "no-p2p", False)
    assert p.path == "different root complexes (0000:16 / 0000:64)"
    assert p.blockers == ["GPU0: BAR 16 GiB is smaller than its 32 GiB VRAM (no large BAR)",
                          "GPU1: BAR 16 GiB is smaller than its 32 GiB VRAM (no large BAR)"]
    env = {e.key: e for e in rep.env}
    assert env["NCCL_P2P_DISABLE"].active and env["NCCL_P2P_DISABLE"].value == "1"
    assert "GPU0-GPU1 cannot do PCIe peer-to-peer" in env["NCCL_P2P_DISABLE"].why
    fixes = {f.kind: f for f in rep.fixes}
    assert fixes["kernel-cmdline"].text == "iommu=pt intel_iommu=on"       # Xeon W, IOMMU groups of type DMA
    assert "GPU0: BAR 16 GiB < 32 GiB VRAM" in fixes["firmware"].why
    assert sourced(rep.env_text(), tmp_path) == {"HSA_FORCE_FINE_GRAIN_PCIE": "1", "NCCL_P2P_DISABLE": "1"}
    plain = parse_env_text(rep.env_text("env"))
    assert plain == {"HSA_FORCE_FINE_GRAIN_PCIE": "1", "NCCL_P2P_DISABLE": "1"}


def test_four_mi50_behind_one_switch_keep_p2p(machine, tmp_path):
    root = machine("mi50x4-switch")
    rep = readiness(Root(root), scan(Root(root)))
    assert rep.verdict == "p2p"
    assert [(p.a, p.b) for p in rep.pairs] == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert {p.relation for p in rep.pairs} == {"PIX"} and {p.kfd_peer_link for p in rep.pairs} == {True}
    assert all(p.path == "below one PCIe switch" for p in rep.pairs)
    text = rep.env_text()
    assert "NCCL_P2P_DISABLE" not in text and "NCCL_P2P_LEVEL" not in text
    assert sourced(text, tmp_path) == {"HSA_FORCE_FINE_GRAIN_PCIE": "1"}
    assert rep.fixes == []                      # no IOMMU groups, large BARs
    sub = readiness(Root(root), scan(Root(root)), gpus={1, 3})
    assert [(p.a, p.b) for p in sub.pairs] == [(1, 3)] and [g["index"] for g in sub.gpus] == [1, 3]


def test_cli_env_files_for_both_machines(machine, tmp_path):
    rc, out, err = rr(machine("dual-mi50"), "rccl", "env")
    assert rc == 0, err
    assert "export NCCL_P2P_DISABLE=1\n" in out and "#   kernel-cmdline: iommu=pt intel_iommu=on" in out
    rc, doc, _ = rr(machine("dual-mi50"), "--json", "rccl", "env", "--format", "env")
    assert doc["verdict"] == "no-p2p" and "NCCL_P2P_DISABLE=1\n" in doc["env_file"]
    assert doc["pairs"][0]["relation"] == "NODE"
    out_file = tmp_path / "x" / "rccl.env"
    rc, doc, _ = rr(machine("mi50x4-switch"), "--json", "rccl", "env", "-o", str(out_file))
    assert rc == 0 and doc["written"] == str(out_file) and doc["verdict"] == "p2p"
    assert sourced(out_file.read_text(), tmp_path) == {"HSA_FORCE_FINE_GRAIN_PCIE": "1"}
    rc, doc, _ = rr(machine("mi50x4-switch"), "--json", "rccl", "env", "--gpus", "0,7")
    assert rc == 2 and "no GPU7" in doc["error"]["message"]


def test_b650e_pair_gets_a_commented_hint_from_the_capture(machine):
    root = machine("dual-mi50-am5")
    rep = readiness(Root(root), scan(Root(root)))
    (p,) = rep.pairs
    assert (p.relation, p.verdict) == ("PHB", "p2p") and any("mx-llama.cpp#7" in r for r in p.risks)
    (hint,) = [e for e in rep.env if e.key == "NCCL_P2P_DISABLE"]
    assert not hint.active and "# export NCCL_P2P_DISABLE=1\n" in rep.env_text()
    stock = readiness(Root(machine("dual-mi50-am5", stock_kernel=True)),
                      scan(Root(machine("dual-mi50-am5", stock_kernel=True))))
    assert stock.pairs[0].verdict == "no-p2p"
    assert [f.text for f in stock.fixes if f.kind == "kernel"] == [
        "a kernel built with CONFIG_HSA_AMD_P2P, CONFIG_PCI_P2PDMA, CONFIG_DMABUF_MOVE_NOTIFY"]


def test_eight_mi50_p2p_only_inside_a_root_complex_sets_the_level(tmp_path):
    spec = MACHINES["mi50x8"]()
    quad = {g["node"]: int(g["bdf"][5:7], 16) & 0xC0 for g in spec["gpus"]}
    for g in spec["gpus"]:   # the kernel allows peers under one EPYC root complex only (scenario)
        g["p2p_peers"] = [n for n, q in quad.items() if q == quad[g["node"]] and n != g["node"]]
    root = build_machine(spec, tmp_path / "m")
    rep = readiness(Root(root), scan(Root(root)))
    rels = {(p.relation, p.verdict) for p in rep.pairs}
    assert rels == {("PHB", "p2p"), ("NODE", "no-p2p")} and rep.verdict == "partial"
    env = {e.key: e for e in rep.env}
    assert "NCCL_P2P_DISABLE" not in env and env["NCCL_P2P_LEVEL"].value == "PHB"


def _config_with_acs(ctrl: int) -> bytes:
    """4 KiB of config space: a PCIe capability list ending in ACS (ext. cap 0x000D) at 0x148."""
    data = bytearray(4096)
    struct.pack_into("<I", data, 0x100, 0x0001 | (1 << 16) | (0x148 << 20))   # AER, next 0x148
    struct.pack_into("<IHH", data, 0x148, 0x000D | (1 << 16), 0x005F, ctrl)   # ACS, last
    return bytes(data)


def test_acs_redirect_on_the_switch_port_is_reported(fresh_machine):
    root = fresh_machine("mi50x4-switch")
    cfg = root / "sys/bus/pci/devices/0000:2f:08.0"
    (cfg / "config").write_bytes(_config_with_acs(0x1D))      # SV RR CR UF
    assert read_acs(Root(root), "0000:2f:08.0")["flags"] == ["SV", "RR", "CR", "UF"]
    assert read_acs(Root(root), "0000:2f:09.0") is None      # no config file: unknown, not "off"
    rep = readiness(Root(root), scan(Root(root)))
    hit = [p for p in rep.pairs if any("ACS" in r for r in p.risks)]
    assert [(p.a, p.b) for p in hit] == [(0, 1), (0, 2), (0, 3)]
    assert "ACS RR+CR on switch port 0000:2f:08.0 above GPU0" in hit[0].risks[0]
    (hint,) = [e for e in rep.env if e.key == "NCCL_P2P_DISABLE"]
    assert not hint.active and "ACS" in hint.why


def test_one_gpu_needs_no_p2p_settings(machine):
    root = machine("rx6900xt-gfx1030")
    rep = readiness(Root(root), scan(Root(root)))
    assert rep.verdict == "single" and rep.env == [] and rep.notes
