"""The machine as it is: GPUs and topology (``rocmrevive.hardware``), ROCm installs, Python
environments and every rocBLAS copy, with which GPUs each copy fails to serve. ``detect`` prints
a survey, ``doctor`` diagnoses one.

    s = survey(Root("tests/machines/x"), pythons=["/home/alice/venv"]); s.to_json()["rocblas_copies"]
    findings = diagnose(s, user="alice")
"""
from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from typing import Sequence

from rocmrevive.hardware.access import AccessReport, check_access
from rocmrevive.hardware.findings import Finding, FixKind, Severity, hardware_findings
from rocmrevive.hardware.gpus import HardwareReport, scan
from rocmrevive.rootfs import Root
from rocmrevive.trees.device_wheels import DeviceWheel, find_device_wheels
from rocmrevive.trees.findings import tree_findings
from rocmrevive.trees.installs import RocmInstall, RocmLink, find_installs
from rocmrevive.trees.pythonenv import PythonEnv, find_envs
from rocmrevive.trees.rocblas import RocblasCopy, mark_coverage
from rocmrevive.trees.select import Copy, Tree, machine_copies
from rocmrevive.trees.therock import TheRockTree, find_trees


@dataclass
class Survey:
    root: Root
    hardware: HardwareReport
    installs: list[RocmInstall]
    rocm_link: RocmLink | None
    envs: list[PythonEnv]
    copies: list[RocblasCopy]
    problems: list[str] = field(default_factory=list)
    device_wheels: list[DeviceWheel] = field(default_factory=list)   # TheRock device wheels, by content
    therock: list[TheRockTree] = field(default_factory=list)   # TheRock trees, verdicts per library
    selected: list[Copy] = field(default_factory=list)   # the copies as trees.select selects them (doctor's verify)

    @property
    def supported(self) -> bool:
        return bool(self.hardware.gfx906)

    def summary(self) -> dict:
        gfx906 = {g.index for g in self.hardware.gfx906}
        return {"amd_gpus": len(self.hardware.gpus), "gfx906_gpus": len(gfx906),
                "rocm_installs": len(self.installs), "rocblas_copies": len(self.copies),
                "copies_missing_gfx906": sum(1 for c in self.copies if gfx906 & set(c.missing_for_gpus))}

    def to_json(self) -> dict:
        hw = self.hardware.to_json()
        return {
            "summary": self.summary(),
            "gpus": hw["gpus"], "pairs": hw["pairs"], "iommu": hw["iommu"], "host": hw["host"],
            "kfd_present": hw["kfd_present"], "rocminfo": hw["rocminfo"],
            "rocm_installs": [i.to_json() for i in self.installs],
            "rocm_link": self.rocm_link.to_json() if self.rocm_link else None,
            "python_envs": [e.to_json() for e in self.envs if e.named or e.torch_version],
            "rocblas_copies": [c.to_json() for c in self.copies],
            "device_wheels": [w.to_json() for w in self.device_wheels],
            "therock_trees": [t.to_json() for t in self.therock],
            "problems": hw["hardware_problems"] + self.problems,
        }


def survey(root: Root, *, pythons=(), trees: Sequence[Tree] = (), rocminfo_text: str | None = None,
           deep: bool = False, common_envs: bool = True, progress=None) -> Survey:
    """The machine; ``trees``: the ``--tree`` folders ``trees.select.given_trees`` resolved, whose
    rocBLAS copies are listed beside every other one (selected there, as ``verify`` selects them)."""
    hw = scan(root, rocminfo_text=rocminfo_text)
    installs, link = find_installs(root)
    envs, problems = find_envs(root, pythons, common=common_envs)
    copies, selected = machine_copies(root, trees, installs=installs, envs=envs, deep=deep, progress=progress)
    mark_coverage(copies, hw.gpus)
    procs = sorted({g.processor for g in hw.gpus if g.processor})
    return Survey(root, hw, installs, link, envs, copies, problems,
                  therock=find_trees(root, procs, {i.path: i.version for i in installs}),
                  device_wheels=find_device_wheels(root, envs), selected=selected)


def default_user() -> str:
    """The user to check device access for: the one behind sudo, else the caller."""
    return os.environ.get("SUDO_USER") or getpass.getuser()


def diagnose(s: Survey, *, user: str | None = None, vulkan_text: str | None = None) -> list[Finding]:
    access: AccessReport | None = None
    if s.hardware.gpus:
        nodes = ["/dev/kfd"] + sorted({g.render_node for g in s.hardware.gpus if g.render_node})
        access = check_access(s.root, user or default_user(), nodes)
    found = hardware_findings(s.hardware, access=access, vulkan_text=vulkan_text) + tree_findings(s)
    found += [Finding("read-problem", Severity.INFO, "machine", p, "", "none", FixKind.NONE) for p in s.problems]
    order = {sev: i for i, sev in enumerate(Severity)}
    return sorted(found, key=lambda f: order[f.severity])
