"""Every ``librccl.so`` the user's programs may load, the GPU targets each really embeds, and
which of the machine's cards each copy can serve.

Where programs find RCCL (each copy lists every way it is reached, its ``channels``):

* ``rocm-tree``: AMD's installs, ``/opt/rocm-X.Y.Z/lib/librccl.so.1`` (what rccl-tests and
  programs built against the tree load);
* ``system``: the distribution's copy (Debian's ``librccl1`` in ``/usr/lib/<triplet>``, Fedora's
  ``/usr/lib64``), found by the loader through ``ld.so.cache``;
* ``python-torch``: a PyTorch ROCm wheel's own copy in ``site-packages/torch/lib`` (loaded by
  ``libtorch_hip.so`` itself, whatever the system has); ``python-rocm-sdk``: TheRock's wheels;
* ``vllm``: the file ``VLLM_NCCL_SO_PATH`` names (vLLM's PyNccl ``dlopen``s it), read from an
  environment file or given;
* ``ld-library-path``: folders named by ``LD_LIBRARY_PATH`` (an environment file or given);
* ``rocmrevive``: side-by-side installs under ``/opt/rocmrevive/rccl/<version>/lib``.

The targets come from the library's ``.hip_fatbin`` (the code-object core), never from
``strings``. A copy serves a GPU when one of its code objects loads on the GPU's exact target.

    rep = audit(Root("/"), pythons=["/home/alice/venv"], env_files=["/etc/vllm.env"])
    [(c.path, c.serves, c.missing) for c in rep.copies]
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field

from rocmrevive.codeobj.inspect import inspect_file
from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.errors import RevError
from rocmrevive.hardware import scan
from rocmrevive.hardware.sysfs import list_dir, read_text
from rocmrevive.hostlib.elfdyn import DynamicError, read_dynamic
from rocmrevive.rccl.envfile import parse_env_text, path_list
from rocmrevive.rootfs import Root
from rocmrevive.trees.installs import find_installs
from rocmrevive.trees.pythonenv import find_envs

LIB_RE = re.compile(r"^librccl(?:-[0-9a-f]{8})?\.so(?:\.\d+)*$")
# AMD names the file after the ROCm release: librccl.so.1.0.60403 = ROCm 6.4.3
AMD_NAME_RE = re.compile(r"^librccl\.so\.\d+\.\d+\.(\d{5,6})$")
SYSTEM_DIRS = ("/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/lib64", "/lib64",
               "/usr/lib", "/usr/local/lib")
ROCMREVIVE_PREFIX = "/opt/rocmrevive/rccl"
PROVENANCE = "rocmrevive-rccl.json"
HIP_RE = re.compile(r"^libamdhip64\.so(?:\.(\d+))?")
CHANNEL_ORDER = ("given", "vllm", "ld-library-path", "python-torch", "python-rocm-sdk", "rocmrevive",
                 "rocm-tree", "system")


@dataclass
class Channel:
    """One way a program reaches a copy: ``kind`` (see the module doc), ``via`` (the path or
    setting as found), ``detail`` (who loads it that way)."""
    kind: str
    via: str
    detail: str = ""

    def to_json(self) -> dict:
        return {"kind": self.kind, "via": self.via, "detail": self.detail}


@dataclass
class Coverage:
    gpu: int
    target: str
    served: bool
    by: list[str]            # the library's targets that load on this GPU
    co_versions: list[int]

    def to_json(self) -> dict:
        return {"gpu": self.gpu, "target": self.target, "served": self.served, "by": self.by,
                "co_versions": self.co_versions}


@dataclass
class RcclCopy:
    path: str                              # machine path of the file itself (links resolved)
    names: list[str] = field(default_factory=list)
    channels: list[Channel] = field(default_factory=list)
    size: int = 0
    kind: str = ""                         # the code-object core's classification
    soname: str | None = None
    needed_hip: str | None = None          # "libamdhip64.so.5": the HIP runtime it binds to
    version: str | None = None
    version_source: str | None = None
    targets: list[str] = field(default_factory=list)
    coverage: list[Coverage] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def serves(self) -> list[int]:
        return [c.gpu for c in self.coverage if c.served]

    @property
    def missing(self) -> list[int]:
        return [c.gpu for c in self.coverage if not c.served]

    @property
    def serves_all(self) -> bool:
        return bool(self.coverage) and not self.missing

    @property
    def label(self) -> str:
        v = f" {self.version}" if self.version else ""
        return f"{self.path}{v}"

    def to_json(self) -> dict:
        return {"path": self.path, "names": self.names, "channels": [c.to_json() for c in self.channels],
                "size": self.size, "kind": self.kind, "soname": self.soname, "needed_hip": self.needed_hip,
                "version": self.version, "version_source": self.version_source, "targets": self.targets,
                "coverage": [c.to_json() for c in self.coverage], "serves": self.serves,
                "missing": self.missing, "serves_all": self.serves_all, "problems": self.problems}


@dataclass
class Gpu:
    """The card a copy must serve: its index in HIP's order, exact target and a name."""
    index: int
    target: TargetId
    name: str
    bdf: str | None = None

    @property
    def processor(self) -> str:
        return self.target.processor

    def to_json(self) -> dict:
        return {"index": self.index, "target": str(self.target), "processor": self.processor,
                "name": self.name, "bdf": self.bdf}


