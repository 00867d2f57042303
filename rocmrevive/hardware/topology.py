"""Where a GPU hangs on the PCIe tree, how two GPUs relate, and whether the kernel would let them
do peer-to-peer DMA (ECOSYSTEM §4.4).

The resolved sysfs path is the tree: ``/sys/devices/pci0000:16/0000:16:00.0/0000:17:00.0/…``.
First component: the host bridge (root complex); next: the root port; further bridges: switch
ports, alternating upstream/downstream. Vega 10/20 and Navi 1x cards carry their own bridge pair
(1022:1470/1471, 1002:1478/1479) directly above the GPU: it is part of the card, not a switch.

Pair relations follow ``nvidia-smi topo -m``: PIX (through one switch), PXB (several switches,
no host bridge), PHB (through a host bridge), NODE (between host bridges of one NUMA node), SYS
(across NUMA nodes).

    loc = locate(root, gpu_function); relation(loc_a, loc_b, numa_a, numa_b)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocmrevive.hardware.pci import (
    VENDOR_AMD,
    VENDOR_AMD_GPU,
    VENDOR_INTEL,
    Link,
    PciFunction,
    read_function,
    split_device_path,
)
from rocmrevive.rootfs import Root

# on-card bridge pairs: pci.ids "Vega 10 PCIe Bridge" 1022:1470/1471 (also on Vega 20 boards),
# "Navi 10 XL Upstream/Downstream Port of PCI Express Switch" 1002:1478/1479
CARD_INTERNAL_BRIDGES = {(VENDOR_AMD, 0x1470), (VENDOR_AMD, 0x1471),
                         (VENDOR_AMD_GPU, 0x1478), (VENDOR_AMD_GPU, 0x1479)}
# AMD chipset bridges: 300/400/500/600-series Promontory (1022:43xx) and X570 (1022:57a3/57a4/57ad)
AMD_CHIPSET_X570 = {0x57A3, 0x57A4, 0x57AD}
# Intel PCH root ports sit at devices 0x1b-0x1d of bus 0 (PCH datasheets: D27/D28/D29)
INTEL_PCH_ROOT_PORT_DEVS = {0x1B, 0x1C, 0x1D}

RELATIONS = ("PIX", "PXB", "PHB", "NODE", "SYS")


def is_card_internal(fn: PciFunction) -> bool:
    return (fn.vendor, fn.device) in CARD_INTERNAL_BRIDGES


def is_chipset_bridge(fn: PciFunction, role: str) -> bool:
    if fn.vendor == VENDOR_AMD and fn.device is not None:
        return 0x43A0 <= fn.device <= 0x43FF or fn.device in AMD_CHIPSET_X570
    if fn.vendor == VENDOR_INTEL and role == "root-port":
        bus, dev = fn.bdf.split(":")[1], int(fn.bdf.split(":")[2].split(".")[0], 16)
        return bus == "00" and dev in INTEL_PCH_ROOT_PORT_DEVS
    return False


@dataclass
class Bridge:
    bdf: str
    pci_id: str | None
    role: str                    # root-port | upstream | downstream | card-internal
    chipset: bool = False
    link: Link = field(default_factory=Link)

    def to_json(self) -> dict:
        return {"bdf": self.bdf, "pci_id": self.pci_id, "role": self.role, "chipset": self.chipset,
                "link": self.link.to_json()}


@dataclass
class PcieLocation:
    root_complex: str | None            # "0000:16" (PCI domain and root bus)
    host_bridge: dict | None            # {"bdf", "pci_id"} of the first device on the root bus
    bridges: list[Bridge]               # root port first, down to the GPU's parent
    problems: list[str] = field(default_factory=list)

    @property
    def root_port(self) -> str | None:
        return next((b.bdf for b in self.bridges if b.role == "root-port"), None)

    @property
    def fabric(self) -> list[Bridge]:
        """Bridges that are not part of the card itself."""
        return [b for b in self.bridges if b.role != "card-internal"]

    @property
    def chain(self) -> list[str]:
        return [b.bdf for b in self.bridges]

    @property
    def card_bridges(self) -> list[Bridge]:
        return [b for b in self.bridges if b.role == "card-internal"]

    @property
    def switches(self) -> list[dict]:
        """One entry per switch: its upstream port and the downstream port used."""
        out, fab = [], self.fabric
        for i, b in enumerate(fab):
            if b.role == "upstream":
                down = fab[i + 1] if i + 1 < len(fab) and fab[i + 1].role == "downstream" else None
                out.append({"upstream": b.bdf, "downstream": down.bdf if down else None,
                            "pci_id": b.pci_id, "chipset": b.chipset})
        return out

    @property
    def behind_chipset(self) -> bool:
        return any(b.chipset for b in self.fabric)

    @property
    def slot_link(self) -> Link | None:
        """The link of the card's own slot: the top on-card bridge's link when the card has one."""
        cards = self.card_bridges
        return cards[0].link if cards else None

    @property
    def flat(self) -> bool:
        """No root port above the device: a virtual machine's flattened tree or an integrated GPU."""
        return self.root_port is None

    def to_json(self) -> dict:
        return {"root_complex": self.root_complex, "host_bridge": self.host_bridge,
                "root_port": self.root_port, "chain": self.chain,
                "bridges": [b.to_json() for b in self.bridges],
                "switches": self.switches, "behind_chipset": self.behind_chipset,
                "flat": self.flat}


