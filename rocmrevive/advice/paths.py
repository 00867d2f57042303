"""Which path for this box: every stack a gfx906 card can use (the graft, Debian's own ROCm,
mixa3607's 7.14 repository, Gentoo's USE flag, AMD's nightly build, RomuloSK's 10.0 prefix,
staying on 6.3.x, Vulkan for llama.cpp/Ollama), ranked for what the owner runs, each with what it
entails (installs, replaces, stops working, cost to undo), what it fixes of today's findings, the
commands and the check that proves it worked.

The facts come from ``trees`` and ``diagnose`` (the distribution, the cards with their target,
vBIOS and BAR, every ROCm tree with the versions read from its own files, the apps and their
backends); every name, version, address and claim printed comes from
``rocmrevive/data/gfx906-paths.toml`` (and, for TheRock whole stacks, ``therock-gfx906.toml``),
each with its source; tests/test_advice_paths.py reads what is printed against those tables.

    a = advise(root, survey(root), use="chat"); [p.id for p in a.paths]
"""
from __future__ import annotations

import functools
import re
import sys
from dataclasses import dataclass, field
from importlib import resources

from rocmrevive.diagnose.programs import ProgramReport
from rocmrevive.errors import RevError
from rocmrevive.fs import read_regular
from rocmrevive.hardware.p2p import format_bytes
from rocmrevive.hardware.vbios import known as known_vbios
from rocmrevive.hardware.vbios import read_vbios
from rocmrevive.hardware.vulkan import parse_vulkan_devices, radv_codename
from rocmrevive.rootfs import Root
from rocmrevive.sources.manifest import TARGET, choose_manifest
from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests
from rocmrevive.trees import gfx906_choices as G
from rocmrevive.trees.apps import App, find_apps
from rocmrevive.trees.survey import Survey

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

FITS = ("best", "good", "works", "no")
# the order a default use is chosen in when several apps are found: the one that needs the most
USE_OF_APP = (("vllm", "vllm"), ("comfyui", "comfyui"), ("torch", "training"), ("llama.cpp", "chat"),
              ("ollama", "chat"))


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """The checked table (``rocmrevive/data/gfx906-paths.toml``)."""
    return tomllib.loads(resources.files("rocmrevive").joinpath("data/gfx906-paths.toml").read_text())


def uses() -> list[str]:
    return list(table()["uses"])


@dataclass(frozen=True)
class Issue:
    """One of today's findings the paths are weighed against."""
    key: str         # rocblas-served | rocblas-unserved | therock-no-gfx906 | torch-no-gfx906 |
    #                  ollama-rocm-no-gfx906 | llama-hip-no-gfx906
    subject: str
    text: str

    def to_json(self) -> dict:
        return {"key": self.key, "subject": self.subject, "text": self.text}


@dataclass(frozen=True)
class Box:
    distro: str | None
    distro_version: str | None
    distro_name: str | None
    cards: tuple[dict, ...]
    trees: tuple[dict, ...]
    apps: tuple[App, ...]
    issues: tuple[Issue, ...]
    vulkan_devices: tuple[str, ...] = ()
    whole_stacks: tuple[str, ...] = ()     # TheRock whole gfx906 stacks present (their kinds)
    kernel: str | None = None

    def to_json(self) -> dict:
        return {"distro": self.distro, "distro_version": self.distro_version, "distro_name": self.distro_name,
                "cards": list(self.cards), "trees": list(self.trees), "apps": [a.to_json() for a in self.apps],
                "findings": [i.to_json() for i in self.issues], "vulkan_devices": list(self.vulkan_devices),
                "whole_stacks": list(self.whole_stacks), "kernel": self.kernel}


