"""What ``explain`` says about one failure line (``Diagnosis``), the rule that says it (``Rule``; a
rule whose text never changes is a ``Said`` row), what the whole text adds (``Context``), and the
small readers every rule uses on a match: the GPU target it names, its processor, the folder of a
path. The rules themselves are in ``diagnose/explain.py``."""
from __future__ import annotations

import re
from dataclasses import KW_ONLY, dataclass, field
from typing import Callable

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.strenum import StrEnum


class Severity(StrEnum):
    """How much one explained line matters (a ``Diagnosis``'s JSON ``severity``)."""

    ERROR = "error"        # the failure itself
    WARNING = "warning"    # works, slower or degraded
    CONTEXT = "context"    # a line that explains another, not a failure itself
    HARMLESS = "harmless"  # printed on gfx906 by design: nothing to fix (the answer says why)

# hipError_t values that appear as bare numbers in messages (hip_runtime_api.h).
HIP_ERRORS = {
    1: "hipErrorInvalidValue", 2: "hipErrorOutOfMemory", 3: "hipErrorNotInitialized",
    98: "hipErrorInvalidDeviceFunction", 100: "hipErrorNoDevice", 101: "hipErrorInvalidDevice",
    200: "hipErrorInvalidImage", 209: "hipErrorNoBinaryForGpu", 217: "hipErrorPeerAccessUnsupported",
    218: "hipErrorInvalidKernelFile", 300: "hipErrorInvalidSource", 301: "hipErrorFileNotFound",
    303: "hipErrorSharedObjectInitFailed", 500: "hipErrorNotFound", 700: "hipErrorIllegalAddress",
    702: "hipErrorLaunchTimeOut", 719: "hipErrorLaunchFailure",
}

_ARCH = r"gfx[0-9]{2,4}[0-9a-f]?(?:-[0-9]+)*(?:-generic)?(?::(?:sramecc|xnack)[+-])*"
_ARCH_RE = re.compile(r"(?<![A-Za-z0-9])(?:amdgcn-amd-amdhsa-[a-z]*-)?(" + _ARCH + r")")


@dataclass
class Diagnosis:
    rule: str
    severity: Severity
    library: str                   # who reports or causes it
    arch: str | None
    cause: str
    fix: str | None                # a command or concrete action
    fixable_by_rocmrevive: bool
    why_not: str | None = None     # when the fix is not rocmrevive's (or nothing can)
    details: dict = field(default_factory=dict)
    lines: list[int] = field(default_factory=list)  # 1-based line numbers
    text: str = ""                 # the first matching line

    @property
    def line_numbers(self) -> list[int]:
        return self.lines

    def to_json(self) -> dict:
        return {"rule": self.rule, "severity": self.severity, "library": self.library,
                "arch": self.arch, "cause": self.cause, "fix": self.fix,
                "fixable_by_rocmrevive": self.fixable_by_rocmrevive, "why_not": self.why_not,
                "details": self.details, "lines": self.lines, "text": self.text}


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: re.Pattern
    build: Callable[[re.Match, "Context"], Diagnosis]


@dataclass(frozen=True)
class Said:
    """A rule's diagnosis that reads the same every time: data, not code. Only the GPU target
    varies: the one the line names, else the log's (``arch="line"``), or the log's (``"log"``).
    None of these is rocmrevive's to fix.

        _r_no_device = Said(Severity.ERROR, "HIP runtime", cause="HIP sees no GPU ...", fix="...", why_not="...")
        Rule("hip-no-device", pattern, _r_no_device.builder("hip-no-device"))
    """

    severity: Severity
    library: str
    _: KW_ONLY
    cause: str
    fix: str
    why_not: str
    arch: str = "line"

    def builder(self, rule: str) -> Callable[[re.Match, "Context"], Diagnosis]:
        """The ``Rule.build`` of rule ``rule``."""
        def build(m: re.Match, ctx: Context) -> Diagnosis:
            arch = arch_of(m, ctx) if self.arch == "line" else ctx.arch
            return Diagnosis(rule, self.severity, self.library, arch, self.cause, self.fix, False, self.why_not)
        return build


@dataclass
class Context:
    """What the whole text says beyond one line (an arch named elsewhere in the log), and which
    processors rocmrevive has sources for."""

    arch: str | None = None
    fixable_processors: tuple[str, ...] = ("gfx906",)
    app: str | None = None     # the application the paste comes from (ollama, llama.cpp, vllm, pytorch)
    rocm: str | None = None    # the ROCm version the paste names (6.4, 7.0.2)
    gpu_init_failed: bool = False  # the paste holds the kernel's own word that a GPU did not initialise
    windows: str | None = None     # the words that show the paste comes from Windows (C:\\, a .dll, "HIP SDK")
    queue_error: bool = False      # the paste shows a GPU queue's asynchronous error (not an API call's status)
    text: str = field(default="", repr=False)  # the whole paste (an entry that needs another line of it, a program's name)
    long: bool = False             # a long paste: the patterns' literal keys are worth reading (explain.KEYS_FROM)
    needs_found: dict[str, bool] = field(default_factory=dict, repr=False)  # a pattern -> whether the paste holds it

    def holds(self, pattern: str) -> bool:
        """Whether the whole paste holds ``pattern`` (searched once per paste, not once per line)."""
        found = self.needs_found.get(pattern)
        if found is None:
            found = self.needs_found[pattern] = re.search(pattern, self.text) is not None
        return found


# ------------------------------------------------------------------------------------------
# what every rule reads from a match

def norm_arch(text: str | None) -> str | None:
    if not text:
        return None
    m = _ARCH_RE.search(text)
    if not m:
        return None
    try:
        return str(TargetId.parse(m.group(1)))
    except ValueError:
        return m.group(1)


def arch_of(m: re.Match, ctx: Context, group: str = "arch") -> str | None:
    got = m.groupdict().get(group)
    return norm_arch(got) or norm_arch(m.string) or ctx.arch


def processor(arch: str | None) -> str | None:
    return arch.split(":", 1)[0] if arch else None


def dir_of(path: str | None) -> str | None:
    if not path or "/" not in path:
        return None
    d = path.rsplit("/", 1)[0]
    return d or "/"


def tree_opt(tree: str | None) -> str:
    return f" --tree {tree}" if tree else ""
