"""Every capture that names GPUs, through its fixture machine, yields the GPUs, targets and (where
the capture shows it) topology facts of the capture. Facts are parsed from the capture text here,
not copied into the test.
"""
from __future__ import annotations

import re

from machines import CAPTURES, capture, machine  # noqa: F401
from machines.catalog import GFX908_PROPERTIES, MACHINES

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.hardware.gpus import scan
from rocmrevive.hardware.models import PROCESSOR_BY_PCI_ID
from rocmrevive.hardware.rocminfo import parse_rocminfo
from rocmrevive.rootfs import Root
from rocmrevive.trees.survey import diagnose, survey

# capture -> the machines built from it
CAPTURE_MACHINES = {
    "gfx906_mi50x2_lspci_vvv_nn_bandwidth_rocm4793.txt": ["dual-mi50"],
    "gfx906_mi50x2_rccl_tests_p2p_abort_mxllama7.txt": ["dual-mi50-am5"],
    "gfx906_mi50x4_env_summary_mixa3607.txt": ["mi50x4-switch"],
    "gfx906_mi50x4_rocminfo_grep_rocm3999.txt": ["mi50x4-switch"],
    "gfx906_mi50x8_rccl_init_log_rocm633_rccltests163.txt": ["mi50x8"],
    "gfx906_mi50_66a0_lspci_sysfs_vulkan_hip_lota09.txt": ["mi50-66a0-lota09", "no-amd-gpu"],
    "mixed_gfx906_gfx1010_lspci_rocmsmi_nixos_notes.txt": ["mi50-w5700-mixed"],
    "negative_gfx908_mi100_kfd_properties_fixture.txt": ["mi100-gfx908"],
    "negative_gfx1030_rocminfo_grep_rocminstaller6.txt": ["rx6900xt-gfx1030"],
    "pci_ids_vega20_table_and_rccl_warnings.txt": ["mi50-radeon-vii"],
    "gfx906_radeonvii_roc_obj_ls.txt": ["mi50-radeon-vii"],
}
NAMES_GPUS = re.compile(r"gfx\d{3,4}|\b1002:[0-9a-f]{4}\b|MI50|MI100|Radeon", re.I)


def test_every_gpu_capture_has_a_machine_that_cites_it():
    assert CAPTURES.is_dir(), CAPTURES
    for path in sorted(CAPTURES.iterdir()):
        text = path.read_text()
        if path.name == "error_strings.txt":
            continue  # messages only, no machine
        assert NAMES_GPUS.search(text), path.name
        assert path.name in CAPTURE_MACHINES, f"{path.name} names GPUs but has no fixture machine"
        for name in CAPTURE_MACHINES[path.name]:
            spec = MACHINES[name]()
            assert any(path.name in s for s in spec["sources"]), f"{name} does not cite {path.name}"


def _rocminfo_block(text: str) -> str:
    """The rocminfo lines of a capture (Name / Marketing Name lines)."""
    return "\n".join(line for line in text.splitlines() if re.match(r"^\s*(Name|Marketing Name):", line))


def _lspci_blocks(text: str) -> dict[str, str]:
    blocks, cur = {}, None
    for line in text.splitlines():
        m = re.match(r"^([0-9a-f]{2}:[0-9a-f]{2}\.\d) ", line)
        if m:
            cur = m.group(1)
            blocks[cur] = ""
        if cur:
            blocks[cur] += line + "\n"
    return blocks


# ---- ROCm#4793: two MI50 32GB, different root complexes, 16 GiB BARs, no P2P --------------

