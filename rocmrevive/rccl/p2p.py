"""Peer-to-peer readiness per pair of GPUs, and the RCCL/NCCL environment that suits the
topology, as a file a shell (or Docker's ``--env-file``, or systemd's ``EnvironmentFile=``) reads.

The pair facts come from ``rocmrevive.hardware`` (PCIe path, the kernel's P2P rule, the KFD's
own answer); this module adds what RCCL needs on top:

* ``NCCL_P2P_DISABLE=1`` when a pair cannot do PCIe P2P (RCCL would otherwise try P2P/direct
  pointer and fail); ``NCCL_P2P_LEVEL=<relation>`` instead when every pair that can is closer
  than every pair that cannot (P2P kept where it works);
* ``HSA_FORCE_FINE_GRAIN_PCIE=1`` for any collective over PCIe (RCCL warns without it, rccl#1026);
* the kernel command line (``iommu=pt``; ``amd_iommu=on`` on AMD CPUs, ``intel_iommu=on`` on
  Intel) when the IOMMU translates DMA, and the firmware/kernel fixes for the blockers;
* ACS redirect on the switch ports between two GPUs (``config`` space, ext. capability 0x000D):
  peer requests then travel up to the root complex (``pci_bridge_has_acs_redir``);
* where programs find the RCCL that serves every card (``VLLM_NCCL_SO_PATH``, ``LD_LIBRARY_PATH``);
* notes on what vLLM makes of the cards that no variable changes (gfx906 counted as CDNA).

    rep = readiness(hardware.scan(root)); print(rep.env_text())
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from rocmrevive.hardware.host import P2P_CONFIG
from rocmrevive.rootfs import Root
from rocmrevive.strenum import StrEnum
from rocmrevive.units import format_bytes

RELATION_ORDER = ("PIX", "PXB", "PHB", "NODE", "SYS")
ACS_CAP_ID = 0x000D
# ACS control bits (PCIe base spec 7.7.8.3): P2P Request Redirect, Completion Redirect, Egress Control
ACS_RR, ACS_CR, ACS_EC = 1 << 2, 1 << 3, 1 << 5
FINE_GRAIN_WHY = ("RCCL warns 'Missing \"HSA_FORCE_FINE_GRAIN_PCIE=1\" from environment which can lead to "
                  "low RCCL performance, system instability or hang' (ROCm/rccl#1026)")
PHB_ABORT_WHY = ("two MI50 on CPU root ports of one desktop host bridge set up P2P/direct pointer, then the "
                 "first AllReduce failed (mx-llama.cpp#7, kernel 6.12 with CONFIG_HSA_AMD_P2P)")


def read_acs(root: Root, bdf: str) -> dict | None:
    """The ACS control of a PCI bridge from its config space (readable by root only), or None
    when the config space or the capability is not there."""
    try:
        with open(root.path(f"/sys/bus/pci/devices/{bdf}/config"), "rb") as f:
            data = f.read(4096)
    except OSError:
        return None
    if len(data) < 0x104:
        return None  # only the 256-byte legacy space: not root, or no extended space
    off, seen = 0x100, set()
    while off and off not in seen and off + 8 <= len(data):
        seen.add(off)
        (header,) = struct.unpack_from("<I", data, off)
        if header in (0, 0xFFFFFFFF):
            return None
        if header & 0xFFFF == ACS_CAP_ID:
            cap, ctrl = struct.unpack_from("<HH", data, off + 4)
            return {"capability": cap, "control": ctrl,
                    "redirect": bool(ctrl & (ACS_RR | ACS_CR | ACS_EC)),
                    "flags": [n for n, b in (("SV", 1), ("TB", 2), ("RR", 4), ("CR", 8), ("UF", 16),
                                               ("EC", 32), ("DT", 64)) if ctrl & b]}
        off = header >> 20
    return None


class P2PVerdict(StrEnum):
    """Whether GPUs can do PCIe peer-to-peer: a pair's answer (P2P, NO_P2P, UNVERIFIED), and the
    machine's (``P2PReport.verdict``, also PARTIAL and SINGLE)."""

    P2P = "p2p"
    NO_P2P = "no-p2p"
    UNVERIFIED = "unverified"
    PARTIAL = "partial"  # some pairs can, some cannot
    SINGLE = "single"    # fewer than two GPUs: no pair to ask about


