"""Product names for AMD GPUs, above all the Vega 20 (gfx906) family (ECOSYSTEM §4.3).

Order of evidence: the KFD target (gfx906) decides the family; then (device id, revision) as in
libdrm's amdgpu.ids; then compute units (64 → MI60, 60 → MI50 / Radeon VII / Radeon Pro VII);
then VRAM (32 GiB → MI60 / MI50 32GB; 16 GiB → MI50 16GB / Radeon VII / Radeon Pro VII); then the
PCI class (0x0380 headless Instinct, 0x0300 VGA). A reflashed vBIOS changes ids and subsystem, so
a name reached without a matching amdgpu.ids entry is marked as a guess.

    name_gpu("gfx906", 0x66A1, 0x02, 60, 32 << 30, 0x038000)
    # ModelName(name='AMD Instinct MI50 32GB', certain=True, reason=...)
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# kernel amdgpu_drv.c CHIP_VEGA20
VEGA20_DEVICE_IDS = frozenset({0x66A0, 0x66A1, 0x66A2, 0x66A3, 0x66A4, 0x66A7, 0x66AF})

# libdrm amdgpu.ids (device, revision) entries for Vega 20
AMDGPU_IDS = {
    (0x66A1, 0x02): "AMD Instinct MI60 / MI50",
    (0x66A1, 0x06): "AMD Radeon Pro VII",
    (0x66AF, 0xC1): "AMD Radeon VII",
}

# PCI device id -> processor, used only when the KFD does not list a card. From the fallback
# map in captures/pci_ids_vega20_table_and_rccl_warnings.txt (lota09/local_LLM_llama) plus
# 0x7312 (Navi 10, gfx1010; captures/mixed_gfx906_gfx1010_lspci_rocmsmi_nixos_notes.txt).
PROCESSOR_BY_PCI_ID = {
    **{d: "gfx906" for d in (0x66A0, 0x66A1, 0x66A3, 0x66A7, 0x66AF)},
    **{d: "gfx900" for d in (0x6860, 0x6861, 0x6862, 0x6863, 0x687F)},
    **{d: "gfx908" for d in (0x738C, 0x7388, 0x738E, 0x7390)},
    **{d: "gfx90a" for d in (0x7408, 0x740C, 0x740F)},
    **{d: "gfx1030" for d in (0x73BF, 0x73DF, 0x73FF)},
    **{d: "gfx1100" for d in (0x744C, 0x7448)},
    0x7312: "gfx1010",
}

# names for the non-gfx906 cards seen in the captures (pci.ids 2023.04 wording)
OTHER_NAMES = {
    0x738C: "AMD Instinct MI100",
    0x7312: "AMD Radeon Pro W5700",
    0x73BF: "AMD Radeon RX 6800/6800 XT/6900 XT",
}

PCI_IDS_FILES = ("/usr/share/misc/pci.ids", "/usr/share/hwdata/pci.ids", "/usr/share/pci.ids")

GIB = 1 << 30


@dataclass(frozen=True)
class ModelName:
    name: str
    certain: bool
    reason: str


def _gib(vram: int | None) -> int | None:
    return None if not vram else round(vram / GIB)


def name_gfx906(device: int | None, revision: int | None, cus: int | None, vram: int | None,
                pci_class: int | None) -> ModelName:
    ids = AMDGPU_IDS.get((device, revision)) if device is not None and revision is not None else None
    gib = _gib(vram)
    idtxt = ("unknown PCI ids" if device is None else
             f"1002:{device:04x} rev {revision:02x}" if revision is not None else f"1002:{device:04x} (revision unknown)")
    if ids in ("AMD Radeon VII", "AMD Radeon Pro VII"):
        return ModelName(ids, True, f"amdgpu.ids: {idtxt} is {ids}")
    if ids:  # MI60 / MI50
        if cus == 64:
            return ModelName("AMD Instinct MI60", True, f"amdgpu.ids: {idtxt} is MI60/MI50; 64 CUs")
        if cus == 60 and gib in (16, 32):
            return ModelName(f"AMD Instinct MI50 {gib}GB", True,
                             f"amdgpu.ids: {idtxt} is MI60/MI50; 60 CUs, {gib} GiB VRAM")
        return ModelName("AMD Instinct MI50/MI60", False,
                         f"amdgpu.ids: {idtxt} is MI60/MI50; CU count or VRAM unknown")
    why = f"{idtxt} not in amdgpu.ids (a reflashed vBIOS?)"
    display = None if pci_class is None else pci_class >> 8
    if cus == 64:
        return ModelName("AMD Instinct MI60", False, f"{why}; guessed from 64 CUs")
    if cus in (60, None) and gib == 32:
        return ModelName("AMD Instinct MI50 32GB", False, f"{why}; guessed from 32 GiB VRAM"
                         + ("" if cus else " (CU count unknown)"))
    if cus in (60, None) and gib == 16:
        if display == 0x0380:
            return ModelName("AMD Instinct MI50 16GB", False, f"{why}; guessed from 16 GiB VRAM, display class 0380")
        if display == 0x0300:
            return ModelName("AMD Radeon VII or Radeon Pro VII", False,
                             f"{why}; 16 GiB VRAM and VGA class 0300")
    return ModelName("unknown gfx906 variant", False, why)


def lookup_pci_ids(root, vendor: int, device: int) -> str | None:
    """Device name from the machine's pci.ids (under the root), if it has one."""
    for mp in PCI_IDS_FILES:
        path: Path = root.path(mp)
        try:
            f = open(path, encoding="utf-8", errors="replace")
        except OSError:
            continue
        with f:
            vtag, dtag, in_vendor = f"{vendor:04x}", f"\t{device:04x}", False
            for line in f:
                if not line or line[0] == "#":
                    continue
                if line[0] != "\t":
                    if in_vendor:
                        return None
                    in_vendor = line.startswith(vtag + " ")
                elif in_vendor and line.startswith(dtag + " "):
                    return line[len(dtag):].strip()
        return None
    return None


def name_gpu(processor: str | None, device: int | None, revision: int | None, cus: int | None,
             vram: int | None, pci_class: int | None, *, root=None, kfd_name: str | None = None) -> ModelName:
    if processor == "gfx906" or (processor is None and device in VEGA20_DEVICE_IDS):
        return name_gfx906(device, revision, cus, vram, pci_class)
    if device in OTHER_NAMES:
        return ModelName(OTHER_NAMES[device], False, f"PCI id 1002:{device:04x}")
    if root is not None and device is not None:
        found = lookup_pci_ids(root, 0x1002, device)
        if found:
            return ModelName(f"AMD {found}", False, f"pci.ids entry for 1002:{device:04x}")
    parts = [p for p in (kfd_name, processor) if p]
    return ModelName(" ".join(parts) if parts else "unknown AMD GPU", False, "no name known for these ids")
