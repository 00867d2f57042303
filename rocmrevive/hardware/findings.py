"""Doctor findings about the hardware: each with a severity, what was seen, the cause and the fix
(a command or a setting). ``error`` means ROCm work will fail as things stand; ``warning`` means
it will be slow or fail in some setups (multi-GPU, RCCL); ``info`` is context.

    for f in hardware_findings(hw): print(f.severity, f.message)
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocmrevive.hardware.vulkan import parse_vulkan_devices, radv_codename
from rocmrevive.strenum import StrEnum
from rocmrevive.units import format_bytes


class Severity(StrEnum):
    """A finding's severity (its JSON ``severity``), in the order doctor lists them."""

    ERROR = "error"      # ROCm work will fail as things stand
    WARNING = "warning"  # slow, or failing in some setups (multi-GPU, RCCL)
    INFO = "info"        # context


class FixKind(StrEnum):
    """What a finding's ``fix`` is."""

    COMMAND = "command"    # a command to run
    SETTING = "setting"    # a setting (firmware, kernel command line, environment)
    HARDWARE = "hardware"  # a change to the machine
    NONE = "none"          # nothing to do (the fix text says why)

RELATION_TEXT = {
    "PIX": "behind one PCIe switch",
    "PXB": "behind several PCIe switches",
    "PHB": "on different root ports of one root complex",
    "NODE": "on different root complexes",
    "SYS": "on different CPU sockets",
}


@dataclass
class Finding:
    id: str
    severity: Severity
    subject: str
    message: str
    cause: str
    fix: str
    fix_kind: FixKind = FixKind.COMMAND
    data: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"id": self.id, "severity": self.severity, "subject": self.subject,
                "message": self.message, "cause": self.cause, "fix": self.fix,
                "fix_kind": self.fix_kind, "data": self.data}


def _gpu_name(g) -> str:
    return f"{g.label} ({g.model.name}, {g.bdf})"


def _sysfs_dir(g) -> str:
    return f"/sys/class/drm/{g.card}/device" if g.card else f"/sys/bus/pci/devices/{g.bdf}"


def _presence(hw) -> list[Finding]:
    out = []
    if not hw.gpus:
        where = "the KFD topology lists no GPU" if hw.kfd_present else "there is no KFD topology"
        out.append(Finding("no-amd-gpu", Severity.INFO, "machine", f"no AMD GPU found: {where} and no AMD "
                           "display device is on the PCI bus", "nothing for rocmrevive to do here",
                           "none", FixKind.NONE))
    elif not hw.gfx906:
        procs = ", ".join(sorted({g.processor or "unknown" for g in hw.gpus}))
        out.append(Finding("no-gfx906", Severity.INFO, "machine", f"no gfx906 GPU: found {procs}",
                           "rocmrevive restores gfx906 (MI50/MI60/Radeon VII) support only",
                           "none", FixKind.NONE))
    for g in hw.gpus:
        if g.node is None:
            sev = Severity.ERROR if g.processor == "gfx906" else Severity.WARNING
            out.append(Finding("kfd-missing", sev, g.label,
                               f"{_gpu_name(g)} is on the PCI bus but the KFD does not list it",
                               "; ".join(p for p in g.problems if "KFD" in p) or "amdgpu did not initialise it",
                               "check `sudo dmesg | grep -iE 'amdgpu|kfd'`; load the driver with "
                               "`sudo modprobe amdgpu`; a 'Bar size smaller than needed' or 'failed IP "
                               "discovery' message means Above 4G Decoding / Resizable BAR must be enabled"))
        other = [p for p in g.problems if "KFD does not list" not in p]
        if other:
            out.append(Finding("device-read-problems", Severity.WARNING, g.label,
                               f"{_gpu_name(g)}: some sysfs files could not be read",
                               "; ".join(other[:6]), "run as root, or compare with `lspci -vvv -s "
                               f"{(g.bdf or '')[5:]}`", data={"problems": other}))
    for p in hw.problems:
        out.append(Finding("read-problem", Severity.WARNING, "machine", p, "a sysfs file is missing or garbled",
                           "none", FixKind.NONE))
    return out


