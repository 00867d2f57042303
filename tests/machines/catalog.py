"""Machines built from the captures in ``tests/captures/`` (named below by file name).

Each function returns a description for ``build.build_machine``. Values a capture shows are
used as shown; everything else is marked ``inferred`` (derived from a capture or a cited fact)
or ``scenario`` (chosen so a check has something to find). The most common inferences:

* Vega 20 boards carry the bridge pair 1022:1470/1471 on the two buses above the GPU, so a GPU
  at bus N has them at N-2 and N-1 and the root port (or switch port) above that;
* KFD node 0 is the CPU, GPU nodes follow in PCI order unless a capture says otherwise;
* KFD property keys not interpreted by rocmrevive keep the values of the gfx908 capture;
* the render node of the first amdgpu card is renderD128.
"""
from __future__ import annotations

GIB = 1 << 30
MIB = 1 << 20

C_MI50X2 = "gfx906_mi50x2_lspci_vvv_nn_bandwidth_rocm4793.txt"
C_RCCL_ABORT = "gfx906_mi50x2_rccl_tests_p2p_abort_mxllama7.txt"
C_MI50X4_ENV = "gfx906_mi50x4_env_summary_mixa3607.txt"
C_MI50X4_ROCMINFO = "gfx906_mi50x4_rocminfo_grep_rocm3999.txt"
C_MI50X8 = "gfx906_mi50x8_rccl_init_log_rocm633_rccltests163.txt"
C_LOTA = "gfx906_mi50_66a0_lspci_sysfs_vulkan_hip_lota09.txt"
C_MIXED = "mixed_gfx906_gfx1010_lspci_rocmsmi_nixos_notes.txt"
C_GFX908 = "negative_gfx908_mi100_kfd_properties_fixture.txt"
C_GFX1030 = "negative_gfx1030_rocminfo_grep_rocminstaller6.txt"
C_IDS = "pci_ids_vega20_table_and_rccl_warnings.txt"
C_RVII = "gfx906_radeonvii_roc_obj_ls.txt"

# captures/negative_gfx908_mi100_kfd_properties_fixture.txt, node 0 properties, verbatim
GFX908_PROPERTIES = """\
cpu_cores_count 0
simd_count 480
mem_banks_count 1
caches_count 217
io_links_count 1
p2p_links_count 3
cpu_core_id_base 0
simd_id_base 2147487744
max_waves_per_simd 10
lds_size_in_kb 64
gds_size_in_kb 0
num_gws 64
wave_front_size 64
array_count 8
simd_arrays_per_engine 1
cu_per_simd_array 16
simd_per_cu 4
max_slots_scratch_cu 32
gfx_target_version 90008
vendor_id 4098
device_id 29580
location_id 8960
domain 0
drm_render_minor 128
hive_id 0
num_sdma_engines 2
num_sdma_xgmi_engines 6
num_sdma_queues_per_engine 8
num_cp_queues 24
max_engine_clk_fcompute 1502
local_mem_size 0
fw_version 65
capability 749970048
debug_prop 1494
sdma_fw_version 18
unique_id 7809984429061111111
num_xcc 1
max_engine_clk_ccompute 2000
"""
CAP_SRAMECC = 0x04000000          # kfd_sysfs.h HSA_CAP_SRAM_EDCSUPPORTED
CAP_MEM_EDC = 0x00100000          # HSA_CAP_MEM_EDCSUPPORTED
GFX908_CAPABILITY = 749970048     # has SRAM ECC (bit 26): MI-class RAS on

# gfx906 node template: keys and uninterpreted values from the gfx908 capture; Vega 20 facts:
# 60 CUs = simd_count 240 / simd_per_cu 4 (ECOSYSTEM §4.1), 4 shader arrays x 16 CUs.
IDENTITY_KEYS = ("gfx_target_version", "vendor_id", "device_id", "location_id", "domain",
                 "drm_render_minor", "unique_id", "p2p_links_count")
GFX906_KFD = {k: int(v) for k, v in (line.split() for line in GFX908_PROPERTIES.splitlines())
              if k not in IDENTITY_KEYS}
GFX906_KFD.update({"simd_count": 240, "array_count": 4, "cu_per_simd_array": 16, "num_sdma_xgmi_engines": 0,
                   "max_engine_clk_fcompute": 1800, "capability": GFX908_CAPABILITY})
# MI50 32GB: mem_info_vram_total 34342961152 (lota09 capture, card2); 16 GB cards: 16 GiB less the same 16 MiB
VRAM_32 = 34342961152
VRAM_16 = 16 * GIB - (32 * GIB - VRAM_32)
# HBM2 memory clock levels of an MI50 (lota09 capture, pp_dpm_mclk)
MCLK_LOW = "0: 350Mhz *\n1: 800Mhz\n2: 1000Mhz\n"
MCLK_HIGH = "0: 350Mhz\n1: 800Mhz\n2: 1000Mhz *\n"

VEGA_BRIDGES = ((0x1022, 0x1470), (0x1022, 0x1471))
NAVI_BRIDGES = ((0x1002, 0x1478), (0x1002, 0x1479))

