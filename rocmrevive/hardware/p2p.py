"""Would the kernel let two GPUs do PCIe peer-to-peer DMA? The rule of
``amdgpu_device_is_peer_accessible`` and ``pci_p2pdma_distance`` (ECOSYSTEM §4.4):
a kernel built with CONFIG_HSA_AMD_P2P (+ PCI_P2PDMA, DMABUF_MOVE_NOTIFY), ``amdgpu.pcie_p2p``
on, both cards with a large BAR (all VRAM CPU-visible), and a path the PCI core accepts: a
common switch, or host bridges it trusts (any AMD Zen CPU; listed Intel host bridges).

When the KFD publishes ``p2p_links`` the kernel has already decided, and that wins.

    assess(gpu_a, gpu_b, host)  # Pair(relation='NODE', p2p_possible=False, blockers=[...])
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocmrevive.hardware.host import P2P_CONFIG, Host
from rocmrevive.hardware.topology import relation
from rocmrevive.units import format_bytes, size_text  # noqa: F401 - size_text: the name cli/install.py imports here

# drivers/pci/p2pdma.c pci_p2pdma_whitelist[]: Intel host bridges (vendor 8086), True when
# both devices must sit under the same host bridge (REQ_SAME_HOST_BRIDGE)
INTEL_P2PDMA_WHITELIST = {0x3C00: True, 0x3C01: True, 0x2F00: True, 0x2F01: True,
                          0x2030: False, 0x2031: False, 0x2032: False, 0x2033: False,
                          0x2020: False, 0x09A2: False}


@dataclass
class Pair:
    a: int
    b: int
    relation: str
    common_bridge: str | None
    p2p_possible: bool | None
    kfd_peer_link: bool | None
    blockers: list[str] = field(default_factory=list)
    risks: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "relation": self.relation,
                "common_bridge": self.common_bridge, "p2p_possible": self.p2p_possible,
                "kfd_peer_link": self.kfd_peer_link, "blockers": self.blockers,
                "risks": self.risks, "unverified": self.unverified}


def _kfd_peer(a, b) -> bool | None:
    if a.kfd is None or b.kfd is None:
        return None
    if b.node in a.kfd.peers() or a.node in b.kfd.peers():
        return True
    if "p2p_links_count" in a.kfd.props and "p2p_links_count" in b.kfd.props:
        return False
    return None


def _host_bridge_ok(gpu, other, host: Host) -> tuple[bool | None, str | None]:
    """(accepted, reason) for traffic that leaves through the host bridge."""
    if host.cpu.amd_zen_or_newer:
        return True, None
    hb = gpu.location.host_bridge if gpu.location else None
    if not hb or not hb.get("pci_id"):
        return None, f"host bridge of GPU{gpu.index}'s root complex unknown"
    vendor, device = (int(x, 16) for x in hb["pci_id"].split(":"))
    if vendor == 0x8086 and device in INTEL_P2PDMA_WHITELIST:
        if INTEL_P2PDMA_WHITELIST[device] and gpu.location.root_complex != other.location.root_complex:
            return False, (f"host bridge {hb['pci_id']} allows P2P only under one host bridge; "
                           f"GPU{gpu.index} and GPU{other.index} are on different root complexes")
        return True, None
    if host.cpu.vendor is None:
        return None, "CPU vendor unknown (/proc/cpuinfo)"
    return False, (f"root complex {gpu.location.root_complex} (host bridge {hb['pci_id']}) is not on "
                   f"the kernel's P2PDMA whitelist")


def assess(a, b, host: Host) -> Pair:
    """Whether GPUs ``a`` and ``b`` can do PCIe peer-to-peer: what blocks it, what is not known,
    what makes it risky; the KFD's own answer decides where it gives one."""
    rel, common = ("NODE", None)
    if a.location and b.location:
        rel, common = relation(a.location, b.location, a.numa_node, b.numa_node)
    pair = Pair(a.index, b.index, rel, common, None, _kfd_peer(a, b))
    _check_bars(pair, (a, b))
    _check_kernel(pair, host)
    if rel in ("PHB", "NODE", "SYS"):
        _check_host_bridges(pair, a, b, host)
    _note_risks(pair, (a, b), host)
    _decide(pair, a, b)
    return pair


def _check_bars(pair: Pair, gpus) -> None:
    for g in gpus:
        if g.large_bar is False:
            pair.blockers.append(f"GPU{g.index}: BAR {format_bytes(g.bar_bytes)} is smaller than its "
                                 f"{format_bytes(g.vram_bytes)} VRAM (no large BAR)")
        elif g.large_bar is None:
            pair.unverified.append(f"GPU{g.index}: BAR size or VRAM unknown")


def _check_kernel(pair: Pair, host: Host) -> None:
    if host.kernel_config:
        for opt in P2P_CONFIG:
            if host.kernel_config.get(opt, "n") not in ("y", "m"):
                pair.blockers.append(f"kernel built without {opt} ({host.kernel_config_source})")
    else:
        pair.unverified.append("kernel build options unknown (no /boot/config-<release> or /proc/config.gz)")
    if host.amdgpu_params.get("pcie_p2p", "Y").upper() in ("N", "0"):
        pair.blockers.append("amdgpu.pcie_p2p=0: peer-to-peer switched off in the driver")


def _check_host_bridges(pair: Pair, a, b, host: Host) -> None:
    """A pair that meets at or above a host bridge: the kernel's P2PDMA rule for each side."""
    seen = set()
    for g, o in ((a, b), (b, a)):
        ok, why = _host_bridge_ok(g, o, host)
        if why and why not in seen:
            seen.add(why)
            (pair.blockers if ok is False else pair.unverified).append(why)


def _note_risks(pair: Pair, gpus, host: Host) -> None:
    for g in gpus:
        if g.location and g.location.behind_chipset:
            pair.risks.append(f"GPU{g.index} sits behind the chipset: its traffic shares the chipset "
                              f"uplink and RCCL peer transfers through it are slow or fail")
    if pair.relation == "SYS":
        pair.risks.append("the path crosses the link between CPU sockets")
    if host.cpu.virtualized:
        pair.risks.append("virtual machine: the PCIe tree seen here may not be the real one")


def _decide(pair: Pair, a, b) -> None:
    """The KFD's peer link when it says; else no with a blocker, yes with nothing unverified."""
    if pair.kfd_peer_link is not None:
        pair.p2p_possible = pair.kfd_peer_link
        if pair.kfd_peer_link is False and not pair.blockers:
            pair.blockers.append(f"the KFD lists no peer link between nodes {a.node} and {b.node}")
    elif pair.blockers:
        pair.p2p_possible = False
    elif not pair.unverified:
        pair.p2p_possible = True