@dataclass(frozen=True)
class PathChoice:
    rank: int
    id: str
    name: str
    kind: str
    fit: str
    why: str
    applies: bool
    not_here: str | None
    installs: list[str]
    replaces: list[str]
    stops: list[str]
    undo: str
    fixes: list[str]
    leaves: list[str]
    commands: list[str]
    check: str
    cliffs: list[str] = field(default_factory=list)
    present: str | None = None
    sources: list[str] = field(default_factory=list)
    unconfirmed: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"rank": self.rank, "id": self.id, "name": self.name, "kind": self.kind, "fit": self.fit,
                "why": self.why, "applies": self.applies, "not_here": self.not_here,
                "entails": {"installs": self.installs, "replaces": self.replaces, "stops": self.stops,
                            "undo": self.undo},
                "fixes": self.fixes, "leaves": self.leaves, "commands": self.commands, "check": self.check,
                "cliffs": self.cliffs, "present": self.present, "sources": self.sources,
                "unconfirmed": self.unconfirmed}


@dataclass(frozen=True)
class Advice:
    use: str
    use_title: str
    use_from: str
    box: Box
    paths: list[PathChoice]
    notes: list[str]

    def to_json(self) -> dict:
        return {"use": self.use, "use_title": self.use_title, "use_from": self.use_from, "box": self.box.to_json(),
                "paths": [p.to_json() for p in self.paths], "notes": self.notes}


# ---- reading the box ---------------------------------------------------------------------------

_OS_VALUE = re.compile(r"^[A-Za-z0-9._ ()/+,-]{1,80}$")


def os_release(root: Root) -> dict[str, str]:
    """``/etc/os-release`` (or ``/usr/lib/os-release``): ID, VERSION_ID, PRETTY_NAME, ID_LIKE; read
    capped, no link followed at the last step, values kept only when plain."""
    out: dict[str, str] = {}
    for path in ("/etc/os-release", "/usr/lib/os-release"):
        target = root.path(path)
        if target.is_symlink():         # Debian's /etc/os-release -> ../usr/lib/os-release
            continue
        try:
            raw = read_regular(target, max_size=64 << 10, what=path)
        except (FileNotFoundError, RevError, OSError):
            continue
        for line in raw.decode("utf-8", "replace").splitlines():
            k, sep, v = line.partition("=")
            v = v.strip().strip('"').strip("'")
            if sep and k in ("ID", "VERSION_ID", "PRETTY_NAME", "ID_LIKE") and _OS_VALUE.match(v):
                out[k] = v
        break
    return out


def _served(copies) -> dict[str, str]:
    """copy path -> the shipped manifest with a pinned gfx906 source for its rocBLAS."""
    try:
        manifests = load_manifests(default_manifest_dir())
    except RevError:
        return {}
    out = {}
    for c in copies:
        m = choose_manifest(manifests, c.rocblas_version, TARGET)
        if m is not None and m.sources_for(c.rocblas_version):
            out[c.path] = m.id
    return out


def _therock(c) -> bool:
    return bool(c.kpack or c.arch_folders or G.therock_release(c.rocm_version))