# rocBLAS 4.4.1 of ROCm 6.4.x has no gfx906 files (ROCm#4625, ECOSYSTEM §3.2); the arch list is a
# stand-in (scenario) until real Tensile files are added.
ROCBLAS_64_TARGETS = ["gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102", "gfx1200", "gfx1201"]
# captures/gfx906_mi50_66a0_lspci_sysfs_vulkan_hip_lota09.txt: arches in ROCm 7.14's rocBLAS folder
ROCBLAS_714_TARGETS = ("gfx1010 gfx1011 gfx1012 gfx1030 gfx1031 gfx1032 gfx1033 gfx1034 gfx1035 gfx1036 "
                       "gfx1100 gfx1101 gfx1102 gfx1103 gfx1150 gfx1151 gfx1152 gfx1153 gfx1200 gfx1201 "
                       "gfx1250 gfx908 gfx90a gfx942 gfx950").split()
# FORMATS §5.1: Debian librocblas4 6.4.4-4 per-target files (gfx906 included)
DEBIAN_441_TARGETS = "gfx803 gfx900 gfx906 gfx908 gfx90a gfx1010 gfx1030 gfx1100 gfx1101 gfx1102".split()
# scenario: ROCm 6.3's rocBLAS still ships gfx906 (ECOSYSTEM §3.2) and so do wheels built on it
ROCBLAS_63_TARGETS = ["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100", "gfx1101", "gfx1102"]


def _bdf(bus: int, dev: int = 0, fn: int = 0, dom: int = 0) -> str:
    return f"{dom:04x}:{bus:02x}:{dev:02x}.{fn}"


def _link(speed=16.0, width=16, max_speed=16.0, max_width=16) -> dict:
    return {"speed": speed, "width": width, "max_speed": max_speed, "max_width": max_width}


def _vega_chain(gpu_bus: int, above: list[dict], link: dict, dom: int = 0, pair=VEGA_BRIDGES) -> list[dict]:
    """``above`` (root port, switch ports) then the card's own bridge pair on buses N-2, N-1."""
    return above + [{"bdf": _bdf(gpu_bus - 2, dom=dom), "id": pair[0], "link": link},
                    {"bdf": _bdf(gpu_bus - 1, dom=dom), "id": pair[1], "link": link}]


def _mi50(bdf: str, node: int, *, chain: list[dict], host_bridge: str, revision=0x02,
          subsystem=(0x1002, 0x0834), bar0=32 * GIB, bar0_at=0x3800000000, vram=VRAM_32, render=128,
          card=None, link=None, **extra) -> dict:
    link = link or _link()
    return {
        "bdf": bdf, "node": node, "host_bridge": host_bridge, "chain": chain,
        "pci": {"device": 0x66A1, "revision": revision, "subsystem": subsystem, "class": 0x038000},
        "gfx_target_version": 90006, "kfd_name": "vega20", "kfd": {**GFX906_KFD},
        "vram": vram, "mem_clk_max": 1000,
        "bars": [(0, bar0_at, bar0, "mem64pref"), (2, bar0_at + bar0, 2 * MIB, "mem64pref"),
                 (5, 0xB0000000 + (render - 128) * 0x100000, 512 * 1024, "mem32"),
                 (6, 0xB0080000 + (render - 128) * 0x100000, 128 * 1024, "rom")],
        "link": link, "render_minor": render, "card": card if card is not None else render - 127,
        **extra,
    }


# ---- the machines ------------------------------------------------------------------------