def test_rocm4793_dual_mi50(machine, tmp_path):
    text = capture("gfx906_mi50x2_lspci_vvv_nn_bandwidth_rocm4793.txt")
    root = machine("dual-mi50")
    hw = scan(Root(root), rocminfo_text=_rocminfo_block(text))
    blocks = _lspci_blocks(text)
    assert [g.bdf for g in hw.gpus] == [f"0000:{b}" for b in blocks]
    for g, (bdf, block) in zip(hw.gpus, blocks.items()):
        ids = re.search(r"\[(\w{4}):(\w{4})\] \(rev (\w\w)\)", block)
        assert (g.pci.pci_id, f"{g.pci.revision:02x}") == (f"{ids[1]}:{ids[2]}", ids[3])
        assert g.pci.subsystem_id == re.search(r"Subsystem: .*\[(\w{4}:\w{4})\]", block)[1]
        assert f"{g.pci.pci_class >> 8:04x}" == re.search(r"Display controller \[(\w{4})\]", block)[1]
        assert g.numa_node == int(re.search(r"NUMA node: (\d+)", block)[1])
        region0 = re.search(r"Region 0: Memory at (\w+) .*\[size=(\d+)G\]", block)
        bar0 = next(b for b in g.pci.bars if b.index == 0)
        assert (bar0.start, bar0.size) == (int(region0[1], 16), int(region0[2]) << 30)
        sta = re.search(r"LnkSta: Speed (\d+)GT/s \(ok\), Width x(\d+)", block)
        cap = re.search(r"LnkCap: .*Speed (\d+)GT/s, Width x(\d+)", block)
        assert (g.pci.link.speed, g.pci.link.width) == (float(sta[1]), int(sta[2]))
        assert (g.pci.link.max_speed, g.pci.link.max_width) == (float(cap[1]), int(cap[2]))
        assert g.large_bar is False                     # 16G BAR on a 32 GB card
    # rocminfo: the same number of gfx906 agents and the same full target
    isas = re.findall(r"amdgcn-amd-amdhsa--(gfx906:[^\s]+)", text)
    agents = [a for a in parse_rocminfo(_rocminfo_block(text)) if a.is_gpu]
    assert len(agents) == len(hw.gpus) == 2
    assert {str(g.target) for g in hw.gpus} == {i for i in isas if not i.startswith("gfx9-")}
    assert hw.rocminfo_problems == []
    # Uuid per BDF from rocm-bandwidth-test ("GPU-9318692173497dfc,  19:0.0")
    uuids = re.findall(r"GPU-([0-9a-f]+),\s+([0-9a-f]+):0\.0", text)
    assert len(uuids) == 2
    for uuid, bus in uuids:
        g = next(g for g in hw.gpus if g.bdf == f"0000:{int(bus, 16):02x}:00.0")
        assert f"{g.unique_id:x}" == uuid
    # "Inter-Device Access": 0 between devices 1 and 2 -> no P2P; on different root complexes
    access = re.search(r"Inter-Device Access\s+D/D.*?\n\s*1\s+(\d)\s+(\d)\s+(\d)", text, re.S)
    assert access[3] == "0"
    (pair,) = hw.pairs
    assert pair.p2p_possible is False and pair.relation == "NODE"
    assert hw.gpus[0].location.root_complex != hw.gpus[1].location.root_complex
    assert all("BAR" in b for b in pair.blockers)


def test_rocm4793_rocminfo_cross_check_catches_a_missing_card(machine):
    text = capture("gfx906_mi50x2_lspci_vvv_nn_bandwidth_rocm4793.txt")
    block = _rocminfo_block(text)
    one_gpu = block[: block.rindex("  Name:                    gfx906")]
    hw = scan(Root(machine("dual-mi50")), rocminfo_text=one_gpu)
    assert hw.rocminfo_problems == ["rocminfo lists 1 GPU agent(s), the KFD topology 2"]


# ---- mxllama7: two MI50 on AM5, P2P allowed with the mainline kernel ----------------------

def test_mxllama7_dual_mi50_am5(machine):
    text = capture("gfx906_mi50x2_rccl_tests_p2p_abort_mxllama7.txt")
    buses = re.findall(r"device\s+\d+ \[(\w{4}:\w\w:\w\w)\]", text)
    hw = scan(Root(machine("dual-mi50-am5")))
    assert [g.bdf for g in hw.gpus] == [f"{b}.0" for b in buses]
    assert all(str(g.target) == "gfx906:sramecc+:xnack-" for g in hw.gpus)
    assert "via P2P/direct pointer" in text
    (pair,) = hw.pairs
    assert pair.p2p_possible is True and pair.kfd_peer_link is True and pair.relation == "PHB"
    assert not any(g.location.switches for g in hw.gpus)            # "no bridge"
    assert all((g.pci.link.speed, g.pci.link.width) == (16.0, 16) for g in hw.gpus)   # Gen4 x16


