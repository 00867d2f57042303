"""A card's health from amdgpu's sysfs files, read root-side (never in the user's interpreter):

- RAS/ECC error counters: ``<device>/ras/<block>_err_count`` ("ue: N" uncorrectable, "ce: N"
  corrected; kernel.org amdgpu docs, "AMDGPU RAS Support");
- PCIe AER counters: ``<device>/aer_dev_correctable``, ``aer_dev_nonfatal``, ``aer_dev_fatal``
  ("NAME count" lines and ``TOTAL_ERR_*``; the replay counters ``ReplayNumRollover`` and
  ``ReplayTimerTimeout`` are correctable ones; Documentation/PCI/pcieaer-howto);
- temperatures, clocks, power: ``hwmon/hwmon*/temp*_input`` (millidegrees C, ``temp*_label``
  edge/junction/mem), ``freq*_input`` (Hz, ``freq*_label`` sclk/mclk), ``power1_average`` (uW),
  and the DPM levels ``pp_dpm_sclk`` / ``pp_dpm_mclk`` (the current one starred);
- other processes on the card: KFD's per-process folders ``/sys/class/kfd/kfd/proc/<pid>/`` with
  ``vram_<gpu_id>`` (bytes of VRAM the process holds on that GPU; kfd_process.c, Linux 5.8+), the
  GPU told by the topology node's ``gpu_id``; the process's name from ``/proc/<pid>/comm``, which its
  owner sets (shown with anything but printable ASCII replaced); the smoke's own processes (those
  descending from rocmrevive's) left out;
- throttling: ``gpu_metrics`` (the binary table of the kernel's kgd_pp_interface.h: a 4-byte
  header {u16 size, u8 format, u8 content}; Vega 20 fills ``struct gpu_metrics_v1_0``, 80 bytes,
  its ``throttle_status`` (u32) at byte 68 after the header, 4 bytes of padding, the u64 clock
  counter, 6 temperatures, 3 activities, power, the u32 energy counter and 7 + 7 clocks. Formats
  1.1-1.3 (later dGPUs) move the clock counter behind a u64 energy counter and land
  ``throttle_status`` at byte 68 too, in tables of 96, 104 and 120 bytes. Other versions (1.4+,
  the APUs' 2.x) are reported by version only: their layouts differ.

    before = read_health(root); ...; after = read_health(root)
    changes = compare(before, after)      # new uncorrectable errors fail a smoke
    samples = Samples(); samples.add(read_health(root)); samples.summary()
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from rocmrevive.hardware.kfd import read_nodes
from rocmrevive.hardware.pci import device_dir, list_functions, parse_link_speed, read_function
from rocmrevive.hardware.power import parse_dpm
from rocmrevive.hardware.sysfs import list_dir, parse_int, read_bytes, read_link_name, read_text
from rocmrevive.hardware.topology import locate
from rocmrevive.rootfs import Root

GPU_METRICS_V1_0_SIZE = 80
THROTTLE_OFFSET_V1_0 = 68
# (format, content) -> the table's size, for the layouts whose throttle_status is at byte 68
THROTTLE_AT_68 = {(1, 0): GPU_METRICS_V1_0_SIZE, (1, 1): 96, (1, 2): 104, (1, 3): 120}
KFD_PROC = "/sys/class/kfd/kfd/proc"
MAX_ANCESTRY = 64       # a parent chain longer than this is not followed further (not ours)
AER_FILES = {"correctable": "aer_dev_correctable", "nonfatal": "aer_dev_nonfatal", "fatal": "aer_dev_fatal"}


@dataclass
class CardHealth:
    bdf: str
    ras: dict[str, dict[str, int]] = field(default_factory=dict)   # block -> {"ue": n, "ce": n}
    aer: dict[str, dict[str, int]] = field(default_factory=dict)   # correctable/nonfatal/fatal -> {name: n}
    temps_c: dict[str, float] = field(default_factory=dict)        # edge/junction/mem -> C
    clocks_mhz: dict[str, int] = field(default_factory=dict)       # sclk/mclk -> MHz
    dpm: dict[str, dict] = field(default_factory=dict)             # sclk/mclk -> DpmLevels json
    power_w: float | None = None
    gpu_metrics: str | None = None                                 # "v1.0", ...
    throttle_status: int | None = None
    link: dict[str, float | int | str | None] = field(default_factory=dict)  # width, max_width, gts, max_gts, at (bdf)
    problems: list[str] = field(default_factory=list)

    def aer_total(self, kind: str) -> int:
        counts = self.aer.get(kind) or {}
        total = next((v for k, v in counts.items() if k.startswith("TOTAL_ERR")), None)
        return total if total is not None else sum(counts.values())

    def to_json(self) -> dict:
        return {"bdf": self.bdf, "ras": self.ras, "aer": self.aer, "temps_c": self.temps_c,
                "clocks_mhz": self.clocks_mhz, "dpm": self.dpm, "power_w": self.power_w,
                "gpu_metrics": self.gpu_metrics, "throttle_status": self.throttle_status,
                "throttle_bits": throttle_bits(self.throttle_status), "link": self.link,
                "problems": self.problems}


def throttle_bits(status: int | None) -> list[int]:
    """The set bits of a throttle_status word (their names are per SMU firmware: bit numbers only)."""
    return [b for b in range(32) if status and status >> b & 1]


def parse_ras(text: str | None) -> dict[str, int] | None:
    """'ue: 0\\nce: 3\\n' -> {"ue": 0, "ce": 3}."""
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        key, _, val = line.partition(":")
        n = parse_int(val)
        if key.strip() in ("ue", "ce") and n is not None:
            out[key.strip()] = n
    return out or None


def parse_aer(text: str | None) -> dict[str, int] | None:
    """'RxErr 0\\nBadTLP 1\\n...\\nTOTAL_ERR_COR 1\\n' -> {name: count}."""
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parse_int(parts[1]) is not None:
            out[parts[0]] = parse_int(parts[1]) or 0
    return out


def parse_gpu_metrics(data: bytes) -> tuple[str | None, int | None]:
    """(version, throttle_status or None) from the binary gpu_metrics table."""
    if len(data) < 4:
        return None, None
    size, fmt, content = struct.unpack_from("<HBB", data, 0)
    version = f"v{fmt}.{content}"
    if THROTTLE_AT_68.get((fmt, content)) == size and len(data) >= size:
        return version, struct.unpack_from("<I", data, THROTTLE_OFFSET_V1_0)[0]
    return version, None


def read_card(root: Root, bdf: str) -> CardHealth:
    real, _ = device_dir(root, bdf)
    h = CardHealth(bdf)

    def text(rel) -> str | None:
        t, problem = read_text(real / rel, limit=65536)
        if problem:
            h.problems.append(problem)
        return t

    for name in list_dir(real / "ras"):
        if name.endswith("_err_count"):
            counts = parse_ras(text(f"ras/{name}"))
            if counts:
                h.ras[name[: -len("_err_count")]] = counts
    for kind, name in AER_FILES.items():
        counts = parse_aer(text(name))
        if counts is not None:
            h.aer[kind] = counts
    for mon in list_dir(real / "hwmon"):
        _read_hwmon(h, f"hwmon/{mon}", list_dir(real / "hwmon" / mon), text)
    for clk in ("sclk", "mclk"):
        levels = parse_dpm(text(f"pp_dpm_{clk}"))
        if levels:
            h.dpm[clk] = levels.to_json()
            if clk not in h.clocks_mhz and levels.current_mhz:
                h.clocks_mhz[clk] = levels.current_mhz
    h.link = {"width": parse_int(text("current_link_width")), "max_width": parse_int(text("max_link_width")),
              "gts": parse_link_speed(text("current_link_speed")),
              "max_gts": parse_link_speed(text("max_link_speed")), "at": bdf}
    slot = _slot_link(root, bdf)
    if slot is not None:   # the card's own slot (doctor's link-narrow reads the same bridge)
        h.link = slot
    raw, problem = read_bytes(real / "gpu_metrics", limit=4096)
    if problem:
        h.problems.append(problem)
    if raw:
        h.gpu_metrics, h.throttle_status = parse_gpu_metrics(raw)
    return h


def _slot_link(root: Root, bdf: str) -> dict | None:
    """The link the card trained in its slot: a card with an on-card switch (Vega 20 boards)
    reports x16 at the GPU function whatever the slot gave it; the top on-card bridge's link is
    the slot's (``topology.PcieLocation.slot_link``, as `doctor` reads it). None: no such bridge."""
    try:
        loc = locate(root, read_function(root, bdf))
    except (OSError, ValueError):
        return None
    lk = loc.slot_link
    if lk is None or not lk.known:
        return None
    return {"width": lk.width, "max_width": lk.max_width, "gts": lk.speed, "max_gts": lk.max_speed,
            "at": loc.card_bridges[0].bdf}