def dual_mi50(**_) -> dict:
    """The demo: two MI50 32GB on different root complexes, BAR 16 GiB, ROCm 6.4.3 without gfx906."""
    rp0, rp1 = _bdf(0x16), _bdf(0x64)
    root_port = lambda bdf: {"bdf": bdf, "id": (0x8086, 0x2030), "link": _link()}  # noqa: E731
    gpus = [
        # 19:00.0 and 67:00.0: ids, class, BARs, link 16GT/s x16, NUMA node 0 from the lspci -vvv -nn dump
        _mi50(_bdf(0x19), 1, host_bridge="pci0000:16", chain=_vega_chain(0x19, [root_port(rp0)], _link()),
              revision=0x01, bar0=16 * GIB, bar0_at=0x5F800000000, numa_node=0, render=128, card=1,
              unique_id=0x9318692173497DFC, iommu_group=30),
        _mi50(_bdf(0x67), 2, host_bridge="pci0000:64", chain=_vega_chain(0x67, [root_port(rp1)], _link()),
              revision=0x01, bar0=16 * GIB, bar0_at=0x6F800000000, numa_node=0, render=129, card=2,
              unique_id=0x6A96212172F0FCB5, iommu_group=60),
    ]
    gpus[0]["bars"][2:] = [(5, 0xBF900000, 512 * 1024, "mem32"), (6, 0xBF980000, 128 * 1024, "rom")]
    gpus[1]["bars"][2:] = [(5, 0xE0D00000, 512 * 1024, "mem32"), (6, 0xE0D80000, 128 * 1024, "rom")]
    for g in gpus:
        g["p2p_peers"] = []  # rocm-bandwidth-test: no inter-device access between the GPUs
    return {
        "name": "dual-mi50",
        "description": """
Two AMD Instinct MI50 32GB (1002:66a1 rev 01, subsystem 1002:0834 "Radeon Pro VII": reflashed)
at 0000:19:00.0 and 0000:67:00.0 on an Intel Xeon W-2135 (X11SRA-F). Each card sits on its own
root complex (PCIe stacks pci0000:16 and pci0000:64), each exposes a 16 GiB BAR0 for 32 GB of
VRAM, so the kernel refuses peer-to-peer (rocm-bandwidth-test: no inter-device access). ROCm
6.4.3 in /opt with rocBLAS 4.4.1, which has no gfx906 Tensile files (placeholder files).
""",
        "sources": [
            f"{C_MI50X2}: CPU, BDFs, PCI ids/subsystem/revision/class, BAR0/2/5/ROM addresses and sizes, "
            "LnkCap/LnkSta 16GT/s x16, NUMA node 0, rocminfo targets gfx906:sramecc+:xnack-, "
            "GPU Uuids (unique_id) from rocm-bandwidth-test, no P2P access",
            f"{C_LOTA}: mem_info_vram_total 34342961152 of an MI50 32GB",
            "inferred: root buses 0x16/0x64 and root ports 8086:2030 (Skylake-W stacks; GPU bus minus "
            "the Vega bridge pair), Vega bridge pair 1022:1470/1471, render nodes, IOMMU groups",
            f"scenario: IOMMU translated without iommu=pt (the RCCL warning in {C_IDS}); ROCm 6.4.3 "
            "build 128 and rocBLAS 4.4.1 (ECOSYSTEM §3.2), user alice in render and video",
        ],
        "cpu": {"vendor_id": "GenuineIntel", "family": 6, "model_name": "Intel(R) Xeon(R) W-2135 CPU @ 3.70GHz"},
        "kernel": {"cmdline": "BOOT_IMAGE=/boot/vmlinuz root=/dev/mapper/vg-root ro quiet splash"},
        "iommu": {"units": ["dmar0", "dmar1", "dmar2"], "type": "DMA"},
        "numa_node": 0,
        "gpus": gpus,
        "users": {"alice": ["render", "video"]},
        "rocm": [{"version": "6.4.3-128",
                  "rocblas": {"version": "4.4.1", "soname": "librocblas.so.4.4.60403", "targets": ROCBLAS_64_TARGETS}}],
        "rocm_link": "rocm-6.4.3",
    }


def dual_mi50_am5(*, stock_kernel: bool = False, gpu1_behind_chipset: bool = False, **_) -> dict:
    """Two MI50 32GB on a Ryzen 5 9600X / B650E: P2P set up at init, all-reduce aborts."""
    def rp(dev, fn):
        return {"bdf": _bdf(0, dev, fn), "id": (0x1022, 0x14BA), "link": _link()}
    chain1 = [rp(1, 2)]
    link1 = _link()
    if gpu1_behind_chipset:  # scenario from issue 3's account: chipset uplink x4
        chain1 = [{"bdf": _bdf(0, 2, 1), "id": (0x1022, 0x14BA), "link": _link(16.0, 4, 16.0, 4)},
                  {"bdf": _bdf(0x05), "id": (0x1022, 0x43F4), "link": _link(16.0, 4, 16.0, 4)},
                  {"bdf": _bdf(0x06, 0x0C), "id": (0x1022, 0x43F5), "link": _link(16.0, 4, 16.0, 4)}]
        link1 = _link(16.0, 4, 16.0, 16)
    release = "6.12.94+deb13-amd64" if stock_kernel else "6.12.98-061298-generic"
    config = ({"CONFIG_HSA_AMD": "y", "CONFIG_PCI_P2PDMA": "n", "CONFIG_DMABUF_MOVE_NOTIFY": "n"} if stock_kernel
              else {"CONFIG_HSA_AMD": "y", "CONFIG_HSA_AMD_P2P": "y", "CONFIG_PCI_P2PDMA": "y",
                    "CONFIG_DMABUF_MOVE_NOTIFY": "y"})
    gpus = [
        _mi50(_bdf(0x03), 1, host_bridge="pci0000:00", chain=_vega_chain(0x03, [rp(1, 1)], _link()),
              numa_node=0, render=128, card=0, p2p_peers=[] if stock_kernel else [2]),
        _mi50(_bdf(0x09), 2, host_bridge="pci0000:00", chain=_vega_chain(0x09, chain1, link1),
              bar0_at=0x4000000000, numa_node=0, render=129, card=1, link=link1,
              p2p_peers=[] if stock_kernel else [1]),
    ]
    return {
        "name": "dual-mi50-am5",
        "description": """
Two AMD MI50 32GB (gfx906) at 0000:03:00.0 and 0000:09:00.0 on a Ryzen 5 9600X (B650E), both
PCIe Gen4 x16 on CPU root ports of one root complex, no switch. With the Ubuntu mainline 6.12.98
kernel (CONFIG_PCI_P2PDMA, CONFIG_HSA_AMD_P2P) RCCL sets up P2P/direct pointer and the first
AllReduce aborts; Debian's stock 6.12.94 lacks both options (stock_kernel=True).
""",
        "sources": [
            f"{C_RCCL_ABORT}: BDFs 0000:03:00 and 0000:09:00, CPU, board, Gen4 x16 no bridge, kernels and "
            "their P2P options, RCCL P2P/direct pointer channels (the kernel allowed peer access)",
            "inferred: AMD host bridge pci0000:00 with GPP root ports 00:01.1/00:01.2 (1022:14ba stands in "
            "for the Zen 5 ids), Vega bridge pair, 32 GiB BARs (P2P worked), render nodes",
            "scenario (gpu1_behind_chipset=True): GPU1 behind a 600-series chipset switch (1022:43f4/43f5), x4",
        ],
        "cpu": {"vendor_id": "AuthenticAMD", "family": 26, "model_name": "AMD Ryzen 5 9600X 6-Core Processor"},
        "kernel": {"release": release, "cmdline": f"BOOT_IMAGE=/boot/vmlinuz-{release} root=/dev/nvme0n1p2 ro quiet",
                   "config": config},
        "numa_node": 0,
        "gpus": gpus,
    }