@dataclass
class AuditReport:
    gpus: list[Gpu]
    devices_from: str                      # "detected" | "--target"
    copies: list[RcclCopy]
    settings: dict[str, dict] = field(default_factory=dict)   # VLLM_NCCL_SO_PATH etc. and where from
    problems: list[str] = field(default_factory=list)

    @property
    def processors(self) -> list[str]:
        return sorted({g.processor for g in self.gpus})

    @property
    def serving_all(self) -> list[RcclCopy]:
        return [c for c in self.copies if c.serves_all]

    def to_json(self) -> dict:
        return {"gpus": [g.to_json() for g in self.gpus], "devices_from": self.devices_from,
                "processors": self.processors, "settings": self.settings,
                "copies": [c.to_json() for c in self.copies],
                "serving_all": [c.path for c in self.serving_all], "problems": self.problems}


# ----------------------------------------------------------------------------------------
# the GPUs

def machine_gpus(root: Root, targets=()) -> tuple[list[Gpu], str]:
    """``--target`` values as pseudo-GPUs, else the detected GPUs with a target (HIP order)."""
    if targets:
        out = []
        for i, t in enumerate(targets):
            try:
                out.append(Gpu(i, TargetId.parse(t), f"--target {t}"))
            except ValueError as exc:
                raise RevError("USAGE", f"--target {t}: {exc}") from None
        return out, "--target"

    hw = scan(root)
    gpus = [Gpu(g.index, g.target, g.model.name, g.bdf) for g in hw.gpus if g.target is not None]
    return gpus, "detected"


def coverage_of(entries, gpus: list[Gpu]) -> list[Coverage]:
    """Per GPU: the code objects (``CodeObject`` entries) that load on its exact target."""
    out = []
    for g in gpus:
        loads = [e for e in entries if e.target.can_load_on(g.target)]
        out.append(Coverage(g.index, str(g.target), bool(loads), sorted({str(e.target) for e in loads}),
                            sorted({e.co_version for e in loads if e.co_version is not None})))
    return out


# ----------------------------------------------------------------------------------------
# finding the copies

def _glob_names(root: Root, folder: str) -> list[str]:
    return sorted(n for n in list_dir(root.path(folder)) if LIB_RE.match(n))


class _Finder:
    def __init__(self, root: Root):
        self.root = root
        self.copies: dict[str, RcclCopy] = {}     # real machine path -> copy
        self.problems: list[str] = []

    def add(self, mpath: str, channel: Channel) -> RcclCopy | None:
        real = self.root.path(mpath)
        if not os.path.lexists(real):
            return None
        try:
            resolved = self.root.resolve(mpath)
        except (ValueError, OSError) as exc:
            self.problems.append(f"{mpath}: {exc}")
            return None
        if not resolved.is_file():
            self.problems.append(f"{mpath}: leads to {self.root.machine_path(resolved)}, which is not a file")
            return None
        key = self.root.machine_path(resolved)
        copy = self.copies.get(key)
        if copy is None:
            copy = self.copies[key] = RcclCopy(key)
        if mpath not in copy.names:
            copy.names.append(mpath)
        if not any(c.kind == channel.kind and c.via == channel.via for c in copy.channels):
            copy.channels.append(channel)
        return copy

    def folder(self, folder: str, kind: str, detail: str = "") -> int:
        """The copies in one folder; each gets one channel from it, through its shortest name
        (``librccl.so.1`` rather than ``librccl.so.1.0.60403``)."""
        folder = folder.rstrip("/") or "/"
        n = 0
        for name in sorted(_glob_names(self.root, folder), key=lambda x: (len(x), x)):
            mpath = f"{folder}/{name}"
            before = {k: len(c.channels) for k, c in self.copies.items()}
            copy = self.add(mpath, Channel(kind, mpath, detail))
            if copy is None:
                continue
            n += 1
            mine = [c for c in copy.channels if c.kind == kind and os.path.dirname(c.via) == folder]
            if len(mine) > 1 and before.get(copy.path, 0) < len(copy.channels):
                copy.channels.remove(mine[-1])  # the same file again under a longer name
        return n