def _read_hwmon(h: CardHealth, folder: str, entries: list[str], text) -> None:
    """Temperatures (millidegrees), clocks (Hz) and average power (uW) of one hwmon folder."""
    for entry in entries:
        if not entry.endswith("_input") and entry != "power1_average":
            continue
        n = parse_int(text(f"{folder}/{entry}"))
        if n is None:
            continue
        stem = entry[:-6]
        if entry == "power1_average":
            h.power_w = n / 1e6
        elif entry.startswith("temp"):
            h.temps_c[(text(f"{folder}/{stem}_label") or stem).strip()] = n / 1000.0
        elif entry.startswith("freq"):
            h.clocks_mhz[(text(f"{folder}/{stem}_label") or stem).strip()] = n // 1_000_000


def read_health(root: Root) -> list[CardHealth]:
    """Every function bound to amdgpu, in PCI order."""
    out = []
    for bdf in list_functions(root):
        real, _ = device_dir(root, bdf)
        if read_link_name(real / "driver") == "amdgpu":
            out.append(read_card(root, bdf))
    return out


def compare(before: list[CardHealth], after: list[CardHealth]) -> dict:
    """What changed between two readings: {"uncorrectable": [...], "corrected": [...]}, each
    {"bdf", "what", "new"}; RAS ue and AER nonfatal/fatal are uncorrectable."""
    prev = {h.bdf: h for h in before}
    unc: list[dict] = []
    cor: list[dict] = []
    for h in after:
        p = prev.get(h.bdf)
        if p is None:
            continue
        for block, counts in h.ras.items():
            old = p.ras.get(block, {})
            for kind, dest in (("ue", unc), ("ce", cor)):
                new = counts.get(kind, 0) - old.get(kind, 0)
                if new > 0:
                    dest.append({"bdf": h.bdf, "what": f"RAS {block} {'uncorrectable' if kind == 'ue' else 'corrected'}",
                                 "new": new})
        for kind in AER_FILES:
            new = h.aer_total(kind) - p.aer_total(kind)
            if new > 0:
                (cor if kind == "correctable" else unc).append(
                    {"bdf": h.bdf, "what": f"PCIe AER {kind}", "new": new})
    return {"uncorrectable": unc, "corrected": cor}