def mi50x4_switch(**_) -> dict:
    """Four MI50 32GB behind one PCIe switch (PIX between every pair)."""
    up = {"bdf": _bdf(0x2E), "id": (0x1000, 0xC010), "link": _link()}
    rp = {"bdf": _bdf(0x20, 3, 1), "id": (0x1022, 0x1483), "link": _link()}
    gpus = []
    for i, (bus, down) in enumerate(((0x33, 0x08), (0x36, 0x09), (0x4D, 0x10), (0x50, 0x11))):
        chain = _vega_chain(bus, [rp, up, {"bdf": _bdf(0x2F, down), "id": (0x1000, 0xC010), "link": _link()}], _link())
        gpus.append(_mi50(_bdf(bus), i + 1, host_bridge="pci0000:20", chain=chain, numa_node=0,
                          bar0_at=0x38000000000 + i * 0x1000000000, render=131 + i, card=4 + i,
                          p2p_peers=[n for n in range(1, 5) if n != i + 1]))
    return {
        "name": "mi50x4-switch",
        "description": """
Four AMD Instinct MI50 32GB (1002:66a1 rev 02, subsystem 1002:0834, 60 CUs) at 0000:33:00.0,
0000:36:00.0, 0000:4d:00.0, 0000:50:00.0 (DRM card4-card7, renderD131-134) behind one PCIe Gen4
switch on an AMD EPYC 7642; ROCm 7.14.0, whose rocBLAS has no gfx906 files.
""",
        "sources": [
            f"{C_MI50X4_ENV}: GPU count, PCI ids/revision/subsystem, 60 CUs, 32GB, BDF -> DRM card and "
            "debugfs DRI (render minor) mapping, kernel 6.8.0-137-generic, ROCm 7.14.0",
            f"{C_MI50X4_ROCMINFO}: 4 x gfx906:sramecc+:xnack-, CPU AMD EPYC 7642 (another 4 x MI50 32GB host)",
            f"{C_LOTA}: the arch list of ROCm 7.14's rocBLAS folder (no gfx906)",
            "inferred: one switch (Broadcom PEX880xx 1000:c010, ports 2f:08/09/10/11) below root port "
            "20:03.1 (1022:1483); the capture does not show the tree. 32 GiB BARs and the KFD peer "
            "links that a switch with large BARs gives",
        ],
        "cpu": {"vendor_id": "AuthenticAMD", "family": 23, "model_name": "AMD EPYC 7642 48-Core Processor"},
        "kernel": {"release": "6.8.0-137-generic"},
        "numa_node": 0,
        "gpus": gpus,
        "rocm": [{"version": "7.14.0",
                  "rocblas": {"soname": "librocblas.so.5", "header": False,
                              "targets": ROCBLAS_714_TARGETS}}],
        "rocm_link": "rocm-7.14.0",
    }


# (bus, KFD node) of the eight MI50s: node 4 = 0000:c8:00.0 (location_id 51200) per the RCCL log;
# the other buses are inferred, two per EPYC quadrant (root complexes 00/40/80/c0).
MI50X8_LAYOUT = ((0x83, 1), (0x88, 2), (0xC3, 3), (0xC8, 4), (0x03, 5), (0x08, 6), (0x43, 7), (0x48, 8))


