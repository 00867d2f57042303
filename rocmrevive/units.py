"""How a size in bytes reads in every report and error line: ``size_text(72_192)`` is
"70.5 KiB", ``size_text(3 << 30)`` "3 GiB", ``size_text(9)`` "9 B" (binary units; a whole number
when it is one to a twentieth). The one byte formatter of the package: the install table, detect's
VRAM and BAR column, cache sizes and the archive limits' refusals all use it.
"""
from __future__ import annotations

_UNITS = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def size_text(n: int | float) -> str:
    """``n`` bytes in the largest binary unit it fills (0 and small sizes as bytes: "0 B")."""
    for unit, size in _UNITS:
        if n >= size:
            v = n / size
            return f"{v:.0f} {unit}" if abs(v - round(v)) < 0.05 else f"{v:.1f} {unit}"
    return f"{int(n)} B"


def format_bytes(n: int | None) -> str:
    """``size_text``, with "?" for a size that is unknown or 0 (a BAR or VRAM nobody reported)."""
    return size_text(n) if n else "?"