def test_mxllama7_stock_debian_kernel_has_no_p2p(machine):
    text = capture("gfx906_mi50x2_rccl_tests_p2p_abort_mxllama7.txt")
    missing = re.search(r"lacks (CONFIG_\w+) / (CONFIG_\w+)", text).groups()
    hw = scan(Root(machine("dual-mi50-am5", stock_kernel=True)))
    (pair,) = hw.pairs
    assert pair.p2p_possible is False
    for opt in missing:
        assert any(opt in b for b in pair.blockers)


def test_gpu_behind_chipset_is_flagged(machine):
    s = survey(Root(machine("dual-mi50-am5", gpu1_behind_chipset=True)))
    g1 = s.hardware.gpus[1]
    assert g1.location.behind_chipset and g1.location.switches[0]["chipset"]
    ids = {f.id for f in diagnose(s, user="root")}
    assert {"p2p-risky", "link-narrow"} <= ids


# ---- mixa3607 + rocm3999: four MI50 32GB ----------------------------------------------------

def test_mixa3607_four_mi50(machine):
    text = capture("gfx906_mi50x4_env_summary_mixa3607.txt")
    rows = re.findall(r"\|\s+(\d)\s+\|\s+`(\w{4}:\w\w:\w\w\.\d)`\s+\|\s+`card(\d+)`\s+\|\s+(\d+) / (\d+)\s+\|", text)
    ids = re.search(r"PCI device: (\w{4}:\w{4}) revision (\w\w), subsystem (\w{4}:\w{4})", text)
    cus = int(re.search(r"gfx906, (\d+) CUs", text)[1])
    hw = scan(Root(machine("mi50x4-switch")))
    assert len(hw.gpus) == int(re.search(r"GPU count: (\d+)", text)[1]) == len(rows)
    for g, (index, bdf, card, _dri, render) in zip(hw.gpus, rows):
        assert (g.index, g.bdf, g.card, g.render_node) == (int(index), bdf, f"card{card}", f"/dev/dri/renderD{render}")
        assert (g.pci.pci_id, f"{g.pci.revision:02x}", g.pci.subsystem_id) == ids.groups()
        assert g.cu_count == cus and str(g.target) == "gfx906:sramecc+:xnack-"
        assert (g.model.name, g.model.certain) == ("AMD Instinct MI50 32GB", True)
    assert {p.relation for p in hw.pairs} == {"PIX"}   # behind one switch (the fixture's topology)


def test_rocm3999_rocminfo_four_agents(machine):
    text = capture("gfx906_mi50x4_rocminfo_grep_rocm3999.txt")
    hw = scan(Root(machine("mi50x4-switch")), rocminfo_text=text)
    agents = [a for a in hw.rocminfo if a.is_gpu]
    assert len(agents) == text.count("amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-") == len(hw.gpus)
    assert {a.marketing_name for a in agents} == {"AMD Instinct MI50/MI60"}
    assert hw.rocminfo_problems == []


# ---- rccl-tests#163: eight MI50, KFD node 4 = c8:00.0 ----------------------------------------

def test_rccltests163_eight_mi50(machine):
    text = capture("gfx906_mi50x8_rccl_init_log_rocm633_rccltests163.txt")
    s = survey(Root(machine("mi50x8")))
    hw = s.hardware
    assert len(hw.gpus) == int(re.search(r"(\d+)x MI50", text)[1])
    nodes = list(re.finditer(r"node_id = (\d+); gpu_id = (\d+)(?:; unique_id = (\d+); location_id = (\d+))?", text))
    assert len(nodes) == 2
    for m in nodes:
        g = next(g for g in hw.gpus if g.node == int(m[1]))
        assert g.gpu_id == int(m[2])
        if m[3]:
            assert g.unique_id == int(m[3]) and g.kfd_location == int(m[4])
    rank, bus = re.search(r"device\s+(\d+) \[(\w{4}:\w\w:\w\w)\]", text).groups()
    assert hw.gpus[int(rank)].bdf == f"{bus}.0"
    rocm = re.search(r"ROCm version : (\d+\.\d+\.\d+)\.\d+-(\d+)", text)
    libdir = re.search(r"Librccl path : (/opt/rocm-[\d.]+)/", text)[1]
    inst = next(i for i in s.installs if i.path == libdir)
    assert (inst.version, inst.build) == rocm.groups()


