"""Each card's vBIOS version (amdgpu's ``vbios_version`` in the card's PCI sysfs folder) and what
is known about it. Owners cross-flash MI50s (Radeon Pro VII / V420 vBIOS) for a display output or
a full BAR; the flash changes the PCI id the card reports and, on 32 GB cards, the BAR.

Known versions, each from a capture in tests/captures/:

* ``113-D1631700-111``: the MI50 32GB server vBIOS ("Vega20 A1 SERVER XL D16317 Hynix/Samsung 32GB
  8HI"), gfx906_mi50x4_env_summary_mixa3607.txt;
* ``113-D1640200-043``: the Radeon Pro V420 vBIOS on an MI50 32GB, which then reports PCI id
  1002:66a0 and is display-capable, gfx906_mi50_66a0_lspci_sysfs_vulkan_hip_lota09.txt.

ROCm#4793: MI50 32GB cards exposing a 16 GiB BAR had no P2P until flashed with a vBIOS with a
full BAR (gfx906_mi50x2_lspci_vvv_nn_bandwidth_rocm4793.txt). The file is read through
``fs.read_regular`` (no link followed, no FIFO, capped): a sysfs tree is a folder under --root.

    read_vbios(root, gpu)   # "113-D1631700-111" or None
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from rocmrevive.errors import RevError
from rocmrevive.fs import read_regular
from rocmrevive.hardware.findings import Finding, FixKind, Severity
from rocmrevive.rootfs import Root

MAX_VBIOS = 4096
_VERSION = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,63}$")


@dataclass(frozen=True)
class KnownVbios:
    version: str
    what: str
    cross_flashed: bool
    source: str


KNOWN: tuple[KnownVbios, ...] = (
    KnownVbios("113-D1631700-111", "the MI50 32GB server vBIOS (Vega20 A1 SERVER XL D16317, 32GB)", False,
               "tests/captures/gfx906_mi50x4_env_summary_mixa3607.txt"),
    KnownVbios("113-D1640200-043", "the Radeon Pro V420 vBIOS, cross-flashed onto an MI50 32GB (the card then "
               "reports PCI id 1002:66a0 and drives a display)", True,
               "tests/captures/gfx906_mi50_66a0_lspci_sysfs_vulkan_hip_lota09.txt"),
)


def vbios_path(gpu) -> str | None:
    if gpu.pci and gpu.pci.path:
        return f"{gpu.pci.path}/vbios_version"
    return f"/sys/bus/pci/devices/{gpu.bdf}/vbios_version" if gpu.bdf else None


def read_vbios(root: Root, gpu) -> tuple[str | None, str | None]:
    """(version, None), (None, None) when the card has no such file, or (None, problem)."""
    path = vbios_path(gpu)
    if path is None:
        return None, None
    try:
        raw = read_regular(root.path(path), max_size=MAX_VBIOS, what=path)
    except FileNotFoundError:
        return None, None
    except RevError as exc:
        return None, exc.message
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    text = raw.decode("ascii", "replace").strip()
    if not _VERSION.match(text):
        return None, f"{path}: not a vBIOS version ({len(raw)} bytes)"
    return text, None


def known(version: str | None) -> KnownVbios | None:
    return next((k for k in KNOWN if k.version == version), None)


def vbios_findings(root: Root, hw) -> list[Finding]:
    """One note per card with its vBIOS version (and what is known of it); a warning where a
    32 GB gfx906 card with a partial BAR names the vBIOS as the way to a full one (ROCm#4793)."""
    out: list[Finding] = []
    for g in hw.gpus:
        if g.processor != "gfx906":
            continue
        version, problem = read_vbios(root, g)
        name = f"{g.label} ({g.model.name}, {g.bdf})"
        if problem:
            out.append(Finding("vbios-unreadable", Severity.INFO, g.label, f"{name}: vBIOS version unreadable",
                               problem, "none", FixKind.NONE))
            continue
        if version is None:
            continue
        k = known(version)
        data = {"vbios_version": version, "known": k.what if k else None, "source": k.source if k else None,
                "cross_flashed": k.cross_flashed if k else None}
        msg = f"{name}: vBIOS {version}" + (f", {k.what}" if k else "")
        cause = (f"known from {k.source}" if k else "a vBIOS rocmrevive has no record of") + \
            ("; a cross-flashed card reports another PCI id and model name than the card it is" if k and k.cross_flashed else "")
        out.append(Finding("vbios", Severity.INFO, g.label, msg, cause, "none", FixKind.NONE, data))
        vram = g.vram_bytes or 0
        if g.large_bar is False and vram >= 30 << 30:
            out.append(Finding(
                "vbios-partial-bar", Severity.WARNING, g.label,
                f"{name}: vBIOS {version} exposes a BAR smaller than the card's VRAM",
                "on MI50 32GB cards a vBIOS exposing a 16 GiB BAR kept P2P off until the card was flashed with a "
                "vBIOS with a full BAR (ROCm#4793); the firmware's Above 4G Decoding / Resizable BAR must be on too",
                "enable Above 4G Decoding and Resizable BAR in the firmware; if the BAR stays partial, a vBIOS with a "
                "full BAR (cross-flashing is at your own risk: keep the original image)", FixKind.HARDWARE, data))
    return out
