"""``rocminfo`` output, whole or filtered through ``grep Name``, and its cross-check against what
sysfs says. rocminfo needs a working ROCm; rocmrevive does not, so this is a second opinion.

    agents = parse_rocminfo(text); [a.isas for a in agents if a.is_gpu]
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from rocmrevive.codeobj.targetid import TargetId

_FIELD = re.compile(r"^(\s*)([A-Za-z][A-Za-z0-9 ()/_-]*?):\s*(.*?)\s*$")
_AGENT = re.compile(r"^\s*Agent\s+(\d+)\s*$")


@dataclass
class RocminfoAgent:
    name: str | None = None
    marketing_name: str | None = None
    uuid: str | None = None
    node: int | None = None
    device_type: str | None = None
    bdfid: int | None = None
    compute_units: int | None = None
    isas: list[str] = field(default_factory=list)

    @property
    def is_gpu(self) -> bool:
        if self.device_type:
            return self.device_type.upper() == "GPU"
        return bool(self.name and re.match(r"^gfx[0-9a-f]+$", self.name))

    @property
    def target(self) -> TargetId | None:
        """The first non-generic ISA (rocminfo lists the generic one, gfx9-generic, after it)."""
        for isa in self.isas:
            try:
                t = TargetId.parse(isa)
            except ValueError:
                continue
            if not t.is_generic:
                return t
        return None

    def to_json(self) -> dict:
        t = self.target
        return {"name": self.name, "marketing_name": self.marketing_name, "uuid": self.uuid,
                "node": self.node, "device_type": self.device_type, "bdfid": self.bdfid,
                "compute_units": self.compute_units, "isas": self.isas,
                "target": str(t) if t else None}


def _int(v: str) -> int | None:
    try:
        return int(v.split()[0])
    except (ValueError, IndexError):
        return None


def parse_rocminfo(text: str) -> list[RocminfoAgent]:
    agents: list[RocminfoAgent] = []
    cur: RocminfoAgent | None = None
    for line in text.splitlines():
        if _AGENT.match(line):
            cur = RocminfoAgent()
            agents.append(cur)
            continue
        m = _FIELD.match(line)
        if not m:
            continue
        key, value = m.group(2).strip(), m.group(3)
        if key == "Name":
            if value.startswith("amdgcn-"):
                if cur is not None:
                    cur.isas.append(value)
                continue
            if cur is None or cur.name is not None:
                # grep'd output has no "Agent N" headers: a new agent-level Name starts an agent
                cur = RocminfoAgent()
                agents.append(cur)
            cur.name = value
        elif cur is None:
            continue
        elif key == "Marketing Name":
            cur.marketing_name = value
        elif key == "Uuid":
            cur.uuid = value
        elif key == "Node":
            cur.node = _int(value)
        elif key == "Device Type":
            cur.device_type = value
        elif key == "BDFID":
            cur.bdfid = _int(value)
        elif key == "Compute Unit":
            cur.compute_units = _int(value)
    return [a for a in agents if a.name is not None]


def cross_check(agents: list[RocminfoAgent], gpus) -> list[str]:
    """Differences between rocminfo's GPU agents and the KFD-listed GPUs (in enumeration order)."""
    problems = []
    ragents = [a for a in agents if a.is_gpu]
    kgpus = [g for g in gpus if g.node is not None]
    if len(ragents) != len(kgpus):
        problems.append(f"rocminfo lists {len(ragents)} GPU agent(s), the KFD topology {len(kgpus)}")
    by_node = {g.node: g for g in kgpus}
    for i, agent in enumerate(ragents):
        gpu = by_node.get(agent.node) if agent.node is not None else None
        if gpu is None and i < len(kgpus):
            gpu = kgpus[i]
        if gpu is None:
            continue
        label = f"GPU{gpu.index}"
        if agent.name != gpu.processor:
            problems.append(f"{label}: rocminfo says {agent.name}, the KFD says {gpu.processor}")
        t = agent.target
        if t is not None and gpu.target is not None and str(t) != str(gpu.target):
            problems.append(f"{label}: rocminfo's ISA is {t}, detected {gpu.target}")
        if agent.uuid and agent.uuid.startswith("GPU-") and gpu.unique_id:
            if agent.uuid[4:].lower() != f"{gpu.unique_id:x}":
                problems.append(f"{label}: rocminfo Uuid {agent.uuid} is not the KFD unique_id {gpu.unique_id:x}")
        if agent.bdfid is not None and gpu.kfd_location is not None and agent.bdfid != gpu.kfd_location:
            problems.append(f"{label}: rocminfo BDFID {agent.bdfid} is not the KFD location_id {gpu.kfd_location}")
    return problems