def gpu_ids(root: Root) -> dict[int, str]:
    """KFD's gpu_id of each GPU node -> its PCI address (the names of the per-process vram files)."""
    return {n.gpu_id: n.bdf for n in read_nodes(root) if n.is_gpu and n.gpu_id and n.bdf}


def shown_name(raw: str | None) -> str:
    """A process name as its owner set it, safe to print: printable ASCII kept, the rest '?', 15 at most
    (the kernel's TASK_COMM_LEN less its NUL)."""
    name = (raw or "").rstrip("\n")[:15]
    return "".join(c if " " <= c <= "~" else "?" for c in name) or "?"


def _parent(root: Root, pid: int) -> int | None:
    """The parent of a process from ``/proc/<pid>/stat`` (the field after the name's last ')')."""
    text, _ = read_text(root.path(f"/proc/{pid}/stat"), limit=4096)
    if not text or ")" not in text:
        return None
    fields = text[text.rfind(")") + 1:].split()
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def descends_from(root: Root, pid: int, ancestor: int) -> bool:
    """Whether ``ancestor`` is ``pid`` or one of its parents (the smoke's own probes and llama.cpp)."""
    for _ in range(MAX_ANCESTRY):
        if pid == ancestor:
            return True
        parent = _parent(root, pid)
        if parent is None or parent <= 1 or parent == pid:
            return False
        pid = parent
    return False


def read_gpu_users(root: Root, ids: dict[int, str], ours: int | None = None) -> dict[str, list[dict]]:
    """Per card (PCI address), the other processes that hold VRAM on it now: [{"pid", "name", "vram_bytes"}].
    ``ours``: the process whose descendants are the smoke's own (left out). Kernels without the
    per-process files (before 5.8) give {}."""
    out: dict[str, list[dict]] = {}
    base = root.path(KFD_PROC)
    for name in list_dir(base):
        if not name.isdigit():
            continue
        pid = int(name)
        if ours is not None and descends_from(root, pid, ours):
            continue
        for gid, bdf in ids.items():
            used = parse_int(read_text(base / name / f"vram_{gid}", limit=64)[0])
            if used and used > 0:
                comm, _ = read_text(root.path(f"/proc/{pid}/comm"), limit=64)
                out.setdefault(bdf, []).append({"pid": pid, "name": shown_name(comm), "vram_bytes": used})
    return out


