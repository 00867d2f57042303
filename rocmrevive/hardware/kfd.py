"""The KFD topology: ``/sys/class/kfd/kfd/topology/nodes/<n>/`` (ECOSYSTEM §4.1).

Each node has ``properties`` (``key value`` lines), ``gpu_id``, ``name`` and ``mem_banks/*``;
GPU nodes have ``simd_count > 0`` and a ``gfx_target_version``. A node whose files cannot be read
is returned with its problems, never dropped silently.

    nodes, problems = read_nodes(Root("/"))
    [n.bdf for n in nodes if n.is_gpu]
"""
from __future__ import annotations

from dataclasses import dataclass, field

from rocmrevive.codeobj.targetid import processor_from_gfx_target_version
from rocmrevive.hardware.sysfs import list_dir, parse_int, parse_key_values, read_text
from rocmrevive.rootfs import Root

TOPOLOGY = "/sys/class/kfd/kfd/topology/nodes"

# kfd_sysfs.h (uapi). Bit 19 was the old, buggy SRAM ECC flag and must be ignored.
HSA_CAP_SRAM_EDCSUPPORTED = 0x04000000
HSA_CAP_ASIC_REVISION_MASK = 0x03C00000
HSA_CAP_ASIC_REVISION_SHIFT = 22
# kfd memory heap types counted as VRAM (HSA_MEM_HEAP_TYPE_FB_PUBLIC / FB_PRIVATE)
VRAM_HEAPS = (1, 2)
IO_LINK_TYPE = {2: "PCIe", 11: "XGMI"}


@dataclass
class KfdLink:
    node_from: int
    node_to: int
    type: str
    weight: int | None


@dataclass
class KfdNode:
    node: int
    path: str                       # machine path of the node folder
    props: dict[str, int] = field(default_factory=dict)
    gpu_id: int | None = None
    name: str | None = None         # lower-cased ASIC name, "vega20" for gfx906
    mem_banks: list[dict[str, int]] = field(default_factory=list)
    p2p_links: list[KfdLink] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    # what the node is ---------------------------------------------------------------
    @property
    def readable(self) -> bool:
        return bool(self.props)

    @property
    def is_gpu(self) -> bool:
        return self.props.get("simd_count", 0) > 0 or self.props.get("gfx_target_version", 0) > 0

    @property
    def gfx_target_version(self) -> int | None:
        return self.props.get("gfx_target_version")

    @property
    def processor(self) -> str | None:
        v = self.gfx_target_version
        return processor_from_gfx_target_version(v) if v else None

    @property
    def sramecc(self) -> bool | None:
        cap = self.props.get("capability")
        return None if cap is None else bool(cap & HSA_CAP_SRAM_EDCSUPPORTED)

    @property
    def asic_revision(self) -> int | None:
        cap = self.props.get("capability")
        return None if cap is None else (cap & HSA_CAP_ASIC_REVISION_MASK) >> HSA_CAP_ASIC_REVISION_SHIFT

    @property
    def bdf(self) -> str | None:
        """``location_id = bus << 8 | devfn`` (+ partition in bits 31:28), ``domain`` (kfd_topology.c)."""
        loc = self.props.get("location_id")
        if loc is None:
            return None
        dom = self.props.get("domain", 0)
        loc &= 0xFFFF
        return f"{dom:04x}:{loc >> 8:02x}:{(loc >> 3) & 0x1F:02x}.{loc & 7}"

    @property
    def cu_count(self) -> int | None:
        simd, per = self.props.get("simd_count"), self.props.get("simd_per_cu")
        return simd // per if simd and per else None

    @property
    def vram_bytes(self) -> int | None:
        sizes = [b.get("size_in_bytes", 0) for b in self.mem_banks if b.get("heap_type") in VRAM_HEAPS]
        if sizes:
            return sum(sizes)
        return self.props.get("local_mem_size") or None

    @property
    def unique_id(self) -> int | None:
        return self.props.get("unique_id") or None

    @property
    def render_minor(self) -> int | None:
        m = self.props.get("drm_render_minor")
        return m if m is not None and m >= 0 else None

    def peers(self) -> set[int]:
        return {link.node_to for link in self.p2p_links}


def _read_links(root: Root, base: str, node: KfdNode, sub: str) -> list[KfdLink]:
    out = []
    for name in list_dir(root.path(f"{base}/{sub}")):
        text, problem = read_text(root.path(f"{base}/{sub}/{name}/properties"))
        if problem:
            node.problems.append(f"{sub}/{name}: {problem}")
        if not text:
            continue
        kv, _bad = parse_key_values(text)
        if "node_to" in kv:
            out.append(KfdLink(kv.get("node_from", node.node), kv["node_to"],
                               IO_LINK_TYPE.get(kv.get("type", -1), str(kv.get("type"))), kv.get("weight")))
    return out


def read_node(root: Root, node_id: int) -> KfdNode:
    base = f"{TOPOLOGY}/{node_id}"
    node = KfdNode(node_id, base)
    text, problem = read_text(root.path(f"{base}/properties"))
    if problem:
        node.problems.append(f"properties: {problem}")
    elif text is None:
        node.problems.append("properties: missing")
    else:
        node.props, bad = parse_key_values(text)
        node.problems += [f"properties: {b}" for b in bad]
        if not node.props:
            node.problems.append("properties: nothing readable")
    gid, problem = read_text(root.path(f"{base}/gpu_id"))
    node.gpu_id = parse_int(gid)
    if problem:
        node.problems.append(f"gpu_id: {problem}")
    name, problem = read_text(root.path(f"{base}/name"))
    node.name = name.strip() if name and name.strip() else None
    if problem:
        node.problems.append(f"name: {problem}")
    if node.is_gpu:
        for bank in list_dir(root.path(f"{base}/mem_banks")):
            text, problem = read_text(root.path(f"{base}/mem_banks/{bank}/properties"))
            if problem:
                node.problems.append(f"mem_banks/{bank}: {problem}")
            if text:
                node.mem_banks.append(parse_key_values(text)[0])
        node.p2p_links = _read_links(root, base, node, "p2p_links")
    return node


def kfd_present(root: Root) -> bool:
    return root.path(TOPOLOGY).is_dir()


def read_nodes(root: Root) -> list[KfdNode]:
    """Every node folder with a numeric name, in node order (the order ROCr enumerates)."""
    ids = []
    for name in list_dir(root.path(TOPOLOGY)):
        if name.isdigit():
            ids.append(int(name))
    return [read_node(root, i) for i in sorted(ids)]