def read_box(root: Root, s: Survey, *, programs: ProgramReport | None = None, vulkan_text: str | None = None,
             apps: list[App] | None = None) -> Box:
    osr = os_release(root)
    gfx906 = {g.index for g in s.hardware.gfx906}
    cards = []
    for g in s.hardware.gpus:
        vbios, _problem = read_vbios(root, g)
        k = known_vbios(vbios)
        cards.append({"label": g.label, "bdf": g.bdf, "target": str(g.target) if g.target else None,
                      "processor": g.processor, "model": g.model.name, "vram_bytes": g.vram_bytes,
                      "bar_bytes": g.bar_bytes, "large_bar": g.large_bar, "vbios": vbios,
                      "vbios_known": k.what if k else None, "kfd_name": g.kfd.name if g.kfd else None})
    served = _served(s.copies)
    trees, issues = [], []
    for c in s.copies:
        lacks = bool(gfx906 & set(c.missing_for_gpus))
        m = re.match(r"^(.*)/lib(?:64)?/rocblas/library$", c.path)
        build = G.build_identity(root, m.group(1)) if m and _therock(c) else {}
        trees.append({"path": c.path, "layout": c.layout, "owner": c.owner,
                      "rocm_version": c.rocm_version, "rocm_version_from": c.rocm_version_source,
                      "rocblas_version": c.rocblas_version, "rocblas_version_from": c.version_source,
                      "gfx906": not lacks, "therock": _therock(c), "served_by": served.get(c.path),
                      "build": build})
        if not lacks:
            continue
        if c.layout == "bundle" and "ollama" in c.path:
            issues.append(Issue("ollama-rocm-no-gfx906", c.path, f"Ollama's ROCm runner {c.path} has no gfx906 "
                                                                  "rocBLAS files"))
        if _therock(c) and c.path not in served:
            issues.append(Issue("therock-no-gfx906", c.path, f"{c.path} (ROCm {c.rocm_version or '?'}, TheRock) has no "
                                                             "gfx906 device code and AMD publishes none for its release"))
        elif c.path in served:
            issues.append(Issue("rocblas-served", c.path, f"{c.path} (rocBLAS {c.rocblas_version or '?'}) lacks gfx906; "
                                                          f"the shipped manifest {served[c.path]} has a pinned source"))
        else:
            issues.append(Issue("rocblas-unserved", c.path, f"{c.path} (rocBLAS {c.rocblas_version or '?'}) lacks gfx906 "
                                                            "and no shipped manifest has a source for it"))
    for p in (programs.programs if programs else []):
        bad = [t for t, cell in p.cells.items() if cell.status in ("missing", "other-mode") and "gfx906" in t]
        if not bad:
            continue
        if p.kind.key == "torch":
            issues.append(Issue("torch-no-gfx906", p.path, f"PyTorch's {p.path} has no gfx906 kernels (built for "
                                                           f"{', '.join(p.processors) or 'no known target'})"))
        elif p.kind.key in ("llama.cpp", "llama-cpp-python", "cyllama-rocm"):
            issues.append(Issue("llama-hip-no-gfx906", p.path, f"llama.cpp's {p.path} has no gfx906 kernels"))
    apps = find_apps(root, s.envs) if apps is None else apps
    stacks = tuple(sorted({t.kind for t in s.therock if t.kind in ("gfx906-build", "mi50-prefix")}))
    names = tuple(parse_vulkan_devices(vulkan_text)) if vulkan_text else ()
    return Box(osr.get("ID"), osr.get("VERSION_ID"), osr.get("PRETTY_NAME"), tuple(cards), tuple(trees),
               tuple(apps), tuple(issues), names, stacks, s.hardware.host.kernel_release)


# ---- weighing the paths ---------------------------------------------------------------------

def default_use(box: Box) -> tuple[str, str]:
    kinds = {a.kind: a for a in box.apps}
    for app, use in USE_OF_APP:
        if app in kinds:
            return use, f"{app} found at {kinds[app].where}"
    return "chat", "no llama.cpp, Ollama, PyTorch, vLLM or ComfyUI found: chat assumed (pass --for)"


def _small_bar_cards(box: Box) -> list[dict]:
    return [c for c in box.cards if c["processor"] == "gfx906" and c["large_bar"] is False]


def vulkan_served(box: Box) -> list[str]:
    """What serves a gfx906 card through Vulkan here: a llama.cpp or Ollama build with a Vulkan
    backend, or a RADV device the given vulkaninfo lists for a vega20 card."""
    out = [f"{a.kind} {a.where}" for a in box.apps if "vulkan" in a.backends]
    out += [f"Vulkan device {n}" for n in box.vulkan_devices
            if radv_codename(n) and any(c["kfd_name"] == radv_codename(n) for c in box.cards)]
    return out


def _stack_choice(version: str, layout: str = "amd") -> G.Choice | None:
    cs = G.choices(version, tree="/opt/rocm/lib/rocblas/library", layout=layout)
    return next((c for c in cs if c.kind == "whole-stack"), None)


def _commands(p: dict, box: Box, use: str) -> tuple[list[str], str]:
    pid = p["id"]
    if pid == "mixa3607":
        c = _stack_choice("7.14.0")
        return (c.commands if c else []), p["check"]
    if pid == "romulosk":
        c = _stack_choice("10.0.0")
        return (c.commands if c else []), p["check"]
    if pid == "nightly":
        c = next(c for c in G.choices(None, tree="/opt/therock-nightly-gfx906/lib/rocblas/library", layout="amd")
                 if c.kind == "nightly-build")
        return c.commands, c.check
    cmds = list(p.get("commands", []))
    if pid == "vulkan" and _small_bar_cards(box):
        var = table()["vulkan"]["env_host_visible"]
        cmds.append(f"export {var}=1   # a card here has a BAR smaller than its VRAM")
    return cmds, p["check"]


