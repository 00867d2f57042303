"""Hardware detection from sysfs: units (parsers, topology rules, names) and bad input.

Machines come from tests/machines (built from the captures); each damaged machine is a private
copy, and detection of the other devices must carry on.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from machines import fresh_machine, machine  # noqa: F401

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.hardware.gpus import device_target, scan
from rocmrevive.hardware.models import name_gpu
from rocmrevive.hardware.pci import parse_link_speed, parse_resource, split_device_path
from rocmrevive.hardware.power import parse_dpm
from rocmrevive.hardware.rocminfo import parse_rocminfo
from rocmrevive.hardware.sysfs import parse_key_values
from rocmrevive.hardware.topology import Bridge, PcieLocation, relation
from rocmrevive.hardware.vulkan import parse_vulkan_devices, radv_codename
from rocmrevive.rootfs import Root

NODES = "sys/devices/virtual/kfd/kfd/topology/nodes"


# ---- parsers ----------------------------------------------------------------------------

def test_key_values_keeps_good_lines_and_reports_bad_ones():
    kv, bad = parse_key_values("simd_count 240\ngfx_target_version 90006\nthis is junk\nlocation_id x\n")
    assert kv == {"simd_count": 240, "gfx_target_version": 90006}
    assert len(bad) == 2 and "line 3" in bad[0] and "line 4" in bad[1]


def test_resource_sizes_and_flags():
    text = ("0x000005f800000000 0x000005fbffffffff 0x000000000014220c\n"
            "0x0000000000000000 0x0000000000000000 0x0000000000000000\n"
            "0x00000000bf900000 0x00000000bf97ffff 0x0000000000040200\n")
    bars, problems = parse_resource(text)
    assert not problems
    assert [(b.index, b.size, b.prefetchable, b.is_64bit) for b in bars] == [
        (0, 16 << 30, True, True), (2, 512 << 10, False, False)]


def test_link_speed_strings():
    assert parse_link_speed("16.0 GT/s PCIe\n") == 16.0
    assert parse_link_speed("2.5 GT/s PCIe") == 2.5
    assert parse_link_speed("Unknown") is None


def test_device_path_split():
    host, comps = split_device_path("/sys/devices/pci0000:16/0000:16:00.0/0000:17:00.0/0000:19:00.0")
    assert host == "pci0000:16" and comps == ["0000:16:00.0", "0000:17:00.0", "0000:19:00.0"]
    assert split_device_path("/sys/devices/platform/x") == (None, [])


def test_dpm_levels_current_and_lowest():
    d = parse_dpm("0: 350Mhz *\n1: 800Mhz\n2: 1000Mhz\n")
    assert d.levels_mhz == [350, 800, 1000] and d.current == 0 and d.current_mhz == 350 and d.at_lowest
    assert not parse_dpm("0: 350Mhz\n1: 800Mhz\n2: 1000Mhz *\n").at_lowest
    assert parse_dpm("garbage") is None


def test_rocminfo_full_output_with_agent_headers():
    text = """
*******
Agent 1
*******
  Name:                    AMD EPYC 7642 48-Core Processor
  Device Type:             CPU
*******
Agent 2
*******
  Name:                    gfx906
  Uuid:                    GPU-9318692173497dfc
  Marketing Name:          AMD Radeon Graphics
  Node:                    1
  Device Type:             GPU
  BDFID:                   6400
  Compute Unit:            60
  ISA Info:
    ISA 1
      Name:                    amdgcn-amd-amdhsa--gfx906:sramecc+:xnack-
    ISA 2
      Name:                    amdgcn-amd-amdhsa--gfx9-generic:sramecc+:xnack-