@dataclass
class PairReadiness:
    a: int
    b: int
    relation: str
    verdict: P2PVerdict             # P2P, NO_P2P or UNVERIFIED
    kfd_peer_link: bool | None
    blockers: list[str] = field(default_factory=list)
    risks: list[str] = field(default_factory=list)
    unverified: list[str] = field(default_factory=list)
    path: str = ""                  # the topology in words

    def to_json(self) -> dict:
        return {"a": self.a, "b": self.b, "relation": self.relation, "verdict": self.verdict,
                "kfd_peer_link": self.kfd_peer_link, "path": self.path, "blockers": self.blockers,
                "risks": self.risks, "unverified": self.unverified}


@dataclass
class EnvSetting:
    key: str
    value: str
    why: str
    active: bool = True             # False: a commented suggestion (uncomment when ...)
    plain_value: str | None = None  # the value for KEY=VALUE files, which do not expand ${...}

    def to_json(self) -> dict:
        return {"key": self.key, "value": self.value, "why": self.why, "active": self.active}


@dataclass
class HostFix:
    kind: str                       # "kernel-cmdline" | "firmware" | "kernel" | "module-param"
    text: str                       # what to set
    why: str

    def to_json(self) -> dict:
        return {"kind": self.kind, "text": self.text, "why": self.why}


@dataclass
class P2PReport:
    gpus: list[dict]
    pairs: list[PairReadiness]
    iommu: dict
    env: list[EnvSetting] = field(default_factory=list)
    fixes: list[HostFix] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> P2PVerdict:
        """P2P every pair, PARTIAL, NO_P2P none, UNVERIFIED, or SINGLE (fewer than 2 GPUs)."""
        if not self.pairs:
            return P2PVerdict.SINGLE
        vs = {p.verdict for p in self.pairs}
        if vs == {P2PVerdict.P2P}:
            return P2PVerdict.P2P
        if vs == {P2PVerdict.NO_P2P}:
            return P2PVerdict.NO_P2P
        if P2PVerdict.NO_P2P in vs and P2PVerdict.P2P in vs:
            return P2PVerdict.PARTIAL
        return P2PVerdict.UNVERIFIED

    def to_json(self) -> dict:
        return {"gpus": self.gpus, "verdict": self.verdict, "pairs": [p.to_json() for p in self.pairs],
                "iommu": self.iommu, "env": [e.to_json() for e in self.env],
                "fixes": [f.to_json() for f in self.fixes], "notes": self.notes,
                "env_file": self.env_text()}

    def env_text(self, fmt: str = "sh") -> str:
        """The ready-to-source file: ``sh`` (``export K=V``, sourced by a shell) or ``env``
        (``K=V``: Docker ``--env-file``, systemd ``EnvironmentFile=``, no expansion)."""
        out = ["# RCCL/NCCL environment for this machine (rocmrevive rccl env)"]
        for g in self.gpus:
            out.append(f"#   GPU{g['index']}: {g['target']} {g['name']} ({g['bdf']})")
        for p in self.pairs:
            why = "; ".join({P2PVerdict.P2P: p.risks, P2PVerdict.NO_P2P: p.blockers,
                             P2PVerdict.UNVERIFIED: p.unverified}[p.verdict])
            answer = {P2PVerdict.P2P: "yes", P2PVerdict.NO_P2P: "no", P2PVerdict.UNVERIFIED: "not verified"}[p.verdict]
            out.append(f"#   GPU{p.a}-GPU{p.b}: {p.relation}, {p.path}; peer-to-peer: {answer}"
                       + (f" ({why})" if why else ""))
        for e in self.env:
            out.append("")
            out.append(f"# {e.why}")
            value = e.value if fmt == "sh" else (e.plain_value if e.plain_value is not None else e.value)
            line = f"export {e.key}={value}" if fmt == "sh" else f"{e.key}={value}"
            out.append(line if e.active else f"# {line}")
        if self.fixes:
            out.append("")
            out.append("# Not variables (the machine itself):")
            for f in self.fixes:
                out.append(f"#   {f.kind}: {f.text}  -- {f.why}")
        for n in self.notes:
            out.append(f"# note: {n}")
        return "\n".join(out) + "\n"


def _path_words(hw, a, b, relation: str) -> str:
    la, lb = a.location, b.location
    rca = la.root_complex if la else None
    rcb = lb.root_complex if lb else None
    if relation in ("NODE", "SYS"):
        words = f"different root complexes ({rca or '?'} / {rcb or '?'})"
        if relation == "SYS":
            words += f", NUMA nodes {a.numa_node} / {b.numa_node}"
        return words
    if relation == "PHB":
        return f"through the host bridge of root complex {rca} (root ports {la.root_port} / {lb.root_port})"
    return "below one PCIe switch" if relation == "PIX" else "through several PCIe switches"