def mi50x8(**_) -> dict:
    """Eight MI50 on an EPYC 7402P, two per root complex (the bench machine)."""
    gpus = []
    for i, (bus, node) in enumerate(sorted(MI50X8_LAYOUT, key=lambda x: x[1])):
        quad = bus & 0xC0
        port = 1 if bus & 0x0F == 3 else 3
        rp = {"bdf": _bdf(quad, port, 1), "id": (0x1022, 0x1483), "link": _link()}
        extra = {}
        if node == 4:
            extra = {"gpu_id": 9962, "unique_id": 156633409065108215}
        elif node == 2:
            extra = {"gpu_id": 34443}
        gpus.append(_mi50(_bdf(bus), node, host_bridge=f"pci0000:{quad:02x}",
                          chain=_vega_chain(bus, [rp], _link()), numa_node=0,
                          bar0_at=0x30000000000 + i * 0x1000000000, render=128 + i, card=i + 1, **extra))
    return {
        "name": "mi50x8",
        "description": """
Eight AMD MI50 (gfx906) on an AMD EPYC 7402P, Ubuntu 22.04 kernel 5.15.0-163, ROCm 6.3.3 (whose
rocBLAS 4.3.0 still ships gfx906). KFD node 4 is 0000:c8:00.0 (gpu_id 9962).
""",
        "sources": [
            f"{C_MI50X8}: 8 x MI50, CPU, kernel, ROCm 6.3.3.0-74 at /opt/rocm-6.3.3, KFD node 4 = "
            "location_id 51200 (0000:c8:00.0) gpu_id 9962 unique_id 156633409065108215, node 2 gpu_id 34443",
            "inferred: the other seven BDFs (two GPUs per EPYC root complex 00/40/80/c0 on root ports "
            "x:01.1/x:03.1), node order, 32 GB VRAM and BARs; rocBLAS 4.3.0 for ROCm 6.3.3 (ECOSYSTEM §3.2)",
        ],
        "cpu": {"vendor_id": "AuthenticAMD", "family": 23, "model_name": "AMD EPYC 7402P 24-Core Processor"},
        "kernel": {"release": "5.15.0-163-generic"},
        "numa_node": 0,
        "gpus": gpus,
        "rocm": [{"version": "6.3.3-74",
                  "rocblas": {"version": "4.3.0", "soname": "librocblas.so.4.3.60303", "targets": ROCBLAS_63_TARGETS}}],
        "rocm_link": "rocm-6.3.3",
    }


def mi50_radeon_vii(**_) -> dict:
    """An MI50 32GB and a Radeon VII in one box (sramecc+ and sramecc-)."""
    mi50 = _mi50(_bdf(0x03), 1, host_bridge="pci0000:00",
                 chain=_vega_chain(0x03, [{"bdf": _bdf(0, 1, 1), "id": (0x1022, 0x1483), "link": _link()}], _link()),
                 numa_node=0, render=128, card=0)
    vii = _mi50(_bdf(0x0C), 2, host_bridge="pci0000:00",
                chain=_vega_chain(0x0C, [{"bdf": _bdf(0, 3, 1), "id": (0x1022, 0x1483), "link": _link()}], _link()),
                revision=0xC1, subsystem=(0x1002, 0x081E), bar0=256 * MIB, bar0_at=0xD0000000, vram=VRAM_16,
                numa_node=0, render=129, card=1)
    vii["pci"].update({"device": 0x66AF, "class": 0x030000})
    vii["kfd"]["capability"] = GFX908_CAPABILITY & ~(CAP_SRAMECC | CAP_MEM_EDC)   # consumer card: no RAS
    audio = {"bdf": _bdf(0x0C, 0, 1), "id": (0x1002, 0xAB20), "class": 0x040300, "host_bridge": "pci0000:00",
             "chain": vii["chain"], "driver": "snd_hda_intel", "numa_node": 0}
    return {
        "name": "mi50-radeon-vii",
        "description": """
An AMD Instinct MI50 32GB (gfx906:sramecc+:xnack-) at 0000:03:00.0 and a Radeon VII (1002:66af rev
c1, gfx906:sramecc-:xnack-, 16 GB, 256 MiB BAR, HDMI audio function 1002:ab20) at 0000:0c:00.0.
""",
        "sources": [
            f"{C_IDS}: Radeon VII 1002:66af rev c1 and its audio function 1002:ab20",
            f"{C_RVII}: a gfx906 code object built and run on a Radeon VII",
            "docs/formats.md §8: MI50 reports gfx906:sramecc+:xnack-, Radeon VII gfx906:sramecc-:xnack-",
            f"{C_MI50X4_ENV}: the MI50's ids (66a1 rev 02, subsystem 0834)",
            "inferred: topology (two CPU root ports of an AMD host bridge), the Radeon VII subsystem id, "
            "its 256 MiB BAR (no Resizable BAR) and 16 GB VRAM",
        ],
        "numa_node": 0,
        "gpus": [mi50, vii],
        "other_pci": [audio],
    }