def _bars_and_links(hw) -> list[Finding]:
    out = []
    for g in hw.gpus:
        if g.large_bar is False:
            out.append(Finding(
                "small-bar", Severity.WARNING, g.label,
                f"{_gpu_name(g)}: BAR {format_bytes(g.bar_bytes)} is smaller than its {format_bytes(g.vram_bytes)} VRAM",
                "the CPU sees only part of VRAM (no large BAR): the kernel refuses peer-to-peer DMA "
                "for this card, and some tools skip it ('Bar size smaller than needed')",
                "enable 'Above 4G Decoding' and 'Resizable BAR' in the BIOS setup; MI50 32GB cards "
                "whose vBIOS exposes a 16 GiB BAR need a vBIOS with a full BAR (ROCm#4793)",
                FixKind.SETTING, {"bar_bytes": g.bar_bytes, "vram_bytes": g.vram_bytes}))
        loc = g.location
        link = (loc.slot_link if loc and loc.slot_link and loc.slot_link.known else None) or \
            (g.pci.link if g.pci else None)
        if link and link.width and link.max_width and link.width < link.max_width:
            out.append(Finding(
                "link-narrow", Severity.WARNING, g.label,
                f"{_gpu_name(g)}: PCIe link runs x{link.width} of x{link.max_width}",
                "the slot is wired narrower than the card (chipset or shared slot), or the card is "
                "not seated well",
                "move the card to a CPU-attached x16 slot and check the slot's lane sharing in the "
                "board manual", FixKind.HARDWARE, link.to_json()))
        if link and link.speed and link.max_speed and link.speed < link.max_speed:
            out.append(Finding(
                "link-slow", Severity.INFO, g.label,
                f"{_gpu_name(g)}: PCIe link at {link.speed:g} GT/s of {link.max_speed:g} GT/s",
                "amdgpu lowers the link speed while idle; under load it should rise",
                f"read {_sysfs_dir(g)}/current_link_speed again under load", FixKind.NONE, link.to_json()))
        if loc and loc.flat and g.pci:
            out.append(Finding("flat-topology", Severity.INFO, g.label,
                               f"{_gpu_name(g)} sits directly on root bus {loc.root_complex}",
                               "a virtual machine flattens the PCIe tree; topology claims are weak here",
                               "none", FixKind.NONE))
    return out


def _pairs(hw) -> list[Finding]:
    out = []
    unverified = []
    by = {g.index: g for g in hw.gpus}
    for p in hw.pairs:
        a, b = by[p.a], by[p.b]
        if "gfx906" not in (a.processor, b.processor) or a.processor != b.processor:
            continue
        where = RELATION_TEXT.get(p.relation, p.relation)
        if a.location and b.location and p.relation in ("NODE", "SYS"):
            where += f" ({a.location.root_complex} and {b.location.root_complex})"
        subject = f"{a.label},{b.label}"
        fixes = []
        if any("BAR" in x for x in p.blockers):
            fixes.append("enable Above 4G Decoding / Resizable BAR (or flash a full-BAR vBIOS)")
        if any("kernel built without" in x for x in p.blockers):
            fixes.append("boot a kernel built with CONFIG_HSA_AMD_P2P=y, CONFIG_PCI_P2PDMA=y and "
                         "CONFIG_DMABUF_MOVE_NOTIFY=y")
        if any("whitelist" in x or "one host bridge" in x for x in p.blockers):
            fixes.append("put both cards under one PCIe switch or one root complex")
        if any("pcie_p2p" in x for x in p.blockers):
            fixes.append("remove amdgpu.pcie_p2p=0 from the kernel command line")
        if p.p2p_possible is False:
            fixes.append("until then run RCCL/NCCL with NCCL_P2P_DISABLE=1")
            out.append(Finding(
                "p2p-impossible", Severity.WARNING, subject,
                f"{a.label} and {b.label} are {where}: peer-to-peer DMA is not possible, RCCL "
                "all-reduce may fail at init or fall back to slow copies",
                "; ".join(p.blockers), "; ".join(fixes), FixKind.SETTING, p.to_json()))
        elif p.p2p_possible is None:
            unverified.append(p)
        if p.risks and p.p2p_possible is not False:
            out.append(Finding(
                "p2p-risky", Severity.WARNING, subject,
                f"{a.label} and {b.label} are {where}: peer transfers may be slow or hang",
                "; ".join(p.risks),
                "move the card to a CPU-attached slot; or run RCCL/NCCL with NCCL_P2P_DISABLE=1",
                FixKind.HARDWARE, p.to_json()))
    if unverified:
        reasons = sorted({r for p in unverified for r in p.unverified})
        out.append(Finding(
            "p2p-unverified", Severity.INFO, ",".join(f"GPU{p.a}-GPU{p.b}" for p in unverified),
            f"peer-to-peer DMA could not be confirmed for {len(unverified)} GPU pair(s): "
            + ", ".join(f"GPU{p.a}-GPU{p.b} ({p.relation})" for p in unverified[:6])
            + (" ..." if len(unverified) > 6 else ""),
            "; ".join(reasons), "run `rocm-bandwidth-test`, or look for p2p_links under "
            "/sys/class/kfd/kfd/topology/nodes/*/ after boot", FixKind.COMMAND,
            {"pairs": [p.to_json() for p in unverified]}))
    return out