def _acs_between(root: Root, a, b, common: str | None) -> list[str]:
    """ACS redirect on the fabric ports below the common bridge of a switched pair."""
    out: list[str] = []
    for g in (a, b):
        if not g.location:
            continue
        below = False
        for br in g.location.fabric:
            if br.bdf == common:
                below = True
                continue
            if below and br.role == "downstream":
                acs = read_acs(root, br.bdf)
                if acs and acs["redirect"] and br.bdf not in " ".join(out):
                    out.append(f"ACS {'+'.join(f for f in acs['flags'] if f in ('RR', 'CR', 'EC'))} on switch "
                               f"port {br.bdf} above GPU{g.index}: peer requests are redirected up to the root "
                               f"complex")
    return out


def readiness(root: Root, hw, *, gpus=None, rccl_lib: str | None = None) -> P2PReport:
    """P2P verdicts for the pairs among ``gpus`` (indexes; default every GPU with a target),
    the environment that suits them and the host fixes. ``rccl_lib``: the machine path of an
    RCCL that serves every card, for the lines that make programs load it."""
    chosen = [g for g in hw.gpus if g.target is not None and (gpus is None or g.index in gpus)]
    idx = {g.index for g in chosen}
    by_index = {g.index: g for g in hw.gpus}
    rep = P2PReport([{"index": g.index, "target": str(g.target), "name": g.model.name, "bdf": g.bdf,
                      "large_bar": g.large_bar} for g in chosen], [], hw.host.iommu.to_json())
    for p in hw.pairs:
        if p.a not in idx or p.b not in idx:
            continue
        a, b = by_index[p.a], by_index[p.b]
        verdict = {True: P2PVerdict.P2P, False: P2PVerdict.NO_P2P, None: P2PVerdict.UNVERIFIED}[p.p2p_possible]
        pr = PairReadiness(p.a, p.b, p.relation, verdict, p.kfd_peer_link, list(p.blockers), list(p.risks),
                           list(p.unverified), _path_words(hw, a, b, p.relation))
        if p.relation in ("PIX", "PXB"):
            pr.risks += _acs_between(root, a, b, p.common_bridge)
        if (verdict is P2PVerdict.P2P and p.relation == "PHB" and a.processor == b.processor == "gfx906"
                and hw.host.cpu.vendor == "AuthenticAMD"):
            pr.risks.append(f"seen before: {PHB_ABORT_WHY}")
        rep.pairs.append(pr)
    _env(rep, chosen, rccl_lib)
    _fixes(rep, chosen, hw)
    _vllm_notes(rep, chosen)
    return rep


def _vllm_notes(rep: P2PReport, chosen) -> None:
    """What vLLM (0.32-0.34, vllm/platforms/rocm.py) makes of these cards that no variable changes."""
    procs = [g.processor for g in chosen if g.processor]
    if "gfx906" in procs:
        rep.notes.append("vLLM 0.32-0.34 count gfx906 as CDNA (MFMA-only paged attention, FP8): "
                         "`rocmrevive patch apply vllm-rocm-gfx906-not-cdna` (no variable changes it)")
        rep.notes.append("vLLM 0.32-0.34 read gfx906 as capability (9, 0), so a bf16 model runs in bf16 when no dtype "
                         "is chosen; gfx906 has no bf16 arithmetic (bf16 runs on its fp32 units: about 6 TFLOPS "
                         "against 11 for fp16): pass --dtype float16, or `rocmrevive patch apply "
                         "vllm-rocm-gfx906-fp16-default` to make --dtype auto take fp16 there (an explicit --dtype is "
                         "kept; no variable sets vLLM's dtype)")
    if len(set(procs)) > 1:
        rep.notes.append(f"vLLM decides the architecture once, from the first GPU amd-smi lists (usually GPU0, {procs[0]}), "
                         f"for every GPU: run one vLLM per architecture (HIP_VISIBLE_DEVICES), not one "
                         f"tensor-parallel group across {' and '.join(dict.fromkeys(procs))}")


