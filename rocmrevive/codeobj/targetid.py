"""Target ids: ``gfx906``, ``gfx906:sramecc+:xnack-``, ``gfx9-generic`` (LLVM AMDGPUUsage,
"Target ID" and "Generic Processors").

    TargetId.parse("gfx906:sramecc+:xnack-").can_load_on(TargetId.parse("gfx906:sramecc+:xnack-"))

A feature is ``"any"`` (not written), ``"on"`` (``+``), ``"off"`` (``-``) or ``None`` when the
processor does not support it at all.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Generic, Iterable, TypeVar, cast

from rocmrevive.strenum import StrEnum

ANY, ON, OFF = "any", "on", "off"


class LoadVerdict(StrEnum):
    """Does code load on a device (``TargetId.load_verdict``, ``Coverage.verdict``)."""

    LOADS = "yes"               # certainly
    IF_MODE = "if-mode"         # if the device runs in the mode the code asks for (its id leaves it open)
    NO = "no"
    OTHER_MODE = "other-mode"   # (Coverage) only code for another mode
    MISSING = "missing"         # (Coverage) no code for the processor at all

# Processors and the features they support (AMDGPUUsage "Processors" table).
_SRAMECC = {"gfx906", "gfx908", "gfx90a", "gfx940", "gfx941", "gfx942", "gfx950",
            "gfx9-4-generic"}
_XNACK = {"gfx801", "gfx810", "gfx900", "gfx902", "gfx904", "gfx906", "gfx908", "gfx909",
          "gfx90a", "gfx90c", "gfx940", "gfx941", "gfx942", "gfx950", "gfx1010", "gfx1011",
          "gfx1012", "gfx1013", "gfx9-generic", "gfx9-4-generic", "gfx10-1-generic"}

# Generic processors and the concrete processors their code runs on (AMDGPUUsage
# "Generic processor versions"); generic code needs code object v6.
GENERIC_MEMBERS: dict[str, frozenset[str]] = {
    "gfx9-generic": frozenset({"gfx900", "gfx902", "gfx904", "gfx906", "gfx909", "gfx90c"}),
    "gfx9-4-generic": frozenset({"gfx940", "gfx941", "gfx942", "gfx950"}),
    "gfx10-1-generic": frozenset({"gfx1010", "gfx1011", "gfx1012", "gfx1013"}),
    "gfx10-3-generic": frozenset({"gfx1030", "gfx1031", "gfx1032", "gfx1033", "gfx1034",
                                   "gfx1035", "gfx1036"}),
    "gfx11-generic": frozenset({"gfx1100", "gfx1101", "gfx1102", "gfx1103", "gfx1150",
                                 "gfx1151", "gfx1152", "gfx1153"}),
    "gfx12-generic": frozenset({"gfx1200", "gfx1201"}),
}

# KFD topology gfx_target_version (major*10000 + minor*100 + stepping) -> processor.
# Steppings are hexadecimal in names: 90010 -> gfx90a, 90012 -> gfx90c.
def processor_from_gfx_target_version(value: int) -> str | None:
    if value <= 0:
        return None
    major, rest = divmod(value, 10000)
    minor, step = divmod(rest, 100)
    if major < 6 or minor > 15 or step > 15:
        return None
    return f"gfx{major}{minor:x}{step:x}"


_PROC_RE = re.compile(r"^(gfx[0-9a-f]{3,4}|gfx[0-9]+(?:-[0-9]+)*-generic)$")
_FEATURE_RE = re.compile(r"^(sramecc|xnack)([+-])$")


@dataclass(frozen=True, order=True)
class TargetId:
    processor: str
    sramecc: str | None = None
    xnack: str | None = None

    # construction ----------------------------------------------------------------------
    @classmethod
    @functools.lru_cache(maxsize=1024)  # a fat binary names the same few ids hundreds of times; TargetId is frozen
    def parse(cls, text: str) -> "TargetId":
        """Parse ``gfx906``, ``gfx906:sramecc+:xnack-``, or a full
        ``amdgcn-amd-amdhsa--gfx906:xnack-`` / bundle entry id ``hipv4-amdgcn-amd-amdhsa--gfx906``.
        Raises ValueError on anything else."""
        s = text.strip()
        if "amdhsa" in s:
            # <kind>-amdgcn-amd-amdhsa-<env>-<target> or amdgcn-amd-amdhsa-<env>-<target>
            idx = s.index("amdhsa")
            rest = s[idx + len("amdhsa"):]
            if not rest.startswith("-"):
                raise ValueError(f"no target in {text!r}")
            rest = rest[1:]
            # the environment field may be empty or a word ("unknown"); the target follows it
            if "-" in rest and not rest.startswith("gfx"):
                rest = rest.split("-", 1)[1]
            elif rest.startswith("-"):
                rest = rest[1:]
            s = rest
        parts = s.split(":")
        proc = parts[0]
        if not _PROC_RE.match(proc):
            raise ValueError(f"not a GPU processor: {proc!r} (in {text!r})")
        feats: dict[str, str] = {}
        for part in parts[1:]:
            m = _FEATURE_RE.match(part)
            if not m:
                raise ValueError(f"bad target feature {part!r} in {text!r}")
            name, sign = m.groups()
            if name in feats:
                raise ValueError(f"feature {name} given twice in {text!r}")
            feats[name] = ON if sign == "+" else OFF
        sramecc = feats.get("sramecc", ANY if proc in _SRAMECC else None)
        xnack = feats.get("xnack", ANY if proc in _XNACK else None)
        # The runtime names a device's generic ISA with the device's own features
        # ("gfx9-generic:sramecc+:xnack-" in rocminfo), although the compiler rejects them.
        lenient = proc.endswith("-generic")
        if not lenient and proc not in _SRAMECC and "sramecc" in feats:
            raise ValueError(f"{proc} does not support sramecc ({text!r})")
        if not lenient and proc not in _XNACK and "xnack" in feats:
            raise ValueError(f"{proc} does not support xnack ({text!r})")
        return cls(proc, sramecc, xnack)

    # queries -----------------------------------------------------------------------------
    @property
    def is_generic(self) -> bool:
        return self.processor.endswith("-generic")

    def covers_processor(self, processor: str) -> bool:
        """True when code for this target's processor runs on ``processor`` (generics included)."""
        if self.processor == processor:
            return True
        return processor in GENERIC_MEMBERS.get(self.processor, ())

    def load_verdict(self, device: "TargetId") -> LoadVerdict:
        """Whether code for this target loads on ``device``: ``LoadVerdict.LOADS`` (certainly),
        ``IF_MODE`` (the code wants a mode the device's id leaves open: it loads if the device
        runs in it) or ``NO``. The runtime's rule: same processor (or a generic covering it), and each
        feature of the code either "any"/unsupported or equal to the device's setting."""
        if not self.covers_processor(device.processor):
            return LoadVerdict.NO
        unsure = False
        for mine, theirs in ((self.sramecc, device.sramecc), (self.xnack, device.xnack)):
            if mine in (None, ANY):
                continue
            if theirs in (None, ANY):
                # a device always runs in a definite mode; "any" here means "unknown", so only
                # code that does not care is certain to load.
                unsure = True
            elif mine != theirs:
                return LoadVerdict.NO
        return LoadVerdict.IF_MODE if unsure else LoadVerdict.LOADS

    def can_load_on(self, device: "TargetId") -> bool:
        """True when code for this target certainly loads on ``device`` (``load_verdict``)."""
        return self.load_verdict(device) == LoadVerdict.LOADS

    @staticmethod
    def coverage(code: Iterable[C], devices: Iterable["TargetId"]) -> list["Coverage[C]"]:
        """Does this code load on these devices? One ``Coverage`` per device, in order.

        ``code`` holds ``TargetId`` values or anything with a ``.target`` (an inspect
        ``CodeObject``), so callers keep their code object versions and offsets:

            [c.device for c in TargetId.coverage(report.entries, gpus) if not c.loads]
        """
        items = list(code)
        out = []
        for dev in devices:
            covering, loads, conditional = [], [], []
            for item in items:
                t = item if isinstance(item, TargetId) else cast(Any, item).target   # a CodeObject
                if not t.covers_processor(dev.processor):
                    continue
                covering.append(item)
                verdict = t.load_verdict(dev)
                if verdict == LoadVerdict.LOADS:
                    loads.append(item)
                elif verdict == LoadVerdict.IF_MODE:
                    conditional.append(item)
            out.append(Coverage(dev, tuple(covering), tuple(loads), tuple(conditional)))
        return out

    def __str__(self) -> str:
        out = self.processor
        if self.sramecc in (ON, OFF):
            out += ":sramecc" + ("+" if self.sramecc == ON else "-")
        if self.xnack in (ON, OFF):
            out += ":xnack" + ("+" if self.xnack == ON else "-")
        return out

    def to_json(self) -> str:
        return str(self)


C = TypeVar("C")


@dataclass(frozen=True)
class Coverage(Generic[C]):
    """What a file's code does for one device (``TargetId.coverage``).

    ``covering``: code for the device's processor (generics included), in any mode;
    ``loads``: the part certain to load; ``conditional``: the part that loads only if the
    device runs in the mode the code asks for (the device's id leaves that mode open)."""

    device: TargetId
    covering: tuple[C, ...] = ()
    loads: tuple[C, ...] = ()
    conditional: tuple[C, ...] = ()

    @property
    def verdict(self) -> LoadVerdict:
        """``LoadVerdict.LOADS``, ``IF_MODE``, ``OTHER_MODE`` (only code for another mode) or ``MISSING``
        (no code for the processor at all)."""
        if self.loads:
            return LoadVerdict.LOADS
        if self.conditional:
            return LoadVerdict.IF_MODE
        return LoadVerdict.OTHER_MODE if self.covering else LoadVerdict.MISSING

    @property
    def ok(self) -> bool:
        """True when some code certainly loads on the device."""
        return bool(self.loads)