class Samples:
    """Readings taken during a run: per card the range of each temperature and clock, the
    throttle bits seen, the DPM levels at their lowest."""

    def __init__(self) -> None:
        self.count = 0
        self.cards: dict[str, dict] = {}

    def add(self, readings: list[CardHealth], users: dict[str, list[dict]] | None = None) -> None:
        """One reading of every card, and the other processes on each (``read_gpu_users``)."""
        self.count += 1
        for h in readings:
            c = self.cards.setdefault(h.bdf, {"temps_c": {}, "clocks_mhz": {}, "throttle_bits": [],
                                              "throttle_samples": 0, "power_w": None, "samples": 0,
                                              "link": {}, "others": {}})
            c["samples"] += 1
            for u in (users or {}).get(h.bdf, []):
                seen = c["others"].setdefault(u["pid"], {"pid": u["pid"], "name": u["name"], "vram_bytes": 0,
                                                         "samples": 0})
                seen["vram_bytes"] = max(seen["vram_bytes"], u["vram_bytes"])
                seen["samples"] += 1
            link = {k: v for k, v in (("width", h.link.get("width")), ("gts", h.link.get("gts")))
                    if isinstance(v, (int, float))}
            for group, values in (("temps_c", h.temps_c), ("clocks_mhz", h.clocks_mhz), ("link", link)):
                for k, v in values.items():
                    lo, hi = c[group].get(k, (v, v))
                    c[group][k] = (min(lo, v), max(hi, v))
            if h.power_w is not None:
                lo, hi = c["power_w"] or (h.power_w, h.power_w)
                c["power_w"] = (min(lo, h.power_w), max(hi, h.power_w))
            bits = throttle_bits(h.throttle_status)
            if bits:
                c["throttle_samples"] += 1
                c["throttle_bits"] = sorted(set(c["throttle_bits"]) | set(bits))

    def summary(self) -> dict:
        return {"samples": self.count, "cards": {
            bdf: {**c, "temps_c": {k: list(v) for k, v in c["temps_c"].items()},
                  "clocks_mhz": {k: list(v) for k, v in c["clocks_mhz"].items()},
                  "link": {k: list(v) for k, v in c["link"].items()},
                  "power_w": list(c["power_w"]) if c["power_w"] else None,
                  "others": sorted(c["others"].values(), key=lambda o: -o["vram_bytes"]),
                  "throttling": bool(c["throttle_bits"])}
            for bdf, c in self.cards.items()}}


def likely_causes(card: dict, sampled: dict | None) -> list[str]:
    """What in one card's readings makes products slow: another process on the card during the run
    (its kernels share the card's compute units and memory bandwidth), a clock that stayed at its
    lowest DPM level through the run, a slot link narrower than the card's or slower than its best
    through the run, throttling, a hot junction.
    ``card``: ``CardHealth.to_json()`` after the run; ``sampled``: its ``Samples`` summary."""
    out = []
    sampled = sampled or {}
    others = sampled.get("others") or []
    if others:
        named = ", ".join(f"pid {o['pid']} ({o['name']}, {o['vram_bytes'] / 2**30:.1f} GiB of VRAM)" for o in others[:3])
        more = f" and {len(others) - 3} more" if len(others) > 3 else ""
        out.append(f"{'another process' if len(others) == 1 else f'{len(others)} other processes'} on the card "
                   f"during the run: {named}{more}")
    for clk, what in (("mclk", "memory clock"), ("sclk", "shader clock")):
        levels = ((card.get("dpm") or {}).get(clk) or {}).get("levels_mhz") or []
        seen = (sampled.get("clocks_mhz") or {}).get(clk)
        if len(levels) > 1 and seen and seen[1] <= levels[0]:
            out.append(f"{what} stayed at its lowest level ({levels[0]} MHz of {levels[0]}-{levels[-1]}) through the run")
    link = card.get("link") or {}
    seen_link = sampled.get("link") or {}
    width = (seen_link.get("width") or [None, link.get("width")])[1]   # the widest seen during the run
    where = f" (at {link['at']})" if link.get("at") and link.get("at") != card.get("bdf") else ""
    if width and link.get("max_width") and width < link["max_width"]:
        out.append(f"PCIe link x{width} of x{link['max_width']}{where}")
    # amdgpu lowers the link speed while idle: only a speed that stayed low through the run counts
    gts = (seen_link.get("gts") or [None, None])[1]
    if gts and link.get("max_gts") and gts < link["max_gts"]:
        out.append(f"PCIe link at {gts:g} GT/s of {link['max_gts']:g} GT/s through the run{where}")
    if sampled.get("throttling"):
        out.append(f"throttling (gpu_metrics bits {', '.join(map(str, sampled.get('throttle_bits') or []))})")
    hot = (sampled.get("temps_c") or {}).get("junction")
    if hot and hot[1] >= 100:
        out.append(f"junction temperature up to {hot[1]:g} C")
    return out