def _applies(p: dict, box: Box, use: str, issues: set[str]) -> str | None:
    """Why path ``p`` does not apply to this box (None when it does)."""
    pid = p["id"]
    distro = (box.distro or "").lower()
    if p["kind"] == "vulkan" and table()["uses"][use]["needs_rocm"]:
        return table()["no_vulkan_route"]["claim"]
    if "distros" in p and distro not in p["distros"]:
        return f"{p['applies']}; this box is {box.distro_name or box.distro or 'an unknown distribution'}"
    if pid == "mixa3607" and box.distro_version not in (None, "24.04"):
        return f"{p['applies']} only; this box is {box.distro_name or box.distro_version}"
    if pid == "graft" and "rocblas-served" not in issues:
        return "no rocBLAS copy here lacks gfx906 with a pinned source" + (
            " (a TheRock tree carries device code in .kpack archives: nothing to graft)" if "therock-no-gfx906" in issues
            else "")
    return None


def _present(p: dict, box: Box) -> str | None:
    pid = p["id"]
    if pid == "vulkan":
        found = [f"{a.kind} at {a.where}" for a in box.apps if "vulkan" in a.backends]
        return "already here: " + "; ".join(found) if found else None
    if pid == "mixa3607" and "gfx906-build" in box.whole_stacks:
        return "already here: a TheRock gfx906 whole-stack build"
    if pid == "romulosk" and "mi50-prefix" in box.whole_stacks:
        return "already here: an isolated MI50 prefix"
    if pid == "debian":
        found = [t["owner"] or t["path"] for t in box.trees if t["layout"] == "debian" and t["gfx906"]]
        return "already here: " + ", ".join(found) if found else None
    if pid == "stay-6.3":
        found = [t["path"] for t in box.trees if (t["rocm_version"] or "").startswith("6.3") and t["gfx906"]]
        return "already here: " + ", ".join(found) if found else None
    if pid == "graft":
        return None
    return None


def advise(root: Root, s: Survey, *, use: str | None = None, programs: ProgramReport | None = None,
           vulkan_text: str | None = None, apps: list[App] | None = None) -> Advice:
    """The paths for this box, ranked for ``use`` (default: from the apps found)."""
    box = read_box(root, s, programs=programs, vulkan_text=vulkan_text, apps=apps)
    if use is None:
        use, use_from = default_use(box)
    else:
        if use not in table()["uses"]:
            raise RevError("USAGE", f"--for {use}: not one of {', '.join(uses())}")
        use_from = "--for"
    t = table()
    issues = {i.key for i in box.issues}
    order = {pid: n for n, pid in enumerate(p["id"] for p in t["path"])}
    cands = []
    for p in t["path"]:
        fit = p["fit"][use]
        not_here = _applies(p, box, use, issues)
        fixes = [i.text for i in box.issues if i.key in p["fixes"]]
        leaves = [i.text for i in box.issues if i.key not in p["fixes"]]
        cmds, check = _commands(p, box, use)
        cliffs: list[str] = []
        if p["kind"] == "vulkan":
            cliffs = [f"{c['label']}: BAR {format_bytes(c['bar_bytes'])} of {format_bytes(c['vram_bytes'])} VRAM: the "
                      "host-visible-VRAM cliff applies here; ways out: " + " / ".join(t["vulkan"]["bar_ways_out"])
                      for c in _small_bar_cards(box)] + list(t["vulkan"]["cliffs"])
        installs = list(p["installs"])
        present = _present(p, box)
        if present:
            installs = [f"nothing new ({present})"]
        sources = list(p["sources"])
        unconfirmed = list(p.get("unconfirmed", []))
        if p["kind"] == "vulkan":
            sources += t["vulkan"]["sources"] + t["ollama"]["sources"]
            unconfirmed += t["vulkan"]["unconfirmed"] + t["ollama"]["unconfirmed"]
            if not_here:
                sources += t["no_vulkan_route"]["sources"]
        cands.append((not_here is not None, FITS.index(fit), -len(fixes), p["cost"], order[p["id"]],
                      dict(id=p["id"], name=p["name"], kind=p["kind"], fit=fit if not_here is None else "no",
                           why=p["fit_why"], applies=not_here is None, not_here=not_here, installs=installs,
                           replaces=list(p["replaces"]), stops=list(p["stops"]), undo=p["undo"], fixes=fixes,
                           leaves=leaves, commands=cmds, check=check, cliffs=cliffs, present=present,
                           sources=sources, unconfirmed=unconfirmed)))
    cands.sort(key=lambda x: x[:5])
    paths = [PathChoice(rank=n, **d) for n, (*_k, d) in enumerate(cands, 1)]
    notes = []
    if t["uses"][use]["needs_rocm"]:
        notes.append(t["no_vulkan_route"]["claim"])
    if "torch-no-gfx906" in issues:
        notes.append("a PyTorch wheel here has no gfx906 kernels: no path above changes the wheel itself; it needs a "
                     "wheel built with gfx906 (PYTORCH_ROCM_ARCH=gfx906)")
    served_by_vulkan = vulkan_served(box)
    if served_by_vulkan and _small_bar_cards(box):
        notes.append("Vulkan serves a card with a small BAR here (" + "; ".join(served_by_vulkan) + "): "
                     + " / ".join(t["vulkan"]["bar_ways_out"]))
    return Advice(use, t["uses"][use]["title"], use_from, box, paths, notes)