SETTINGS = ("VLLM_NCCL_SO_PATH", "LD_LIBRARY_PATH", "LD_PRELOAD", "NCCL_P2P_DISABLE",
            "HSA_FORCE_FINE_GRAIN_PCIE", "HIP_VISIBLE_DEVICES")


def read_env_files(root: Root, files) -> tuple[dict[str, dict], list[str]]:
    """The RCCL-related settings of environment files (machine paths, read under the root):
    {VAR: {"value", "from"}}; a later file wins."""
    settings: dict[str, dict] = {}
    problems = []
    for mpath in files:
        text, problem = read_text(root.path(str(mpath)), limit=4 << 20)
        if text is None:
            problems.append(f"--env-file {mpath}: {problem or 'no such file'}")
            continue
        for k, v in parse_env_text(text).items():
            if k in SETTINGS:
                settings[k] = {"value": v, "from": str(mpath)}
    return settings, problems


def find_copies(root: Root, *, pythons=(), env_files=(), vllm_nccl_so_path: str | None = None,
                ld_library_path: str | None = None, libs=(), search: bool = True
                ) -> tuple[list[RcclCopy], dict[str, dict], list[str]]:
    """Every RCCL copy reachable on the machine (``search``) plus the ones named (``libs``,
    settings from ``env_files`` — real paths of files the user names — and the options)."""
    f = _Finder(root)
    settings, problems = read_env_files(root, env_files)
    if vllm_nccl_so_path:
        settings["VLLM_NCCL_SO_PATH"] = {"value": vllm_nccl_so_path, "from": "--vllm-nccl-so-path"}
    if ld_library_path:
        settings["LD_LIBRARY_PATH"] = {"value": ld_library_path, "from": "--ld-library-path"}
    for lib in libs:
        if not f.add(str(lib), Channel("given", str(lib), "named on the command line")):
            problems.append(f"--lib {lib}: no such file under the root")
    problems += _named_by_settings(f, settings)
    if search:
        _search_machine(root, f)
    # the environments named are searched even with search=False
    envs, env_problems = find_envs(root, pythons, common=search)
    problems += env_problems
    for env in envs:
        _search_env(root, f, env)
    copies = list(f.copies.values())
    for c in copies:
        c.channels.sort(key=lambda ch: CHANNEL_ORDER.index(ch.kind))
    copies.sort(key=lambda c: (CHANNEL_ORDER.index(c.channels[0].kind), c.path))
    return copies, settings, problems + f.problems


def _named_by_settings(f: "_Finder", settings: dict[str, dict]) -> list[str]:
    """The copies VLLM_NCCL_SO_PATH and LD_LIBRARY_PATH lead to; the problems with them."""
    problems = []
    so = settings.get("VLLM_NCCL_SO_PATH")
    if so:
        value = so["value"]
        if "/" not in value:
            problems.append(f"VLLM_NCCL_SO_PATH={value} ({so['from']}) is a bare name: vLLM's dlopen then "
                            f"returns whatever librccl the process already loaded (PyTorch's own copy); "
                            f"give the full path")
        elif not f.add(value, Channel("vllm", f"VLLM_NCCL_SO_PATH={value}",
                                      f"vLLM's PyNccl loads this file ({so['from']})")):
            problems.append(f"VLLM_NCCL_SO_PATH={value} ({so['from']}): no such file")
    ld = settings.get("LD_LIBRARY_PATH")
    if ld:
        for d in path_list(ld["value"]):
            f.folder(d, "ld-library-path", f"searched before the system folders ({ld['from']})")
    return problems


def _search_machine(root: Root, f: "_Finder") -> None:
    """ROCm trees, rocmrevive's side-by-side installs and the loader's default folders."""
    installs, _link = find_installs(root)
    for inst in installs:
        for sub in ("lib", "lib64"):
            f.folder(f"{inst.path}/{sub}", "rocm-tree", f"ROCm {inst.version or '?'} at {inst.path}")
    for d in list_dir(root.path(ROCMREVIVE_PREFIX)):
        f.folder(f"{ROCMREVIVE_PREFIX}/{d}/lib", "rocmrevive", "installed side by side by rocmrevive")
    for d in SYSTEM_DIRS:
        f.folder(d, "system", "the dynamic loader's default folders (ld.so.cache)")