def mi50_w5700_mixed(**_) -> dict:
    """MI50 32GB + Radeon Pro W5700 (gfx1010) on NixOS."""
    mi50 = _mi50(_bdf(0x44), 2, host_bridge="pci0000:40", revision=0x00, subsystem=(0x1002, 0x1002),
                 chain=_vega_chain(0x44, [{"bdf": _bdf(0x40, 3, 1), "id": (0x1022, 0x1483), "link": _link()}], _link()),
                 numa_node=0, render=129, card=1, gpu_id=33678, unique_id=0xE54792172DA5EEB,
                 pp_dpm_mclk=MCLK_LOW, pp_dpm_sclk="0: 925Mhz\n1: 938Mhz *\n8: 1800Mhz\n", perf_level="auto")
    w5700 = {
        "bdf": _bdf(0x63), "node": 1, "host_bridge": "pci0000:60", "gpu_id": 11012,
        "chain": _vega_chain(0x63, [{"bdf": _bdf(0x60, 3, 1), "id": (0x1022, 0x1483), "link": _link()}],
                             _link(), pair=NAVI_BRIDGES),
        "pci": {"device": 0x7312, "revision": 0x00, "subsystem": (0x1002, 0x1002), "class": 0x030000},
        "gfx_target_version": 100100, "kfd_name": "navi10",
        "kfd": {**GFX906_KFD, "simd_count": 72, "simd_per_cu": 2, "array_count": 4, "cu_per_simd_array": 10,
                "capability": GFX908_CAPABILITY & ~(CAP_SRAMECC | CAP_MEM_EDC), "wave_front_size": 32},
        "vram": 8 * GIB, "bars": [(0, 0x7000000000, 8 * GIB, "mem64pref"), (2, 0x7200000000, 2 * MIB, "mem64pref")],
        "link": _link(), "render_minor": 128, "card": 0, "numa_node": 0,
    }
    return {
        "name": "mi50-w5700-mixed",
        "description": """
An AMD MI50 32GB (1002:66a1, display controller) at 0000:44:00.0, KFD node 2, and a Radeon Pro
W5700 (1002:7312, Navi 10, gfx1010) at 0000:63:00.0, KFD node 1; the MI50's memory clock idles at
350 MHz. No ROCm in /opt (NixOS).
""",
        "sources": [
            f"{C_MIXED}: BDFs, device ids, classes, KFD node ids (rocm-smi Node ID 2/1), GUIDs = gpu_id "
            "33678/11012, MI50 Unique ID 0xe54792172da5eeb (W5700: N/A), Device Rev 0x00, Subsystem ID "
            "0x1002, SCLK 938Mhz / MCLK 350Mhz",
            f"{C_LOTA}: the MI50's pp_dpm_mclk levels 350/800/1000 and pp_dpm_sclk 925/938/…/1800",
            "inferred: root complexes 0x40/0x60 from the bus numbers, bridge pairs (Vega 1022:1470/1471, "
            "Navi 1002:1478/1479), gfx_target_version 100100 for gfx1010, W5700: 36 CUs, 8 GB",
        ],
        "numa_node": 0,
        "gpus": [mi50, w5700],
    }


def mi100_gfx908(**_) -> dict:
    """A gfx908-only host (nothing for rocmrevive to do)."""
    gpu = {
        "bdf": "0000:23:00.0", "node": 1, "host_bridge": "pci0000:20", "gpu_id": 42700, "kfd_name": "arcturus",
        "kfd_text": GFX908_PROPERTIES,
        "chain": [{"bdf": _bdf(0x20, 1, 1), "id": (0x1022, 0x1483), "link": _link()}],
        "pci": {"device": 0x738C, "revision": 0x01, "class": 0x038000},
        "vram": VRAM_32, "bars": [(0, 0x38000000000, 32 * GIB, "mem64pref")], "link": _link(),
        "render_minor": 128, "card": 0, "numa_node": 0,
    }
    return {
        "name": "mi100-gfx908",
        "description": "An AMD Instinct MI100 (gfx908) only: nothing for rocmrevive to do.\n",
        "sources": [
            f"{C_GFX908}: the KFD node's properties verbatim (gfx_target_version 90008, device_id 29580, "
            "location_id 8960 = 0000:23:00.0, drm_render_minor 128), gpu_id 42700, name arcturus",
            "inferred: the GPU node is node 1 behind CPU node 0 (the capture's fixture has it at node 0), "
            "PCI class, root port, 32 GB VRAM",
        ],
        "numa_node": 0,
        "gpus": [gpu],
    }


def rx6900xt_gfx1030(**_) -> dict:
    gpu = {
        "bdf": "0000:03:00.0", "node": 1, "host_bridge": "pci0000:00", "kfd_name": "sienna_cichlid",
        "chain": _vega_chain(0x03, [{"bdf": _bdf(0, 1, 1), "id": (0x1022, 0x1483), "link": _link()}],
                             _link(), pair=NAVI_BRIDGES),
        "pci": {"device": 0x73BF, "revision": 0xC0, "class": 0x030000},
        "gfx_target_version": 100300,
        "kfd": {**GFX906_KFD, "simd_count": 160, "simd_per_cu": 2,
                "capability": GFX908_CAPABILITY & ~(CAP_SRAMECC | CAP_MEM_EDC), "wave_front_size": 32},
        "vram": 16 * GIB, "bars": [(0, 0x7C00000000, 16 * GIB, "mem64pref")], "link": _link(),
        "render_minor": 128, "card": 0, "numa_node": 0,
    }
    return {
        "name": "rx6900xt-gfx1030",
        "description": "A Radeon RX 6900 XT (gfx1030) only: not a gfx906 host.\n",
        "sources": [
            f"{C_GFX1030}: rocminfo agent gfx1030 (ISA amdgcn-amd-amdhsa--gfx1030)",
            f"{C_IDS}: 73bf -> gfx1030 (RDNA2)",
            "inferred: BDF, KFD values (80 CUs), 16 GB, Navi bridge pair",
        ],
        "numa_node": 0,
        "gpus": [gpu],
    }