def render_lines(a: Advice) -> list[str]:
    """The human answer, as lines (the CLI prints them)."""
    b = a.box
    out = [f"Which path for this box, for {a.use}: {a.use_title} ({a.use_from})."]
    out.append(f"  distribution: {b.distro_name or b.distro or 'unknown'}, kernel {b.kernel or '?'}")
    for c in b.cards:
        if c["processor"] != "gfx906":
            continue
        bar = (f"BAR {format_bytes(c['bar_bytes'])} of {format_bytes(c['vram_bytes'])}" if c["bar_bytes"] else "BAR ?")
        out.append(f"  {c['label']} {c['bdf']} {c['target']} {c['model']}, {bar}, vBIOS {c['vbios'] or '?'}")
    for t in b.trees:
        out.append(f"  tree {t['path']}: ROCm {t['rocm_version'] or '?'} ({t['rocm_version_from'] or '?'}), rocBLAS "
                   f"{t['rocblas_version'] or '?'} ({t['rocblas_version_from'] or '?'}), "
                   + ("has gfx906" if t["gfx906"] else "no gfx906"))
    for app in b.apps:
        out.append(f"  {app.kind} {app.where}" + (f" [{', '.join(app.backends)}]" if app.backends else "")
                   + (f" {app.version}" if app.version else ""))
    if b.issues:
        out.append("Today's findings:")
        out += [f"  - {i.text}" for i in b.issues]
    out.append("")
    for p in a.paths:
        head = f"{p.rank}. {p.name} [{p.fit}]"
        out.append(head if p.applies else f"{head} -- not for this box: {p.not_here}")
        if not p.applies:
            continue
        out.append(f"   why: {p.why}")
        if p.present:
            out.append(f"   {p.present}")
        out.append(f"   installs: {'; '.join(p.installs)}")
        out.append(f"   replaces: {'; '.join(p.replaces)}")
        out.append(f"   stops working: {'; '.join(p.stops)}")
        out.append(f"   undo: {p.undo}")
        out.append("   fixes: " + ("; ".join(p.fixes) if p.fixes else "none of today's findings"))
        out += [f"   cliff: {cliff}" for cliff in p.cliffs]
        out += [f"   $ {cmd}" if not cmd.startswith("#") else f"   {cmd}" for cmd in p.commands]
        out.append(f"   check: {p.check}")
        if p.unconfirmed:
            out.append(f"   not confirmed: {'; '.join(p.unconfirmed)}")
        out.append("")
    out += [f"note: {n}" for n in a.notes]
    return out