# ---- lota09: MI50 reporting 66a0, small BAR, 350 MHz memory clock, ROCm 7.14 -------------------

def test_lota09_mi50_66a0(machine, tmp_path):
    text = capture("gfx906_mi50_66a0_lspci_sysfs_vulkan_hip_lota09.txt")
    s = survey(Root(machine("mi50-66a0-lota09")))
    (g,) = s.hardware.gpus
    assert g.bdf == "0000:" + re.search(r"^(\w\w:\w\w\.\d) VGA compatible controller: Advanced Micro", text, re.M)[1]
    assert g.pci.pci_class >> 8 == 0x0300 and g.pci.device == 0x66A0
    assert g.vram_bytes == int(re.search(r"mem_info_vram_total\n(\d+)", text)[1])
    assert str(g.target) == re.search(r"Device 0: .*?, (gfx906:\S+) \(", text)[1]
    mclk = re.search(r"pp_dpm_mclk\n((?:\d: \d+Mhz.*\n)+)", text)[1]
    levels = [int(x) for x in re.findall(r"\d: (\d+)Mhz", mclk)]
    cur = int(re.search(r"(\d): \d+Mhz \*", mclk)[1])
    assert (g.mclk.levels_mhz, g.mclk.current) == (levels, cur)
    assert g.large_bar is False and not g.model.certain
    assert re.search(r"Skipping device: 0000:(\w\w:\w\w\.\d) Bar size", text)[1] == g.bdf[5:]
    # ROCm 7.14's rocBLAS: the same arches as the capture's listing, no gfx906
    listed = re.search(r"grep -oE 'gfx\[0-9a-z\]\+' \| sort -u \| tr '\\n' ' '\n([^\n]+(?:\n[^\n`]+)*)", text)[1].split()
    c714 = next(c for c in s.copies if c.path.startswith("/opt/rocm-7.14.0"))
    assert sorted(c714.targets) == sorted(listed) and "gfx906" not in c714.targets
    assert c714.missing_for_gpus == [0]
    # doctor: the small BAR, the stuck memory clock, the rocBLAS copy; Vulkan sees the card
    vk = tmp_path / "vk.txt"
    vk.write_text(text)
    found = {f.id: f for f in diagnose(s, user="root", vulkan_text=vk.read_text())}
    assert {"small-bar", "mclk-lowest", "rocblas-missing-gfx906", "vulkan-sees-gpu"} <= found.keys()
    assert "RADV VEGA20" in found["vulkan-sees-gpu"].message
    assert found["rocblas-missing-gfx906"].severity == "error"


def test_lota09_intel_only_host_has_no_amd_gpu(machine):
    text = capture("gfx906_mi50_66a0_lspci_sysfs_vulkan_hip_lota09.txt")
    hw = scan(Root(machine("no-amd-gpu")))
    assert hw.gpus == [] and not hw.kfd_present
    intel = re.search(r"^(\w\w:\w\w\.\d) VGA compatible controller: Intel", text, re.M)[1]
    assert (machine("no-amd-gpu") / f"sys/bus/pci/devices/0000:{intel}").exists()


# ---- NixOS: MI50 + W5700 (gfx1010) --------------------------------------------------------------

def test_mixed_mi50_w5700(machine):
    text = capture("mixed_gfx906_gfx1010_lspci_rocmsmi_nixos_notes.txt")
    hw = scan(Root(machine("mi50-w5700-mixed")))
    lspci = dict(re.findall(r"^(\w\w:\w\w\.\d) (Display controller|VGA compatible controller)", text, re.M))
    assert sorted(g.bdf for g in hw.gpus) == sorted(f"0000:{b}" for b in lspci)
    for g in hw.gpus:
        want = 0x0380 if lspci[g.bdf[5:]] == "Display controller" else 0x0300
        assert g.pci.pci_class >> 8 == want
    # rocm-smi concise rows: Device, Node, DID, GUID ... MCLK
    rows = re.findall(r"^(\d)\s+(\d)\s+(0x\w+),\s+(\d+)\s+.*?\s(\d+)Mhz\s+\S+\s+auto", text, re.M)
    assert len(rows) == len(hw.gpus) == 2
    for dev, node, did, guid, mclk in rows:
        g = next(g for g in hw.gpus if g.node == int(node))
        assert (g.pci.device, g.gpu_id) == (int(did, 16), int(guid))
        if g.mclk:
            assert g.mclk.current_mhz == int(mclk)
    procs = {g.pci.device: g.processor for g in hw.gpus}
    assert procs == {0x66A1: "gfx906", 0x7312: "gfx1010"}
    uid = re.search(r"GPU\[0\]\s+: Unique ID: 0x(\w+)", text)[1]
    assert f"{next(g for g in hw.gpus if g.processor == 'gfx906').unique_id:x}" == uid


