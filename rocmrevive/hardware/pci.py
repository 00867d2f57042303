"""PCI functions from sysfs: ``/sys/bus/pci/devices/<bdf>/`` (ECOSYSTEM §4.2).

``/sys/bus/pci/devices/<bdf>`` is a link into ``/sys/devices/pci<dom>:<bus>/<root port>/…/<bdf>``;
the resolved path is the device's place in the PCIe tree, so it is kept (``path``) for the
topology. Links are resolved through the Root, so a captured machine behaves like the real one.

    fn = read_function(Root("/"), "0000:19:00.0"); fn.vendor == 0x1002; fn.largest_prefetchable_bar
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.hardware.sysfs import list_dir, parse_hex, parse_int, read_link_name, read_text
from rocmrevive.rootfs import Root

DEVICES = "/sys/bus/pci/devices"
BDF_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
HOST_BRIDGE_RE = re.compile(r"^pci([0-9a-f]{4}):([0-9a-f]{2})$")

VENDOR_AMD_GPU = 0x1002   # ATI/AMD graphics
VENDOR_AMD = 0x1022       # AMD (CPU, chipset, Vega on-card bridges)
VENDOR_INTEL = 0x8086

# resource flags (include/linux/ioport.h)
IORESOURCE_IO = 0x100
IORESOURCE_MEM = 0x200
IORESOURCE_PREFETCH = 0x2000
IORESOURCE_MEM_64 = 0x100000
ROM_INDEX = 6


@dataclass
class Bar:
    index: int          # 0-5, 6 = expansion ROM
    start: int
    size: int
    flags: int

    @property
    def is_mem(self) -> bool:
        return bool(self.flags & IORESOURCE_MEM)

    @property
    def prefetchable(self) -> bool:
        return bool(self.flags & IORESOURCE_PREFETCH)

    @property
    def is_64bit(self) -> bool:
        return bool(self.flags & IORESOURCE_MEM_64)

    def to_json(self) -> dict:
        return {"index": self.index, "size": self.size, "prefetchable": self.prefetchable,
                "bits": 64 if self.is_64bit else 32, "rom": self.index == ROM_INDEX}


@dataclass
class Link:
    speed: float | None = None       # GT/s
    width: int | None = None
    max_speed: float | None = None
    max_width: int | None = None

    def to_json(self) -> dict:
        return {"speed": self.speed, "width": self.width, "max_speed": self.max_speed,
                "max_width": self.max_width}

    @property
    def known(self) -> bool:
        return self.speed is not None or self.width is not None


@dataclass
class PciFunction:
    bdf: str
    path: str | None = None           # resolved machine path under /sys/devices
    vendor: int | None = None
    device: int | None = None
    subsystem_vendor: int | None = None
    subsystem_device: int | None = None
    revision: int | None = None
    pci_class: int | None = None      # 24-bit class code, 0x038000 = display controller
    bars: list[Bar] = field(default_factory=list)
    link: Link = field(default_factory=Link)
    numa_node: int | None = None
    iommu_group: int | None = None
    driver: str | None = None
    attrs: dict[str, str] = field(default_factory=dict)   # amdgpu extras (mem_info_*, pp_dpm_*)
    problems: list[str] = field(default_factory=list)

    @property
    def pci_id(self) -> str | None:
        if self.vendor is None or self.device is None:
            return None
        return f"{self.vendor:04x}:{self.device:04x}"

    @property
    def subsystem_id(self) -> str | None:
        if self.subsystem_vendor is None or self.subsystem_device is None:
            return None
        return f"{self.subsystem_vendor:04x}:{self.subsystem_device:04x}"

    @property
    def base_class(self) -> int | None:
        return None if self.pci_class is None else self.pci_class >> 16

    @property
    def is_display(self) -> bool:
        return self.base_class == 0x03

    @property
    def is_bridge(self) -> bool:
        return self.pci_class is not None and (self.pci_class >> 8) == 0x0604

    @property
    def largest_prefetchable_bar(self) -> Bar | None:
        cands = [b for b in self.bars if b.index < ROM_INDEX and b.is_mem and b.prefetchable]
        return max(cands, key=lambda b: b.size) if cands else None

    def attr_int(self, name: str) -> int | None:
        return parse_int(self.attrs.get(name))


def parse_link_speed(text: str | None) -> float | None:
    """``"16.0 GT/s PCIe"`` → 16.0; ``"Unknown"`` / garbage → None."""
    if not text:
        return None
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*GT/s", text)
    return float(m.group(1)) if m else None


def parse_resource(text: str) -> tuple[list[Bar], list[str]]:
    bars, problems = [], []
    for i, line in enumerate(text.splitlines()):
        if i > ROM_INDEX:
            break  # bridge windows / SR-IOV BARs
        parts = line.split()
        if len(parts) != 3:
            problems.append(f"resource line {i} is not 'start end flags'")
            continue
        try:
            start, end, flags = (int(p, 16) for p in parts)
        except ValueError:
            problems.append(f"resource line {i} is not hex")
            continue
        if end == 0 and start == 0:
            continue
        if end < start:
            problems.append(f"resource line {i}: end before start")
            continue
        bars.append(Bar(i, start, end - start + 1, flags))
    return bars, problems


AMDGPU_ATTRS = ("mem_info_vram_total", "mem_info_vis_vram_total", "pp_dpm_mclk", "pp_dpm_sclk",
                "pp_dpm_pcie", "power_dpm_force_performance_level", "unique_id", "product_name")


def device_dir(root: Root, bdf: str) -> tuple[Path, str | None]:
    """(real folder of the function, resolved machine path or None if it is not a link)."""
    link = f"{DEVICES}/{bdf}"
    try:
        real = root.resolve(link)
    except (ValueError, OSError):
        return root.path(link), None
    return real, root.machine_path(real)


def read_function(root: Root, bdf: str, *, amdgpu_attrs: bool = False,
                  real: Path | None = None, mpath: str | None = None) -> PciFunction:
    """Read one function's ids, class, BARs, link, NUMA node, IOMMU group and driver."""
    if real is None:
        real, mpath = device_dir(root, bdf)
    fn = PciFunction(bdf, mpath)
    if not real.is_dir():
        fn.problems.append(f"{DEVICES}/{bdf} does not lead to a device folder")
        return fn

    def get(name: str) -> str | None:
        text, problem = read_text(real / name)
        if problem:
            fn.problems.append(problem)
        return text

    fn.vendor = parse_hex(get("vendor"))
    fn.device = parse_hex(get("device"))
    fn.subsystem_vendor = parse_hex(get("subsystem_vendor"))
    fn.subsystem_device = parse_hex(get("subsystem_device"))
    fn.revision = parse_hex(get("revision"))
    fn.pci_class = parse_hex(get("class"))
    if fn.vendor is None or fn.device is None:
        fn.problems.append("vendor/device ids missing or unreadable")
    res = get("resource")
    if res:
        fn.bars, probs = parse_resource(res)
        fn.problems += probs
    fn.link = Link(parse_link_speed(get("current_link_speed")), parse_int(get("current_link_width")),
                   parse_link_speed(get("max_link_speed")), parse_int(get("max_link_width")))
    numa = parse_int(get("numa_node"))
    fn.numa_node = None if numa is None or numa < 0 else numa
    group = read_link_name(real / "iommu_group")
    fn.iommu_group = int(group) if group and group.isdigit() else None
    fn.driver = read_link_name(real / "driver")
    if amdgpu_attrs:
        for name in AMDGPU_ATTRS:
            text = get(name)
            if text is not None:
                fn.attrs[name] = text
    return fn


def list_functions(root: Root) -> list[str]:
    return [n for n in list_dir(root.path(DEVICES)) if BDF_RE.match(n)]


def split_device_path(mpath: str) -> tuple[str | None, list[str]]:
    """``/sys/devices/pci0000:16/0000:16:00.0/…/0000:19:00.0`` → (``pci0000:16``, [BDFs from the
    root bus down to the device itself]). (None, []) when the path is not under /sys/devices."""
    parts = [p for p in mpath.split("/") if p]
    try:
        i = parts.index("devices")
    except ValueError:
        return None, []
    rest = parts[i + 1:]
    # a platform device may sit in between (e.g. /sys/devices/platform/ACPI…/pci0000:00)
    for j, comp in enumerate(rest):
        if HOST_BRIDGE_RE.match(comp):
            return comp, [c for c in rest[j + 1:] if BDF_RE.match(c)]
    return None, []