def locate(root: Root, fn: PciFunction) -> PcieLocation:
    """The place of ``fn`` in the PCIe tree, from its resolved sysfs path."""
    if not fn.path:
        return PcieLocation(None, None, [], [f"{fn.bdf}: sysfs entry is not a link into /sys/devices"])
    host, comps = split_device_path(fn.path)
    if host is None or not comps or comps[-1] != fn.bdf:
        return PcieLocation(None, None, [], [f"{fn.bdf}: cannot read the PCIe path {fn.path}"])
    dom, bus = host[3:].split(":")
    loc = PcieLocation(f"{dom}:{bus}", None, [])
    prefix = fn.path[: fn.path.index(host) + len(host)]
    funcs: list[PciFunction] = []
    for bdf in comps[:-1]:
        prefix = f"{prefix}/{bdf}"
        br = read_function(root, bdf, real=root.path(prefix), mpath=prefix)
        loc.problems += [f"bridge {bdf}: {p}" for p in br.problems]
        funcs.append(br)
    # the card's own bridges are the contiguous run just above the GPU
    n_internal = 0
    for br in reversed(funcs):
        if is_card_internal(br):
            n_internal += 1
        else:
            break
    fabric = funcs[: len(funcs) - n_internal]
    for i, br in enumerate(fabric):
        role = "root-port" if i == 0 else ("upstream" if i % 2 == 1 else "downstream")
        loc.bridges.append(Bridge(br.bdf, br.pci_id, role, is_chipset_bridge(br, role), br.link))
    for br in funcs[len(funcs) - n_internal:]:
        loc.bridges.append(Bridge(br.bdf, br.pci_id, "card-internal", False, br.link))
    # the host bridge device the kernel's P2PDMA whitelist looks at: devfn 00.0 on the root bus,
    # else the first root port (pci_host_bridge_dev(), drivers/pci/p2pdma.c)
    first = f"{dom}:{bus}:00.0"
    hb = read_function(root, first)
    if hb.vendor is not None:
        loc.host_bridge = {"bdf": first, "pci_id": hb.pci_id}
    elif fabric:
        loc.host_bridge = {"bdf": fabric[0].bdf, "pci_id": fabric[0].pci_id}
    return loc


def relation(a: PcieLocation, b: PcieLocation, numa_a: int | None, numa_b: int | None) -> tuple[str, str | None]:
    """(relation, the lowest common bridge or None)."""
    if a.root_complex is None or b.root_complex is None or a.root_complex != b.root_complex:
        if numa_a is not None and numa_b is not None and numa_a != numa_b:
            return "SYS", None
        return "NODE", None
    fa, fb = a.fabric, b.fabric
    k = 0
    while k < len(fa) and k < len(fb) and fa[k].bdf == fb[k].bdf:
        k += 1
    if k == 0:
        return "PHB", None
    lca = fa[k - 1]
    if lca.role == "upstream":
        below = [x for x in fa[k:] + fb[k:] if x.role == "upstream"]
        return ("PIX" if not below else "PXB"), lca.bdf
    return "PXB", lca.bdf