def _env(rep: P2PReport, chosen, rccl_lib: str | None) -> None:
    if len(chosen) >= 2:
        rep.env.append(EnvSetting("HSA_FORCE_FINE_GRAIN_PCIE", "1", FINE_GRAIN_WHY))
    bad = [p for p in rep.pairs if p.verdict is P2PVerdict.NO_P2P]
    good = [p for p in rep.pairs if p.verdict is P2PVerdict.P2P]
    unsure = [p for p in rep.pairs if p.verdict is P2PVerdict.UNVERIFIED]
    if bad:
        names = ", ".join(f"GPU{p.a}-GPU{p.b}" for p in bad)
        reasons = "; ".join(dict.fromkeys(x for p in bad for x in p.blockers))
        worst_good = max((RELATION_ORDER.index(p.relation) for p in good), default=None)
        best_bad = min(RELATION_ORDER.index(p.relation) for p in bad)
        if good and not unsure and worst_good is not None and worst_good < best_bad:
            level = RELATION_ORDER[worst_good]
            rep.env.append(EnvSetting(
                "NCCL_P2P_LEVEL", level,
                f"P2P only between GPUs related as {level} or closer: {names} cannot do PCIe peer-to-peer "
                f"({reasons}); the other pairs can"))
        else:
            rep.env.append(EnvSetting(
                "NCCL_P2P_DISABLE", "1",
                f"{names} cannot do PCIe peer-to-peer ({reasons}); without this RCCL sets up P2P/direct "
                f"pointer channels and the collectives fail"))
    else:
        hints = [p for p in unsure] + [p for p in good if any(r.startswith(("seen before", "ACS")) for r in p.risks)]
        if hints:
            names = ", ".join(f"GPU{p.a}-GPU{p.b}" for p in hints)
            why = "; ".join(dict.fromkeys(x for p in hints for x in (
                p.unverified if p.verdict is P2PVerdict.UNVERIFIED else
                [r for r in p.risks if r.startswith(("seen before", "ACS"))])))
            rep.env.append(EnvSetting("NCCL_P2P_DISABLE", "1",
                                      f"uncomment if the first all-reduce fails: {names}: {why}", active=False))
    if rccl_lib:
        lib_dir = rccl_lib.rsplit("/", 1)[0]
        rep.env.append(EnvSetting("VLLM_NCCL_SO_PATH", rccl_lib,
                                  "vLLM's PyNccl loads this RCCL (a full path: a bare name would return the "
                                  "copy PyTorch already loaded)"))
        rep.env.append(EnvSetting("LD_LIBRARY_PATH", f"{lib_dir}${{LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}}",
                                  "programs that link librccl.so.1 by name (rccl-tests, PyTorch built "
                                  "against the system ROCm) find this copy first",
                                  plain_value=lib_dir))


def _fixes(rep: P2PReport, chosen, hw) -> None:
    host = hw.host
    if len(chosen) < 2:
        rep.notes.append("fewer than two GPUs: no peer-to-peer traffic to set up")
        return
    mode = host.iommu.mode
    if mode in ("translated", "mixed"):
        vendor = host.cpu.vendor
        words = "iommu=pt" + (" amd_iommu=on" if vendor == "AuthenticAMD" else
                              " intel_iommu=on" if vendor == "GenuineIntel" else "")
        rep.fixes.append(HostFix(
            "kernel-cmdline", words,
            f"the IOMMU translates the GPUs' DMA (groups of type {', '.join(sorted(host.iommu.to_json()['group_types']))}); "
            f"RCCL warns 'Missing \"iommu=pt\" from kernel command line which can lead to system instability "
            f"or hang' (ROCm/rccl#1026); add to GRUB_CMDLINE_LINUX, update-grub, reboot"))
    small = [g for g in chosen if g.large_bar is False]
    if small:
        rep.fixes.append(HostFix(
            "firmware", "enable Above 4G Decoding and Resizable BAR in the BIOS, or flash a full-BAR vBIOS",
            "; ".join(f"GPU{g.index}: BAR {format_bytes(g.bar_bytes)} < {format_bytes(g.vram_bytes)} VRAM"
                      for g in small) + " — the kernel allows P2P only when all VRAM is CPU-visible (ROCm#4793)"))
    if host.kernel_config:
        missing = [o for o in P2P_CONFIG if host.kernel_config.get(o, "n") not in ("y", "m")]
        if missing:
            rep.fixes.append(HostFix("kernel", f"a kernel built with {', '.join(missing)}",
                                     f"{host.kernel_config_source} lacks them: amdgpu refuses PCIe P2P"))
    if host.amdgpu_params.get("pcie_p2p", "Y").upper() in ("N", "0"):
        rep.fixes.append(HostFix("module-param", "remove amdgpu.pcie_p2p=0",
                                 "peer-to-peer is switched off in the driver"))
