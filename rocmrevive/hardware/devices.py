"""The device targets a command works for: ``--target`` values, else the GPUs the machine shows.

    resolve_devices(Root("/"), ["gfx906:sramecc+:xnack-"])   # ([TargetId(...)], "--target")
"""
from __future__ import annotations

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.errors import RevError
from rocmrevive.hardware import gpus


def resolve_devices(root, targets=(), *, processor: str | None = None) -> tuple[list[TargetId], str]:
    """``--target`` values (parsed), else the distinct targets of the detected GPUs (KFD target
    version, SRAM ECC from its capability, XNACK from ``amdgpu.noretry``), optionally only
    those of one ``processor``. Raises USAGE for a bad target, NOTHING_SUPPORTED for none."""
    devices, source, _others = partition_devices(root, targets, processor=processor)
    return devices, source


def partition_devices(root, targets=(), *, processor: str | None = None
                      ) -> tuple[list[TargetId], str, list[TargetId]]:
    """``resolve_devices`` and, from the same single scan, the detected targets of other
    processors (empty with ``--target``).

        devices, source, others = partition_devices(root, (), processor="gfx906")
    """
    if targets:
        out: list[TargetId] = []
        for t in targets:
            try:
                tid = TargetId.parse(t)
            except ValueError as exc:
                raise RevError("USAGE", f"--target {t}: {exc}") from None
            if tid not in out:
                out.append(tid)
        return out, "--target", []

    out = []
    others: list[TargetId] = []
    for gpu in gpus.scan(root).gpus:  # by attribute: the scan is counted by the tests
        if gpu.target is None:
            continue
        into = others if processor and gpu.target.processor != processor else out
        if gpu.target not in into:
            into.append(gpu.target)
    if not out:
        what = f"{processor} GPU" if processor else "AMD GPU"
        raise RevError("NOTHING_SUPPORTED",
                       f"no {what} found under {root.base}; pass --target {processor or 'gfx906'} "
                       f"to work for a card that is not in this machine")
    return out, "detected", others
