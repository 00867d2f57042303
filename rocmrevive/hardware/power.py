"""amdgpu power-management files: ``pp_dpm_mclk`` / ``pp_dpm_sclk`` list the DPM levels, the
current one marked with ``*`` (kernel.org amdgpu docs, "pp_dpm_*").

    parse_dpm("0: 350Mhz *\\n1: 800Mhz\\n2: 1000Mhz\\n")
    # DpmLevels(levels_mhz=[350, 800, 1000], current=0)
"""
from __future__ import annotations

import re
from dataclasses import dataclass

_LEVEL = re.compile(r"^\s*(\d+):\s*(\d+)\s*mhz\s*(\*)?\s*$", re.I)


@dataclass
class DpmLevels:
    levels_mhz: list[int]
    current: int | None

    @property
    def current_mhz(self) -> int | None:
        if self.current is None or not 0 <= self.current < len(self.levels_mhz):
            return None
        return self.levels_mhz[self.current]

    @property
    def at_lowest(self) -> bool:
        return len(self.levels_mhz) > 1 and self.current == 0

    def to_json(self) -> dict:
        return {"levels_mhz": self.levels_mhz, "current_level": self.current,
                "current_mhz": self.current_mhz}


def parse_dpm(text: str | None) -> DpmLevels | None:
    if not text:
        return None
    levels, current = [], None
    for line in text.splitlines():
        m = _LEVEL.match(line)
        if not m:
            continue
        levels.append(int(m.group(2)))
        if m.group(3):
            current = len(levels) - 1
    return DpmLevels(levels, current) if levels else None
