"""``StrEnum``: the base of the status words that a core module produces and the renderers and
the JSON compare against (``enum.StrEnum`` from Python 3.11, here for 3.10). A member IS its
value as a ``str``: it compares equal to it, ``json.dumps`` writes the value, and ``str()``,
f-strings and rich show the value, never ``Class.MEMBER``.

    class Origin(StrEnum):
        CACHE = "cache"
    Origin.CACHE == "cache"; json.dumps({"o": Origin.CACHE}) == '{"o": "cache"}'; f"{Origin.CACHE}" == "cache"
"""
from __future__ import annotations

from enum import Enum


class StrEnum(str, Enum):
    """A status word: a ``str`` whose members are their values."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)