# ---- negatives: gfx908 only, gfx1030 only ---------------------------------------------------------

def test_gfx908_properties_verbatim(machine):
    text = capture("negative_gfx908_mi100_kfd_properties_fixture.txt")
    props = text.split("/properties:\n", 1)[1]
    assert props.strip() == GFX908_PROPERTIES.strip()
    hw = scan(Root(machine("mi100-gfx908")))
    (g,) = hw.gpus
    kv = dict(line.split() for line in props.splitlines() if line.strip())
    loc = int(kv["location_id"])
    assert g.bdf == f"0000:{loc >> 8:02x}:{(loc >> 3) & 31:02x}.{loc & 7}"
    assert g.processor == "gfx908" and str(g.target) == "gfx908:sramecc+:xnack-"
    assert g.gpu_id == int(re.search(r"gpu_id:\n(\d+)", text)[1])
    assert g.kfd.name == re.search(r"/name:\n(\w+)", text)[1]
    assert g.render_node == f"/dev/dri/renderD{kv['drm_render_minor']}"
    assert hw.gfx906 == []


def test_gfx1030_rocminfo(machine):
    text = capture("negative_gfx1030_rocminfo_grep_rocminstaller6.txt")
    hw = scan(Root(machine("rx6900xt-gfx1030")), rocminfo_text=text)
    (g,) = hw.gpus
    assert str(g.target) == re.search(r"amdgcn-amd-amdhsa--(\S+)", text)[1] == "gfx1030"
    assert hw.rocminfo_problems == [] and hw.gfx906 == []


# ---- the PCI-id table and the Radeon VII ----------------------------------------------------------

def test_pci_id_fallback_table_matches_the_capture():
    text = capture("pci_ids_vega20_table_and_rccl_warnings.txt")
    table = re.findall(r"^\s+([0-9a-f|]+)\)\s+GPU_ARCH=(gfx\w+)", text, re.M)
    assert len(table) >= 6
    for ids, arch in table:
        for d in ids.split("|"):
            assert PROCESSOR_BY_PCI_ID[int(d, 16)] == arch


def test_radeon_vii_and_mi50(machine):
    text = capture("pci_ids_vega20_table_and_rccl_warnings.txt")
    rev = re.search(r"\[1002:66af\] \(rev (\w\w)\)", text)[1]
    hw = scan(Root(machine("mi50-radeon-vii")))
    vii = next(g for g in hw.gpus if g.pci.device == 0x66AF)
    assert f"{vii.pci.revision:02x}" == rev
    assert (vii.model.name, vii.model.certain) == ("AMD Radeon VII", True)
    assert str(vii.target) == "gfx906:sramecc-:xnack-"
    mi50 = next(g for g in hw.gpus if g.pci.device == 0x66A1)
    assert str(mi50.target) == "gfx906:sramecc+:xnack-"
    assert len(hw.gpus) == 2           # the HDMI audio function 1002:ab20 is not a GPU
    # roc-obj-ls on the Radeon VII lists a plain gfx906 code object: it loads on both cards
    entry = re.search(r"(hipv4-amdgcn-amd-amdhsa--gfx906)\s", capture("gfx906_radeonvii_roc_obj_ls.txt"))[1]
    code = TargetId.parse(entry)
    assert code.can_load_on(vii.target) and code.can_load_on(mi50.target)
    (pair,) = hw.pairs
    assert pair.p2p_possible is False and any("GPU1: BAR 256 MiB" in b for b in pair.blockers)