"""
    agents = parse_rocminfo(text)
    assert [a.is_gpu for a in agents] == [False, True]
    gpu = agents[1]
    assert (gpu.node, gpu.bdfid, gpu.compute_units, gpu.uuid) == (1, 6400, 60, "GPU-9318692173497dfc")
    assert str(gpu.target) == "gfx906:sramecc+:xnack-"   # the generic ISA is skipped


def test_vulkan_device_lines():
    names = parse_vulkan_devices("GPU id : 0 (AMD Radeon Graphics (RADV VEGA20)):\n"
                                 "\tdeviceName        = AMD Radeon Graphics (RADV VEGA20)\n")
    assert names == ["AMD Radeon Graphics (RADV VEGA20)"]
    assert radv_codename(names[0]) == "vega20"


# ---- names ------------------------------------------------------------------------------

@pytest.mark.parametrize("args,name,certain", [
    (("gfx906", 0x66A1, 0x02, 60, 34342961152, 0x038000), "AMD Instinct MI50 32GB", True),
    (("gfx906", 0x66A1, 0x02, 64, 34342961152, 0x038000), "AMD Instinct MI60", True),
    (("gfx906", 0x66A1, 0x02, 60, 17163091968, 0x038000), "AMD Instinct MI50 16GB", True),
    (("gfx906", 0x66AF, 0xC1, 60, 17163091968, 0x030000), "AMD Radeon VII", True),
    (("gfx906", 0x66A1, 0x06, 60, 17163091968, 0x030000), "AMD Radeon Pro VII", True),
    # reflashed (ROCm#4793: rev 01 with a Pro VII subsystem; lota09: 66a0): a guess, said so
    (("gfx906", 0x66A1, 0x01, 60, 34342961152, 0x038000), "AMD Instinct MI50 32GB", False),
    (("gfx906", 0x66A0, 0x00, None, 34342961152, 0x030000), "AMD Instinct MI50 32GB", False),
    (("gfx906", 0x66A7, 0x00, 60, 8 << 30, 0x030000), "unknown gfx906 variant", False),
])
def test_vega20_names(args, name, certain):
    m = name_gpu(*args)
    assert (m.name, m.certain) == (name, certain)
    assert m.reason


def test_kfd_target_wins_over_pci_id():
    # a gfx908 KFD node is never called a Vega 20 card, whatever the PCI id says
    assert "MI50" not in name_gpu("gfx908", 0x66A1, 0x02, 120, 32 << 30, 0x038000).name


def test_device_target_features():
    assert str(device_target("gfx906", True, False)) == "gfx906:sramecc+:xnack-"
    assert str(device_target("gfx906", False, False)) == "gfx906:sramecc-:xnack-"
    assert str(device_target("gfx1030", None, False)) == "gfx1030"
    assert str(device_target("gfx1010", False, True)) == "gfx1010:xnack+"


# ---- topology rules -----------------------------------------------------------------------

def _loc(rc, *bridges):
    roles = ["root-port"] + ["upstream" if i % 2 else "downstream" for i in range(1, len(bridges))]
    return PcieLocation(rc, None, [Bridge(b, "x", r) for b, r in zip(bridges, roles)])


def test_relations():
    sw_a = _loc("0000:00", "rp", "up", "dA")
    sw_b = _loc("0000:00", "rp", "up", "dB")
    assert relation(sw_a, sw_b, 0, 0) == ("PIX", "up")
    nested_a = _loc("0000:00", "rp", "up", "d1", "up2a", "d2a")
    nested_b = _loc("0000:00", "rp", "up", "d2", "up2b", "d2b")
    assert relation(nested_a, nested_b, 0, 0) == ("PXB", "up")
    assert relation(_loc("0000:00", "rp1"), _loc("0000:00", "rp2"), 0, 0) == ("PHB", None)
    assert relation(_loc("0000:16", "a"), _loc("0000:64", "b"), 0, 0) == ("NODE", None)
    assert relation(_loc("0000:00", "a"), _loc("0000:80", "b"), 0, 1) == ("SYS", None)


def test_card_bridges_are_not_switches(machine):
    """The Vega 20 bridge pair 1022:1470/1471 sits above every MI50: it is not a switch."""
    hw = scan(Root(machine("dual-mi50")))
    for g in hw.gpus:
        assert [b.role for b in g.location.bridges] == ["root-port", "card-internal", "card-internal"]
        assert g.location.switches == []
    hw4 = scan(Root(machine("mi50x4-switch")))
    assert all(len(g.location.switches) == 1 for g in hw4.gpus)
    assert {p.relation for p in hw4.pairs} == {"PIX"}


def test_topology_follows_the_resolved_link(machine):
    """sys/bus/pci/devices/<bdf> is a relative link; the PCIe path comes from where it leads."""
    root = machine("dual-mi50")
    link = root / "sys/bus/pci/devices/0000:19:00.0"
    assert link.is_symlink() and not os.readlink(link).startswith("/")
    g = scan(Root(root)).gpus[0]
    assert g.pci.path == "/sys/devices/pci0000:16/0000:16:00.0/0000:17:00.0/0000:18:00.0/0000:19:00.0"


# ---- bad input: reported per device, never a crash -----------------------------------------

def test_garbage_properties_in_one_node(fresh_machine):
    root = fresh_machine("dual-mi50")
    (root / NODES / "1/properties").write_bytes(b"\x00\xff garbage \x89PNG\r\n")
    hw = scan(Root(root))
    good = [g for g in hw.gpus if g.node == 2]
    assert len(good) == 1 and str(good[0].target) == "gfx906:sramecc+:xnack-"
    assert any("KFD node 1" in p and "not text" in p for p in hw.problems)
    # the card itself is still on the PCI bus: reported with its problem, target from the PCI id
    orphan = [g for g in hw.gpus if g.bdf == "0000:19:00.0"]
    assert orphan[0].node is None and orphan[0].target_source == "pci-id"
    assert any("KFD does not list" in p for p in orphan[0].problems)


def test_partly_garbled_properties(fresh_machine):
    root = fresh_machine("dual-mi50")
    p = root / NODES / "2/properties"
    p.write_text(p.read_text().replace("max_waves_per_simd 10", "max_waves_per_simd ten\n%%%%"))
    g = next(g for g in scan(Root(root)).gpus if g.node == 2)
    assert str(g.target) == "gfx906:sramecc+:xnack-" and g.bdf == "0000:67:00.0"
    assert any("not 'key integer'" in x for x in g.problems)


@pytest.mark.parametrize("damage", ["directory", "missing", "dangling-link", "empty"])
def test_unreadable_node(fresh_machine, damage):
    root = fresh_machine("mi50x4-switch")
    p = root / NODES / "3/properties"
    p.unlink()
    if damage == "directory":
        p.mkdir()
    elif damage == "dangling-link":
        os.symlink("nowhere", p)
    elif damage == "empty":
        p.write_text("")
    hw = scan(Root(root))
    assert sorted(g.node for g in hw.gpus if g.node) == [1, 2, 4]
    assert any("KFD node 3" in x for x in hw.problems)
    assert len(hw.gpus) == 4   # the fourth card is still reported, from PCI


def test_bad_pci_files(fresh_machine):
    root = fresh_machine("dual-mi50")
    dev = Root(root).resolve("/sys/bus/pci/devices/0000:67:00.0")
    (dev / "resource").write_text("not a resource table\n")
    (dev / "current_link_speed").write_text("fast\n")
    (dev / "mem_info_vram_total").unlink()
    (dev / "mem_info_vis_vram_total").unlink()
    os.symlink("../../../devices/nowhere", root / "sys/bus/pci/devices/0000:99:00.0")
    os.symlink("0000:98:00.0", root / "sys/bus/pci/devices/0000:98:00.0")  # a loop
    hw = scan(Root(root))
    g1 = next(g for g in hw.gpus if g.bdf == "0000:67:00.0")
    assert g1.bar_bytes is None and g1.large_bar is None and g1.pci.link.speed is None
    assert g1.vram_bytes == 34342961152      # from the KFD memory bank instead
    assert any("resource line 0" in x for x in g1.problems)
    assert next(g for g in hw.gpus if g.bdf == "0000:19:00.0").large_bar is False


def test_no_kfd_at_all_still_lists_cards(machine):
    hw = scan(Root(machine("mi50-radeon-vii", no_kfd=True)))
    assert not hw.kfd_present
    assert [(g.bdf, g.processor, g.target_source) for g in hw.gpus] == [
        ("0000:03:00.0", "gfx906", "pci-id"), ("0000:0c:00.0", "gfx906", "pci-id")]
    assert all("KFD topology is absent" in g.problems[0] for g in hw.gpus)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=400), binary=st.binary(max_size=200))
def test_any_properties_content_never_crashes(machine, text, binary):
    root = machine("dual-mi50")
    p = root / NODES / "2/properties"
    keep = p.read_bytes()
    try:
        for content in (text.encode("utf-8", "surrogatepass"), binary):
            p.write_bytes(content)
            hw = scan(Root(root))
            assert any(g.node == 1 for g in hw.gpus)
    finally:
        p.write_bytes(keep)


@settings(max_examples=80, deadline=None)
@given(st.text(max_size=600))
def test_text_parsers_never_raise(text):
    parse_rocminfo(text)
    parse_dpm(text)
    parse_vulkan_devices(text)
    parse_key_values(text)
    parse_resource(text)


def test_target_rule_against_targetid():
    # a gfx906 code object with features "any" loads on both MI50 and Radeon VII
    any906 = TargetId.parse("gfx906")
    assert any906.can_load_on(device_target("gfx906", True, False))
    assert any906.can_load_on(device_target("gfx906", False, False))
    assert not TargetId.parse("gfx906:sramecc+").can_load_on(device_target("gfx906", False, False))


def test_unknown_gfx_target_version_is_a_problem_not_a_crash(fresh_machine):
    """rocm-bootstrap raises on gfx_target_version 90099 (ECOSYSTEM §6); here it is a device problem."""
    root = fresh_machine("dual-mi50")
    p = root / NODES / "2/properties"
    p.write_text(p.read_text().replace("gfx_target_version 90006", "gfx_target_version 90099"))
    hw = scan(Root(root))
    g = next(g for g in hw.gpus if g.node == 2)
    assert g.target is None and g.processor is None and g.target_source == "unknown"
    assert any("90099" in x for x in g.problems)
    assert g.bdf == "0000:67:00.0" and g.pci is not None      # PCI facts are still there
    assert [str(x.target) for x in hw.gfx906] == ["gfx906:sramecc+:xnack-"]


def test_kfd_node_without_its_pci_device(fresh_machine):
    root = fresh_machine("dual-mi50")
    os.unlink(root / "sys/bus/pci/devices/0000:67:00.0")
    hw = scan(Root(root))
    g = next(g for g in hw.gpus if g.node == 2)
    assert str(g.target) == "gfx906:sramecc+:xnack-" and g.pci is None
    assert "no PCI device 0000:67:00.0 for KFD node 2" in g.problems
    assert g.vram_bytes == 34342961152 and hw.pairs[0].relation == "NODE"