def mi50_66a0_lota09(**_) -> dict:
    """The lota09 box: MI50 32GB reporting 1002:66a0 (V420 vBIOS), small BAR, memory clock at 350 MHz."""
    mi50 = _mi50(_bdf(0x04), 1, host_bridge="pci0000:00", revision=0x00, subsystem=(0x1002, 0x0834),
                 chain=_vega_chain(0x04, [{"bdf": _bdf(0, 1, 0), "id": (0x8086, 0x1901), "link": _link(8.0, 16, 8.0, 16)}],
                                   _link(8.0, 16, 16.0, 16)),
                 bar0=256 * MIB, bar0_at=0xC0000000, vis_vram=256 * MIB, render=129, card=2, numa_node=-1,
                 link=_link(16.0, 16, 16.0, 16), pp_dpm_mclk=MCLK_LOW,
                 pp_dpm_sclk="0: 925Mhz\n1: 938Mhz *\n8: 1800Mhz\n", perf_level="auto")
    mi50["pci"].update({"device": 0x66A0, "class": 0x030000})
    igpu = {"bdf": _bdf(0, 2, 0), "id": (0x8086, 0x3E98), "class": 0x030000, "host_bridge": "pci0000:00",
            "revision": 0x02, "driver": "i915"}
    hostb = {"bdf": _bdf(0), "id": (0x8086, 0x3E30), "class": 0x060000, "host_bridge": "pci0000:00"}
    return {
        "name": "mi50-66a0-lota09",
        "description": """
An AMD MI50 32GB that reports 1002:66a0 (V420 vBIOS, VGA class) at 0000:04:00.0 next to an
Intel UHD 630 (i7-9700K); amdgpu-install warns "Bar size smaller than needed", the memory clock
sits at 350 of 1000 MHz. ROCm 6.2.0 (rocBLAS 4.2.0 with gfx906) and ROCm 7.14.0 (/opt/rocm,
no gfx906 in rocBLAS).
""",
        "sources": [
            f"{C_LOTA}: BDFs 00:02.0 (Intel UHD 630, rev 02) and 04:00.0 (Vega 20, VGA, no rev shown = 00), "
            "1002:66a0, card2, mem_info_vram_total 34342961152, pp_dpm_sclk/mclk and performance level, "
            "target gfx906:sramecc+:xnack-, Vulkan device names, ROCm 7.14 rocBLAS arch list (no gfx906), "
            "the 6.2.0 rocBLAS deb rocblas_4.2.0.60200-66 with gfx906 files, the BAR warning",
            "inferred: a 256 MiB BAR (the warning and its 'Above 4G Decoding' fix), the CPU root port "
            "8086:1901 and its x16 link, the host bridge id 8086:3e30, renderD129",
        ],
        "cpu": {"vendor_id": "GenuineIntel", "family": 6, "model_name": "Intel(R) Core(TM) i7-9700K CPU @ 3.60GHz"},
        "kernel": {"release": "7.0.0-28-generic"},
        "gpus": [mi50],
        "other_pci": [hostb, igpu],
        "rocm": [{"version": "6.2.0-66",
                  "rocblas": {"version": "4.2.0", "soname": "librocblas.so.4.2.60200", "targets": ROCBLAS_63_TARGETS}},
                 {"version": "7.14.0",
                  "rocblas": {"soname": "librocblas.so.5", "header": False,
                              "targets": ROCBLAS_714_TARGETS}}],
        "rocm_link": "rocm-7.14.0",
    }


def no_amd_gpu(**_) -> dict:
    return {
        "name": "no-amd-gpu",
        "description": "An Intel desktop with only its integrated UHD 630: no AMD GPU, no KFD.\n",
        "sources": [f"{C_LOTA}: Intel UHD 630 at 00:02.0 (rev 02) and the i7-9700K; 8086:3e98 from pci.ids"],
        "cpu": {"vendor_id": "GenuineIntel", "family": 6, "model_name": "Intel(R) Core(TM) i7-9700K CPU @ 3.60GHz"},
        "other_pci": [{"bdf": _bdf(0), "id": (0x8086, 0x3E30), "class": 0x060000, "host_bridge": "pci0000:00"},
                      {"bdf": _bdf(0, 2, 0), "id": (0x8086, 0x3E98), "class": 0x030000, "revision": 0x02,
                       "host_bridge": "pci0000:00", "driver": "i915"}],
        "kfd": False,
    }


