"""GPUs, PCIe topology and host facts, read from files under a Root (sysfs, procfs, /dev) —
no ROCm userspace needed. Nothing here prints or exits.

    from rocmrevive.hardware import scan
    hw = scan(Root("/")); [(g.label, str(g.target), g.model.name) for g in hw.gpus]
"""
from __future__ import annotations


def scan(root, *, rocminfo_text=None):
    from rocmrevive.hardware.gpus import scan as _scan  # noqa: PLC0415 — the package's face: importing one hardware module does not load the scan

    return _scan(root, rocminfo_text=rocminfo_text)


__all__ = ["scan"]
