"""Doctor's findings about the box as a whole, each a self-contained producer: the
``HSA_OVERRIDE_GFX_VERSION`` places (``diagnose.overrides``), each card's vBIOS
(``hardware.vbios``), MIOpen's gfx906 databases per tree (``diagnose.miopen``), and a card with a
small BAR that a Vulkan device serves (llama.cpp's host-visible-VRAM cliff, with its two ways out
from ``data/gfx906-paths.toml``).

    findings += box_findings(root, survey, env=os.environ, vulkan_text=text)
"""
from __future__ import annotations

from collections.abc import Mapping

from rocmrevive.advice.paths import table
from rocmrevive.diagnose.miopen import miopen_findings
from rocmrevive.diagnose.overrides import override_findings
from rocmrevive.hardware.findings import Finding, FixKind, Severity
from rocmrevive.hardware.p2p import format_bytes
from rocmrevive.hardware.vbios import vbios_findings
from rocmrevive.hardware.vulkan import parse_vulkan_devices, radv_codename
from rocmrevive.rootfs import Root
from rocmrevive.trees.apps import App, find_apps
from rocmrevive.trees.miopen import miopen_trees
from rocmrevive.trees.survey import Survey


def vulkan_bar_findings(hw, apps: list[App], vulkan_text: str | None = None) -> list[Finding]:
    """A warning per gfx906 card whose BAR is smaller than its VRAM where a Vulkan device serves
    it: a llama.cpp or Ollama build with a Vulkan backend on the box, or the card's RADV device in
    the vulkaninfo given."""
    t = table()["vulkan"]
    builds = [f"{a.kind} at {a.where}" for a in apps if "vulkan" in a.backends]
    names = parse_vulkan_devices(vulkan_text) if vulkan_text else []
    out = []
    for g in hw.gpus:
        if g.processor != "gfx906" or g.large_bar is not False:
            continue
        code = g.kfd.name if g.kfd and g.kfd.name else None
        devices = [n for n in names if code and radv_codename(n) == code]
        via = builds + [f"the Vulkan device {n!r}" for n in devices]
        if not via:
            continue
        out.append(Finding(
            "vulkan-small-bar", Severity.WARNING, g.label,
            f"{g.label} ({g.model.name}, {g.bdf}): BAR {format_bytes(g.bar_bytes)} of {format_bytes(g.vram_bytes)} "
            f"VRAM, and Vulkan serves it ({'; '.join(via)})",
            t["cliffs"][0], " or ".join(t["bar_ways_out"]), FixKind.SETTING,
            {"bar_bytes": g.bar_bytes, "vram_bytes": g.vram_bytes, "vulkan": via,
             "env": t["env_host_visible"], "sources": t["sources"][1:3]}))
    return out


def box_findings(root: Root, s: Survey, *, env: Mapping[str, str] | None = None,
                 vulkan_text: str | None = None) -> list[Finding]:
    hw = s.hardware
    if not hw.gfx906:
        return []
    apps = find_apps(root, s.envs)
    return (override_findings(root, hw, env) + vbios_findings(root, hw)
            + vulkan_bar_findings(hw, apps, vulkan_text) + miopen_findings(miopen_trees(root, s.installs, s.envs), hw))
