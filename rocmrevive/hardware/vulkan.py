"""Which GPUs the Vulkan loader sees, from ``vulkaninfo`` (``--summary`` or full) or from
llama.cpp's device lists (``--list-devices``, the ``ggml_vulkan:`` banner). Mesa's RADV names a
device by its chip, ``AMD Radeon Graphics (RADV VEGA20)``; the KFD ``name`` of a gfx906 node is
``vega20``, so the two are matched by that codename.

    parse_vulkan_devices(text)  # ['AMD Radeon Graphics (RADV VEGA20)', ...]
"""
from __future__ import annotations

import re

_PATTERNS = (
    re.compile(r"^\s*deviceName\s*[=:]\s*(.+?)\s*$"),                 # vulkaninfo
    re.compile(r"^\s*GPU id\s*[=:]\s*\d+\s*\((.+)\)\s*:?\s*$"),         # vulkaninfo "GPU id : 0 (name):"
    re.compile(r"^\s*Vulkan\d+:\s*(.+?)\s*(?:\(\d+ MiB.*)?$"),          # llama.cpp --list-devices
    re.compile(r"^\s*ggml_vulkan:\s*\d+\s*=\s*(.+?)\s*(?:\|.*)?$"),     # ggml_vulkan banner
)


def parse_vulkan_devices(text: str) -> list[str]:
    out: list[str] = []
    for line in text.splitlines():
        for pat in _PATTERNS:
            m = pat.match(line)
            if m:
                name = m.group(1).strip()
                if name not in out:
                    out.append(name)
                break
    return out


def radv_codename(device_name: str) -> str | None:
    m = re.search(r"RADV ([A-Z0-9_]+)", device_name)
    return m.group(1).lower() if m else None
