"""The GPUs of a machine, from the KFD topology joined with PCI sysfs; no ROCm userspace needed.

A GPU's target comes from the KFD (``gfx_target_version``, SRAM ECC from ``capability``, XNACK
from ``amdgpu.noretry``); its name, BARs, link and place in the PCIe tree from PCI sysfs. An AMD
display device the KFD does not list is still reported (target guessed from the PCI id, with a
problem saying why). Every device's problems stay with that device.

    hw = scan(Root("/")); [str(g.target) for g in hw.gpus]; [p.relation for p in hw.pairs]
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocmrevive.codeobj.targetid import OFF, ON, TargetId
from rocmrevive.hardware import kfd as K
from rocmrevive.hardware.host import Host, read_host
from rocmrevive.hardware.models import PROCESSOR_BY_PCI_ID, ModelName, name_gpu
from rocmrevive.hardware.p2p import Pair, assess
from rocmrevive.hardware.pci import DEVICES, VENDOR_AMD_GPU, PciFunction, list_functions, read_function
from rocmrevive.hardware.power import DpmLevels, parse_dpm
from rocmrevive.hardware.rocminfo import RocminfoAgent, cross_check, parse_rocminfo
from rocmrevive.hardware.sysfs import list_dir, parse_hex, read_text
from rocmrevive.hardware.topology import PcieLocation, locate
from rocmrevive.rootfs import Root


def _of_kfd(attr: str) -> property:
    """A ``Gpu`` property read from its KFD node (None without one)."""
    return property(lambda gpu: getattr(gpu.kfd, attr) if gpu.kfd else None)


@dataclass
class Gpu:
    index: int
    node: int | None
    bdf: str | None
    processor: str | None
    target: TargetId | None
    target_source: str                 # "kfd" | "pci-id" | "unknown"
    model: ModelName
    kfd: K.KfdNode | None = None
    pci: PciFunction | None = None
    location: PcieLocation | None = None
    render_node: str | None = None
    card: str | None = None
    mclk: DpmLevels | None = None
    sclk: DpmLevels | None = None
    performance_level: str | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"GPU{self.index}"

    gfx_target_version = _of_kfd("gfx_target_version")
    gpu_id = _of_kfd("gpu_id")
    unique_id = _of_kfd("unique_id")
    cu_count = _of_kfd("cu_count")

    @property
    def kfd_location(self) -> int | None:
        return self.kfd.props.get("location_id") if self.kfd else None

    @property
    def numa_node(self) -> int | None:
        return self.pci.numa_node if self.pci else None

    @property
    def vram_bytes(self) -> int | None:
        v = self.pci.attr_int("mem_info_vram_total") if self.pci else None
        return v or (self.kfd.vram_bytes if self.kfd else None)

    @property
    def vis_vram_bytes(self) -> int | None:
        return self.pci.attr_int("mem_info_vis_vram_total") if self.pci else None

    @property
    def bar_bytes(self) -> int | None:
        bar = self.pci.largest_prefetchable_bar if self.pci else None
        return bar.size if bar else None

    @property
    def large_bar(self) -> bool | None:
        """All VRAM visible to the CPU: ``mem_info_vis_vram_total == mem_info_vram_total`` (amdgpu),
        else the largest prefetchable BAR against VRAM."""
        vram, vis = self.vram_bytes, self.vis_vram_bytes
        if vram and vis:
            return vis >= vram
        if vram and self.bar_bytes:
            return self.bar_bytes >= vram
        return None

    def to_json(self) -> dict:
        pci = self.pci
        loc = self.location
        pcie = None
        if pci is not None:
            pcie = {**(loc.to_json() if loc else {"root_complex": None, "root_port": None, "chain": [],
                                                   "bridges": [], "switches": [], "behind_chipset": False,
                                                   "flat": True, "host_bridge": None}),
                    "link": pci.link.to_json(),
                    "slot_link": loc.slot_link.to_json() if loc and loc.slot_link else None,
                    "bars": [b.to_json() for b in pci.bars],
                    "large_bar": self.large_bar, "iommu_group": pci.iommu_group}
        return {
            "index": self.index, "node": self.node, "gpu_id": self.gpu_id, "bdf": self.bdf,
            "target": str(self.target) if self.target else None, "processor": self.processor,
            "gfx_target_version": self.gfx_target_version, "target_source": self.target_source,
            "model": self.model.name, "model_certain": self.model.certain, "model_reason": self.model.reason,
            "pci_id": pci.pci_id if pci else None,
            "revision": f"{pci.revision:02x}" if pci and pci.revision is not None else None,
            "subsystem": pci.subsystem_id if pci else None,
            "pci_class": f"{pci.pci_class:06x}" if pci and pci.pci_class is not None else None,
            "driver": pci.driver if pci else None,
            "kfd_name": self.kfd.name if self.kfd else None, "cu_count": self.cu_count,
            "vram_bytes": self.vram_bytes, "vis_vram_bytes": self.vis_vram_bytes,
            "unique_id": f"{self.unique_id:x}" if self.unique_id else None,
            "render_node": self.render_node, "card": self.card, "numa_node": self.numa_node,
            "clocks": {"mclk": self.mclk.to_json() if self.mclk else None,
                       "sclk": self.sclk.to_json() if self.sclk else None,
                       "performance_level": self.performance_level},
            "pcie": pcie, "problems": self.problems,
        }


@dataclass
class HardwareReport:
    kfd_present: bool
    gpus: list[Gpu]
    pairs: list[Pair]
    host: Host
    rocminfo: list[RocminfoAgent] | None = None
    rocminfo_problems: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)   # not tied to one GPU

    @property
    def gfx906(self) -> list[Gpu]:
        return [g for g in self.gpus if g.processor == "gfx906"]

    def to_json(self) -> dict:
        return {
            "kfd_present": self.kfd_present,
            "gpus": [g.to_json() for g in self.gpus],
            "pairs": [p.to_json() for p in self.pairs],
            "iommu": self.host.iommu.to_json(),
            "host": self.host.to_json(),
            "rocminfo": None if self.rocminfo is None else {
                "agents": [a.to_json() for a in self.rocminfo],
                "matches": not self.rocminfo_problems, "problems": self.rocminfo_problems},
            "hardware_problems": self.problems,
        }


def device_target(processor: str, sramecc: bool | None, xnack_on: bool) -> TargetId:
    """The target id a device runs as: features it supports set to its mode, others absent."""
    base = TargetId.parse(processor)
    s = base.sramecc if (base.sramecc is None or sramecc is None) else (ON if sramecc else OFF)
    x = base.xnack if base.xnack is None else (ON if xnack_on else OFF)
    return TargetId(processor, s, x)


def _drm_names(root: Root, fn: PciFunction) -> tuple[str | None, str | None]:
    if not fn.path:
        return None, None
    names = list_dir(root.path(f"{fn.path}/drm"))
    card = next((n for n in names if n.startswith("card") and n[4:].isdigit()), None)
    render = next((n for n in names if n.startswith("renderD")), None)
    return card, render


def _fill_from_pci(root: Root, gpu: Gpu, fn: PciFunction) -> None:
    gpu.pci = fn
    gpu.problems += fn.problems
    gpu.location = locate(root, fn)
    gpu.problems += gpu.location.problems
    gpu.card, render = _drm_names(root, fn)
    if gpu.render_node is None and render:
        gpu.render_node = f"/dev/dri/{render}"
    gpu.mclk = parse_dpm(fn.attrs.get("pp_dpm_mclk"))
    gpu.sclk = parse_dpm(fn.attrs.get("pp_dpm_sclk"))
    level = fn.attrs.get("power_dpm_force_performance_level")
    gpu.performance_level = level.strip() if level else None


def scan(root: Root, *, rocminfo_text: str | None = None) -> HardwareReport:
    """Every GPU of the machine under ``root``: the KFD's GPU nodes joined with their PCI
    functions, then the AMD display functions the KFD does not list; named, paired, and checked
    against ``rocminfo_text`` when given."""
    host = read_host(root)
    xnack_on = host.amdgpu_params.get("noretry") == "0"
    present = K.kfd_present(root)
    report = HardwareReport(present, [], [], host)
    amd_display = _amd_display_functions(root, report.problems)
    matched: set[str] = set()
    for node in K.read_nodes(root) if present else []:
        if not node.readable:
            report.problems.append(f"KFD node {node.node}: " + "; ".join(node.problems or ["unreadable"]))
        elif node.is_gpu:
            report.gpus.append(_gpu_of_node(root, node, len(report.gpus), xnack_on, amd_display, matched))
    for bdf, fn in sorted(amd_display.items()):
        if bdf not in matched:
            report.gpus.append(_gpu_without_kfd(root, bdf, fn, len(report.gpus), present))
    for gpu in report.gpus:
        gpu.model = _model_of(root, gpu)
    gs = report.gpus
    report.pairs = [assess(gs[i], gs[j], host) for i in range(len(gs)) for j in range(i + 1, len(gs))]
    if rocminfo_text is not None:
        report.rocminfo = parse_rocminfo(rocminfo_text)
        report.rocminfo_problems = cross_check(report.rocminfo, report.gpus)
    return report


def _amd_display_functions(root: Root, problems: list[str]) -> dict[str, PciFunction]:
    """The AMD display functions on the PCI bus, by BDF (only AMD graphics functions are read in full)."""
    amd_display = {}
    for bdf in list_functions(root):
        vendor, problem = read_text(root.path(f"{DEVICES}/{bdf}/vendor"))
        if problem:
            problems.append(f"PCI {bdf}: {problem}")
        if parse_hex(vendor) != VENDOR_AMD_GPU:
            continue
        fn = read_function(root, bdf)
        if fn.is_display:
            amd_display[bdf] = fn
    return amd_display


def _gpu_of_node(root: Root, node: K.KfdNode, index: int, xnack_on: bool,
                 amd_display: dict[str, PciFunction], matched: set[str]) -> Gpu:
    """A GPU the KFD lists: its target from the node, the rest from its PCI function (added to
    ``matched``) when there is one."""
    gpu = Gpu(index, node.node, node.bdf, node.processor, None, "kfd",
              ModelName("unknown AMD GPU", False, ""), kfd=node, problems=list(node.problems))
    if node.processor is None:
        gpu.target_source = "unknown"
        gpu.problems.append(f"gfx_target_version {node.gfx_target_version!r} names no GPU processor")
    else:
        try:
            gpu.target = device_target(node.processor, node.sramecc, xnack_on)
        except ValueError as exc:
            gpu.problems.append(f"target: {exc}")
    if node.render_minor is not None:
        gpu.render_node = f"/dev/dri/renderD{node.render_minor}"
        if not root.path(gpu.render_node).exists():
            gpu.problems.append(f"{gpu.render_node} does not exist")
    if node.bdf and node.bdf in amd_display:
        matched.add(node.bdf)
        _fill_from_pci(root, gpu, read_function(root, node.bdf, amdgpu_attrs=True))
    elif node.bdf:
        gpu.problems.append(f"no PCI device {node.bdf} for KFD node {node.node}")
    else:
        gpu.problems.append("KFD node has no location_id: PCI data unavailable")
    return gpu


def _gpu_without_kfd(root: Root, bdf: str, fn: PciFunction, index: int, kfd_present: bool) -> Gpu:
    """An AMD display device the KFD does not list: its target guessed from the PCI id, with why."""
    proc = PROCESSOR_BY_PCI_ID.get(fn.device) if fn.device is not None else None
    gpu = Gpu(index, None, bdf, proc, TargetId.parse(proc) if proc else None,
              "pci-id" if proc else "unknown", ModelName("unknown AMD GPU", False, ""))
    why = ("no kernel driver is bound" if fn.driver is None else
           f"driver {fn.driver} is bound but did not register the card with the KFD"
           if kfd_present else "the KFD topology is absent (amdgpu/amdkfd not loaded?)")
    gpu.problems.append(f"the KFD does not list this card: {why}")
    _fill_from_pci(root, gpu, read_function(root, bdf, amdgpu_attrs=True))
    return gpu


def _model_of(root: Root, gpu: Gpu) -> ModelName:
    fn, kfd = gpu.pci, gpu.kfd
    device = fn.device if fn else (kfd.props.get("device_id") if kfd else None)
    return name_gpu(gpu.processor, device, fn.revision if fn else None, gpu.cu_count, gpu.vram_bytes,
                    fn.pci_class if fn else None, root=root, kfd_name=kfd.name if kfd else None)