def _search_env(root: Root, f: "_Finder", env) -> None:
    """PyTorch's own copy in a Python environment, and TheRock's SDK wheels there."""
    f.folder(f"{env.site_packages}/torch/lib", "python-torch",
             f"PyTorch {env.torch_version or '?'} in {env.prefix or env.site_packages} loads its own copy")
    for sdk in list_dir(root.path(env.site_packages)):
        if sdk.startswith("_rocm_sdk_libraries"):
            f.folder(f"{env.site_packages}/{sdk}/lib", "python-rocm-sdk", f"TheRock wheel {sdk}")


# ----------------------------------------------------------------------------------------
# what each copy is

def _dpkg_owner(root: Root, names: list[str]) -> tuple[str, str] | None:
    """(package, version) of the dpkg package whose file list holds one of ``names``."""
    info = "/var/lib/dpkg/info"
    wanted = set(names)
    for lst in list_dir(root.path(info)):
        if not lst.endswith(".list") or "rccl" not in lst:
            continue
        text, _ = read_text(root.path(f"{info}/{lst}"), limit=16 << 20)
        if not text or not wanted.intersection(text.splitlines()):
            continue
        pkg = lst[:-len(".list")].split(":")[0]
        status, _ = read_text(root.path("/var/lib/dpkg/status"), limit=256 << 20)
        for stanza in (status or "").split("\n\n"):
            fields = dict(line.split(":", 1) for line in stanza.splitlines()
                          if line and not line[0].isspace() and ":" in line)
            if fields.get("Package", "").strip() == pkg and fields.get("Status", "").strip().endswith(" installed"):
                return pkg, fields.get("Version", "").strip()
        return pkg, ""
    return None


def _version(root: Root, copy: RcclCopy) -> None:
    lib_dir = os.path.dirname(copy.path)
    prov, _ = read_text(root.path(f"{os.path.dirname(lib_dir)}/{PROVENANCE}"))
    if prov:
        try:
            d = json.loads(prov)
            copy.version, copy.version_source = d.get("version"), f"{os.path.dirname(lib_dir)}/{PROVENANCE}"
            return
        except ValueError:
            copy.problems.append(f"{PROVENANCE} is not JSON")
    for name in [copy.path] + copy.names:
        m = AMD_NAME_RE.match(os.path.basename(name))
        if m:
            n = int(m.group(1))
            copy.version, copy.version_source = f"ROCm {n // 10000}.{n // 100 % 100}.{n % 100}", "file name"
            return
    owner = _dpkg_owner(root, [copy.path] + copy.names)
    if owner:
        copy.version, copy.version_source = f"{owner[0]} {owner[1]}".strip(), "dpkg"
        return
    for ch in copy.channels:
        if ch.kind == "rocm-tree":
            copy.version, copy.version_source = ch.detail.split(" at ")[0], ".info/version"
            return
        if ch.kind == "python-torch":
            copy.version, copy.version_source = ch.detail.split(" in ")[0].replace(" loads its own copy", ""), \
                "torch/version.py"
            return


def describe(root: Root, copy: RcclCopy, gpus: list[Gpu]) -> RcclCopy:
    """Fill in what the file is: device targets, SONAME, HIP runtime, version, coverage."""

    real = root.path(copy.path)
    rep = inspect_file(real)
    copy.size, copy.kind = rep.size, rep.kind
    copy.targets = rep.targets
    copy.problems += sorted(set(rep.problems))[:5]
    if rep.kind not in ("host-elf", "host-elf-no-device-code"):
        copy.problems.append(f"not a host library with device code ({rep.kind})")
    else:
        try:
            dyn = read_dynamic(real)
            copy.soname = dyn.soname
            copy.needed_hip = next((n for n in dyn.needed if HIP_RE.match(n)), None)
        except DynamicError as exc:
            copy.problems.append(str(exc))
    if rep.kind == "host-elf-no-device-code":
        copy.problems.append("carries no device code at all")
    copy.coverage = coverage_of(rep.entries, gpus)
    _version(root, copy)
    return copy


def audit(root: Root, *, targets=(), pythons=(), env_files=(), vllm_nccl_so_path=None,
          ld_library_path=None, libs=(), search: bool = True) -> AuditReport:
    """Find the copies, read each, and say which GPUs each serves."""
    gpus, devices_from = machine_gpus(root, targets)
    copies, settings, problems = find_copies(root, pythons=pythons, env_files=env_files,
                                             vllm_nccl_so_path=vllm_nccl_so_path,
                                             ld_library_path=ld_library_path, libs=libs, search=search)
    for c in copies:
        describe(root, c, gpus)
    return AuditReport(gpus, devices_from, copies, settings, problems)
