"""Host facts that decide peer-to-peer and RCCL behaviour: CPU vendor/family, kernel release,
command line and build options, amdgpu module parameters, the IOMMU (ECOSYSTEM §4.4).

    host = read_host(Root("/")); host.iommu.mode; host.kernel_config.get("CONFIG_HSA_AMD_P2P")
"""
from __future__ import annotations

import gzip
import shlex
from dataclasses import dataclass, field

from rocmrevive.hardware.sysfs import list_dir, read_text
from rocmrevive.rootfs import Root

P2P_CONFIG = ("CONFIG_HSA_AMD_P2P", "CONFIG_PCI_P2PDMA", "CONFIG_DMABUF_MOVE_NOTIFY")
WATCHED_CONFIG = P2P_CONFIG + ("CONFIG_HSA_AMD", "CONFIG_DRM_AMDGPU")
AMDGPU_PARAMS = ("pcie_p2p", "noretry", "vramlimit", "vis_vramlimit", "ppfeaturemask",
                 "ras_enable", "aspm", "runpm")
IOMMU_CMDLINE = ("iommu", "amd_iommu", "intel_iommu", "iommu.passthrough")


@dataclass
class Cpu:
    vendor: str | None = None        # "AuthenticAMD", "GenuineIntel"
    family: int | None = None
    model_name: str | None = None
    virtualized: bool = False        # the "hypervisor" cpuinfo flag

    @property
    def amd_zen_or_newer(self) -> bool:
        """drivers/pci/p2pdma.c cpu_supports_p2pdma(): any AMD CPU of family >= 0x17."""
        return self.vendor == "AuthenticAMD" and (self.family or 0) >= 0x17

    def to_json(self) -> dict:
        return {"vendor": self.vendor, "family": self.family, "model_name": self.model_name,
                "virtualized": self.virtualized}


@dataclass
class Iommu:
    units: list[str] = field(default_factory=list)        # /sys/class/iommu/*
    group_types: dict[int, str] = field(default_factory=dict)
    cmdline: dict[str, str] = field(default_factory=dict)

    @property
    def enabled(self) -> bool:
        return bool(self.units) or bool(self.group_types)

    @property
    def mode(self) -> str:
        """passthrough | translated | mixed | off | unknown"""
        types = set(self.group_types.values())
        if types:
            if types <= {"identity"}:
                return "passthrough"
            if "identity" in types:
                return "mixed"
            return "translated"
        if self.units:
            pt = self.cmdline.get("iommu") == "pt" or self.cmdline.get("iommu.passthrough") in ("1", "y", "on")
            return "passthrough" if pt else "unknown"
        return "off"

    def to_json(self) -> dict:
        counts: dict[str, int] = {}
        for t in self.group_types.values():
            counts[t] = counts.get(t, 0) + 1
        return {"enabled": self.enabled, "mode": self.mode, "units": self.units,
                "groups": len(self.group_types), "group_types": counts, "cmdline": self.cmdline}


@dataclass
class Host:
    cpu: Cpu
    kernel_release: str | None
    cmdline: str | None
    kernel_config: dict[str, str]    # option -> "y"/"m"/"n" (n = "is not set")
    kernel_config_source: str | None
    amdgpu_params: dict[str, str]
    iommu: Iommu
    problems: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"cpu": self.cpu.to_json(), "kernel": {
            "release": self.kernel_release, "cmdline": self.cmdline,
            "config": self.kernel_config, "config_source": self.kernel_config_source},
            "amdgpu_params": self.amdgpu_params, "problems": self.problems}


def read_cpu(root: Root) -> Cpu:
    text, _ = read_text(root.path("/proc/cpuinfo"), limit=8 << 20)
    cpu = Cpu()
    if not text:
        return cpu
    for line in text.splitlines():
        if not line.strip():
            if cpu.vendor:
                break  # the first processor block is enough
            continue
        key, _, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if key == "vendor_id":
            cpu.vendor = value
        elif key == "cpu family":
            cpu.family = int(value) if value.isdigit() else None
        elif key == "model name":
            cpu.model_name = value
        elif key == "flags":
            cpu.virtualized = "hypervisor" in value.split()
    return cpu


def parse_cmdline(text: str) -> dict[str, str]:
    try:
        words = shlex.split(text)
    except ValueError:
        words = text.split()
    out = {}
    for w in words:
        key, eq, value = w.partition("=")
        if key in IOMMU_CMDLINE or key.startswith("amdgpu."):
            out[key] = value if eq else ""
    return out


def parse_kernel_config(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line.startswith("CONFIG_"):
            key, _, value = line.partition("=")
            if key in WATCHED_CONFIG:
                out[key] = value.strip()
        elif line.startswith("# CONFIG_") and line.endswith(" is not set"):
            key = line[2:-len(" is not set")]
            if key in WATCHED_CONFIG:
                out[key] = "n"
    return out


def read_kernel_config(root: Root, release: str | None) -> tuple[dict[str, str], str | None]:
    if release:
        path = f"/boot/config-{release}"
        text, _ = read_text(root.path(path), limit=16 << 20)
        if text:
            return parse_kernel_config(text), path
    try:
        with gzip.open(root.path("/proc/config.gz"), "rt", encoding="utf-8", errors="replace") as f:
            return parse_kernel_config(f.read(16 << 20)), "/proc/config.gz"
    except (OSError, EOFError):
        return {}, None


def read_iommu(root: Root, cmdline: dict[str, str]) -> Iommu:
    io = Iommu(units=list_dir(root.path("/sys/class/iommu")), cmdline=cmdline)
    base = "/sys/kernel/iommu_groups"
    for g in list_dir(root.path(base)):
        if not g.isdigit():
            continue
        text, _ = read_text(root.path(f"{base}/{g}/type"))
        if text and text.strip():
            io.group_types[int(g)] = text.strip()
    return io


def read_host(root: Root) -> Host:
    problems = []
    release, _ = read_text(root.path("/proc/sys/kernel/osrelease"))
    release = release.strip() if release else None
    cmd, problem = read_text(root.path("/proc/cmdline"))
    if problem:
        problems.append(f"/proc/cmdline: {problem}")
    cmd = cmd.strip() if cmd else None
    flags = parse_cmdline(cmd) if cmd else {}
    config, source = read_kernel_config(root, release)
    params = {}
    for name in AMDGPU_PARAMS:
        text, _ = read_text(root.path(f"/sys/module/amdgpu/parameters/{name}"))
        if text is not None:
            params[name] = text.strip()
    return Host(read_cpu(root), release, cmd, config, source, params, read_iommu(root, flags), problems)