def rocm643_torch_venv(**_) -> dict:
    """ROCm 6.4.3 in /opt plus a venv with a PyTorch ROCm wheel, Debian's rocBLAS and Ollama."""
    mi50 = _mi50(_bdf(0x03), 1, host_bridge="pci0000:00",
                 chain=_vega_chain(0x03, [{"bdf": _bdf(0, 1, 1), "id": (0x1022, 0x1483), "link": _link()}], _link()),
                 numa_node=0, render=128, card=0)
    return {
        "name": "rocm643-torch-venv",
        "description": """
One MI50 32GB; ROCm 6.4.3 in /opt (rocBLAS 4.4.1 without gfx906), a venv with PyTorch
2.7.1+rocm6.3 whose bundled rocBLAS has gfx906, Debian's librocblas4 6.4.4-4, and Ollama's ROCm
bundle. User alice is not in the render group.
""",
        "sources": [
            f"{C_MI50X4_ENV}: the MI50's ids (66a1 rev 02, subsystem 0834, 32GB)",
            f"{C_MI50X8}: HIP version string 6.3.42134-a9a80e791 (torch.version.hip of a ROCm 6.3.3 build)",
            "FORMATS §5.1: Debian librocblas4 6.4.4-4 layout, librocblas.so.4.4 and its targets",
            "scenario: topology, the venv and its wheel's arch list, Ollama's bundle, the user's groups",
        ],
        "cpu": {"vendor_id": "AuthenticAMD", "family": 25, "model_name": "AMD Ryzen 9 5950X 16-Core Processor"},
        "numa_node": 0,
        "gpus": [mi50],
        "users": {"alice": ["video"]},
        "rocm": [{"version": "6.4.3-128",
                  "rocblas": {"version": "4.4.1", "soname": "librocblas.so.4.4.60403", "targets": ROCBLAS_64_TARGETS}}],
        "rocm_link": "rocm-6.4.3",
        "venvs": [{"path": "/home/alice/venvs/torch", "python": "3.12", "python_full": "3.12.3",
                   "torch": {"version": "2.7.1+rocm6.3", "hip": "6.3.42134-a9a80e791",
                             "rocblas_file": "librocblas.so.4", "targets": ROCBLAS_63_TARGETS}},
                  {"path": "/home/alice/.venv", "python": "3.12", "python_full": "3.12.3"}],
        "debian_rocblas": {"dir": "4.4.1", "soname": "librocblas.so.4.4", "package": "librocblas4",
                           "package_version": "6.4.4-4", "targets": DEBIAN_441_TARGETS},
        "ollama": {"path": "/usr/lib/ollama/rocm", "rocblas_file": "librocblas.so.4", "targets": ROCBLAS_63_TARGETS},
    }


MACHINES = {
    "dual-mi50": dual_mi50,
    "dual-mi50-am5": dual_mi50_am5,
    "mi50x4-switch": mi50x4_switch,
    "mi50x8": mi50x8,
    "mi50-radeon-vii": mi50_radeon_vii,
    "mi50-w5700-mixed": mi50_w5700_mixed,
    "mi100-gfx908": mi100_gfx908,
    "rx6900xt-gfx1030": rx6900xt_gfx1030,
    "mi50-66a0-lota09": mi50_66a0_lota09,
    "no-amd-gpu": no_amd_gpu,
    "rocm643-torch-venv": rocm643_torch_venv,
}


def mi50_rx6900xt(**_) -> dict:
    """An MI50 32GB (gfx906) and a Radeon RX 6900 XT (gfx1030) in one desktop (issue 10's seed)."""
    rx = rx6900xt_gfx1030()["gpus"][0]
    rx = {**rx, "kfd": dict(rx["kfd"]), "node": 1, "render_minor": 128, "card": 0}
    mi50 = _mi50(_bdf(0x0C), 2, host_bridge="pci0000:00",
                 chain=_vega_chain(0x0C, [{"bdf": _bdf(0, 3, 1), "id": (0x1022, 0x1483), "link": _link()}], _link()),
                 bar0_at=0x7800000000, numa_node=0, render=129, card=1)
    return {
        "name": "mi50-rx6900xt",
        "description": """
An AMD Instinct MI50 32GB (gfx906:sramecc+:xnack-) at 0000:0c:00.0 and a Radeon RX 6900 XT
(1002:73bf, gfx1030) at 0000:03:00.0, each on its own CPU root port of one AMD host bridge: the
mixed pair whose RCCL needed both targets. No ROCm in /opt (the tests add RCCL copies).
""",
        "sources": [
            "issue 10 (seed): an MI50 paired with an RX 6900 XT; AMD's librccl.so had no gfx1030 code "
            "(hipErrorInvalidKernelFile) until RCCL was built for gfx906;gfx1030",
            f"{C_GFX1030}: rocminfo agent gfx1030 on an RX 6900 XT",
            f"{C_IDS}: 73bf -> gfx1030 (RDNA2), 66a1 = MI50 32GB",
            f"{C_MI50X4_ENV}: the MI50's ids (66a1 rev 02, subsystem 0834)",
            "inferred: the RX 6900 XT as in the rx6900xt-gfx1030 machine (KFD values, 16 GB, Navi bridge "
            "pair); scenario: a Ryzen 9 5950X host, root ports 00:01.1 and 00:03.1 (1022:1483), both "
            "cards with a BAR as large as their VRAM (Resizable BAR on)",
        ],
        "cpu": {"vendor_id": "AuthenticAMD", "family": 25, "model_name": "AMD Ryzen 9 5950X 16-Core Processor"},
        "numa_node": 0,
        "gpus": [rx, mi50],
    }


MACHINES["mi50-rx6900xt"] = mi50_rx6900xt