def _iommu(hw) -> list[Finding]:
    io = hw.host.iommu
    if not hw.gfx906 or not io.enabled:
        return []
    amd = hw.host.cpu.vendor == "AuthenticAMD"
    want = "amd_iommu=on iommu=pt" if amd else "iommu=pt"
    if io.mode in ("translated", "mixed"):
        return [Finding(
            "iommu-not-passthrough", Severity.WARNING, "machine",
            "the IOMMU translates GPU DMA ("
            + (", ".join(f"{n} {'group' if n == 1 else 'groups'} of type {t}"
                         for t, n in sorted(io.to_json()["group_types"].items())) or "no group types known")
            + ")",
            "RCCL warns 'Missing \"iommu=pt\" from kernel command line which can lead to system "
            "instablity or hang'; translated DMA also slows host-device and peer transfers",
            f"add `{want}` to GRUB_CMDLINE_LINUX_DEFAULT in /etc/default/grub, run "
            "`sudo update-grub` and reboot", FixKind.SETTING, io.to_json())]
    if io.mode == "unknown":
        return [Finding("iommu-unknown", Severity.INFO, "machine", "an IOMMU is present; its mode is unknown",
                        "no IOMMU group types readable", f"make sure `{want}` is on the kernel command line",
                        FixKind.SETTING, io.to_json())]
    return []


def _clocks(hw) -> list[Finding]:
    out = []
    for g in hw.gpus:
        if g.mclk and g.mclk.at_lowest:
            top = max(g.mclk.levels_mhz)
            d = _sysfs_dir(g)
            out.append(Finding(
                "mclk-lowest", Severity.WARNING, g.label,
                f"{_gpu_name(g)}: memory clock held at its lowest level ({g.mclk.current_mhz} MHz of "
                f"{top} MHz; performance level {g.performance_level or '?'})",
                "normal while idle; if it stays there under load, GEMM and token rates drop 2.5-9x "
                "(reported by MI50 users)",
                f"echo manual | sudo tee {d}/power_dpm_force_performance_level && "
                f"echo {len(g.mclk.levels_mhz) - 1} | sudo tee {d}/pp_dpm_mclk "
                "(or `rocm-smi --setperflevel high`)", FixKind.COMMAND, g.mclk.to_json()))
        if g.performance_level == "low":
            out.append(Finding("perf-level-low", Severity.WARNING, g.label,
                               f"{_gpu_name(g)}: power_dpm_force_performance_level is 'low'",
                               "the card is pinned to its lowest clocks",
                               f"echo auto | sudo tee {_sysfs_dir(g)}/power_dpm_force_performance_level"))
    return out


def access_findings(hw, access) -> list[Finding]:
    if access is None or not hw.gpus:
        return []
    out = []
    kfd_node = next((n for n in access.nodes if n.path == "/dev/kfd"), None)
    if kfd_node is not None and not kfd_node.exists and hw.kfd_present:
        out.append(Finding("dev-kfd-missing", Severity.ERROR, "machine", "/dev/kfd does not exist",
                           "the amdkfd device node was not created (udev, or a container started "
                           "without --device=/dev/kfd)",
                           "on the host: `sudo udevadm trigger`; in a container: run with "
                           "--device=/dev/kfd --device=/dev/dri --group-add render"))
    if access.uid is None:
        out.append(Finding("user-unknown", Severity.INFO, "machine", access.problems[0] if access.problems
                           else f"user {access.user} unknown", "cannot check device-node access",
                           "pass --user NAME", FixKind.NONE))
    elif access.uid != 0 and access.missing_groups:
        groups = ",".join(sorted(set(access.missing_groups) | {"video"}))
        blocked = [n.path for n in access.nodes if n.user_ok is False]
        assumed = any(n.assumed for n in access.nodes)
        out.append(Finding(
            "user-not-in-render-group", Severity.ERROR, access.user,
            f"user {access.user} cannot open {', '.join(blocked)}",
            f"the nodes belong to group {'/'.join(access.missing_groups)}"
            + (" (udev default, assumed)" if assumed else "") + f"; {access.user} is in: "
            + (", ".join(access.groups) or "no groups"),
            f"sudo usermod -aG {groups} {access.user}  (then log out and in again)",
            data=access.to_json()))
    return out


def vulkan_findings(hw, text: str | None) -> list[Finding]:
    if text is None:
        return []
    names = parse_vulkan_devices(text)
    seen = {radv_codename(n) for n in names} - {None}
    out = []
    for g in hw.gpus:
        code = g.kfd.name if g.kfd and g.kfd.name else None
        if code and code in seen:
            dev = next(n for n in names if radv_codename(n) == code)
            out.append(Finding("vulkan-sees-gpu", Severity.INFO, g.label,
                               f"the Vulkan loader sees {g.label} as {dev!r}",
                               "Mesa's RADV driver drives the card without ROCm",
                               "llama.cpp's Vulkan backend is an alternative while a rocBLAS copy "
                               "lacks gfx906", FixKind.NONE, {"vulkan_devices": names}))
        elif g.processor == "gfx906":
            out.append(Finding("vulkan-missing-gpu", Severity.WARNING, g.label,
                               f"the Vulkan loader does not list {g.label}",
                               f"Vulkan devices seen: {', '.join(names) or 'none'}",
                               "install Mesa's Vulkan driver (`sudo apt install mesa-vulkan-drivers`)",
                               data={"vulkan_devices": names}))
    return out


def rocminfo_findings(hw) -> list[Finding]:
    if hw.rocminfo is None or not hw.rocminfo_problems:
        return []
    return [Finding("rocminfo-mismatch", Severity.ERROR, "machine",
                    "rocminfo and the KFD topology disagree: " + "; ".join(hw.rocminfo_problems),
                    "ROCr enumerates a different set of GPUs than sysfs shows (ROCR_VISIBLE_DEVICES, a "
                    "container without all devices, or a card that failed ROCr init)",
                    "unset ROCR_VISIBLE_DEVICES/HIP_VISIBLE_DEVICES and rerun rocminfo; check "
                    "`sudo dmesg | grep -i kfd`", data={"problems": hw.rocminfo_problems})]


def hardware_findings(hw, *, access=None, vulkan_text: str | None = None) -> list[Finding]:
    return (_presence(hw) + _bars_and_links(hw) + _pairs(hw) + _iommu(hw) + _clocks(hw)
            + access_findings(hw, access) + vulkan_findings(hw, vulkan_text) + rocminfo_findings(hw))
