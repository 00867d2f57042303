"""A multi-target RCCL installed side by side, never over AMD's copy: the library of a known
source (``sources.py``) that carries every processor the machine has, checked for this host's
ABI, written to ``/opt/rocmrevive/rccl/<version>/lib/librccl.so.1`` as one journaled transaction
(``rocmrevive rollback TXID`` undoes it byte for byte).

    detect → pick a source covering the union of processors → fetch (cache, sha256) → extract the
    one library → verify its device code (code-object core) → ABI check (SONAME, DT_NEEDED, symbol
    versions, HIP runtime of the user's programs) → plan + apply → verify installed → env lines

    rep = install_rccl(Root("/"), from_path="/srv/debs/librccl1_5.4.3-3+b1_amd64.deb")
    rep.state, rep.library, rep.env        # "installed", "/opt/rocmrevive/rccl/5.4.3/lib/librccl.so.1", [...]
"""
from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.codeobj.inspect import inspect_file
from rocmrevive.errors import RevError
from rocmrevive.hardware.sysfs import list_dir
from rocmrevive.hostlib.abi import check_library
from rocmrevive.hostlib.elfdyn import soname_of
from rocmrevive.install.core import Hooks, StagedFiles, Status, Verdict, install_component, staging_area
from rocmrevive.install.extract import staging_parent
from rocmrevive.rccl.audit import HIP_RE, PROVENANCE, ROCMREVIVE_PREFIX, coverage_of, machine_gpus
from rocmrevive.rccl.sources import RcclSource, pick_source
from rocmrevive.rootfs import Root
from rocmrevive.sources.cache import default_cache_dir
from rocmrevive.sources.fetch import fetch_source
from rocmrevive.sources.unpack import extract_selected
from rocmrevive.trees.installs import find_installs
from rocmrevive.trees.pythonenv import find_envs
from rocmrevive.trees.select import Tree, given_trees, library_folders
from rocmrevive.trees.trust import decide, refusal
from rocmrevive.txn.fsutil import sha256_file
from rocmrevive.txn.result import TxOutcome
from rocmrevive.txn.state import DEFAULT_STATE_DIR

SONAME = "librccl.so.1"
# where no side-by-side RCCL may go: AMD's trees and the distribution's folders
FORBIDDEN_PREFIXES = ("/opt/rocm", "/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc")


@dataclass
class HipConsumer:
    """Programs whose HIP runtime is fixed: a ROCm install or a PyTorch wheel."""
    what: str
    hip: str | None          # "libamdhip64.so.6"

    def to_json(self) -> dict:
        return {"what": self.what, "hip": self.hip}


@dataclass(frozen=True)
class RcclReport:
    """What ``rccl install`` did: built once, from the walk and what the component found."""

    devices: list[dict]
    processors: list[str]
    source: dict
    state: Status | TxOutcome = Status.PLANNED  # Status.PLANNED | INSTALLED | UNCHANGED, or TxOutcome.DRY_RUN
    artifact: dict | None = None
    library: str | None = None           # the machine path installed (or planned)
    staged_targets: list[str] = field(default_factory=list)
    coverage: list[dict] = field(default_factory=list)
    abi: dict | None = None
    abi_skipped: bool = False
    hip_conflicts: list[str] = field(default_factory=list)
    plan: dict | None = None
    transaction: dict | None = None
    verify_after: dict | None = None
    env: list[dict] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return self.state == Status.INSTALLED

    def to_json(self) -> dict:
        return {"devices": self.devices, "processors": self.processors, "source": self.source,
                "state": self.state, "artifact": self.artifact, "library": self.library,
                "staged_targets": self.staged_targets, "coverage": self.coverage, "abi": self.abi,
                "abi_skipped": self.abi_skipped, "hip_conflicts": self.hip_conflicts, "plan": self.plan,
                "transaction": self.transaction, "verify_after": self.verify_after, "env": self.env}


def _is_forbidden(prefix: str) -> bool:
    parts = posixpath.normpath(prefix).split("/")
    top = "/" + "/".join(parts[1:3]) if len(parts) > 2 else prefix
    if top == "/opt/rocm" or (len(parts) > 2 and parts[1] == "opt" and parts[2].startswith("rocm-")):
        return True
    return any(prefix == p or prefix.startswith(p + "/") for p in FORBIDDEN_PREFIXES if p != "/opt/rocm") \
        or "site-packages" in parts or "dist-packages" in parts


def hip_consumers(root: Root, pythons=(), tree: Tree | None = None) -> list[HipConsumer]:
    """The HIP runtimes programs on the machine are bound to: each ROCm install's and each
    PyTorch wheel's ``libamdhip64`` (``tree``: the ``--tree`` as ``trees.select`` resolved it)."""

    out = []
    installs, _ = find_installs(root)
    paths = [i.path for i in installs]
    if tree and tree.path not in paths:
        paths.append(tree.path)
    for p in paths:
        names = sorted(n for n in list_dir(root.path(f"{p}/lib")) if HIP_RE.match(n))
        versioned = [n for n in names if (m := HIP_RE.match(n)) and m.group(1)]
        if versioned:
            out.append(HipConsumer(f"ROCm at {p}", min(versioned, key=len)))
    envs, _ = find_envs(root, pythons, common=True)
    for env in envs:
        names = sorted(n for n in list_dir(root.path(f"{env.site_packages}/torch/lib")) if HIP_RE.match(n))
        if names:
            hip = soname_of(root.path(f"{env.site_packages}/torch/lib/{names[0]}")) or names[0]
            out.append(HipConsumer(f"PyTorch {env.torch_version or '?'} in {env.prefix or env.site_packages}", hip))
    return out


def abi_search_dirs(root: Root, tree: Tree | None) -> list[str]:
    """The folders a program's loader searches for RCCL's needs besides the system's: the ROCm
    tree's library folder (``--tree``, as ``trees.select`` selects it), else the default
    ``/opt/rocm``'s."""
    if tree:
        return [f.path for f in library_folders(root, [tree], find_installs(root)[0])]
    if root.path("/opt/rocm/lib").is_dir():
        return ["/opt/rocm/lib"]
    return []


def _stage_library(src: RcclSource, artifact, staging: Path) -> Path:
    got = extract_selected(Path(artifact), lambda name: name == src.member, staging,
                           member_prefix=src.member_prefix)
    if not got:
        raise RevError("VERIFY_FAILED", f"{artifact} holds no {src.member_prefix}{src.member}")
    return got[0].path


def _already_installed(root: Root, src: RcclSource, dest_dir: str, also_names, devices: list[dict],
                       processors: list[str]) -> RcclReport | None:
    """The same source is in place, byte for byte, under every name asked for: nothing to fetch
    (an idempotent run, e.g. from Ansible, costs one hash of the library). Its report, else None."""
    text = root.path(f"{dest_dir}/{PROVENANCE}")
    try:
        prov = json.loads(text.read_text())
    except (OSError, ValueError):
        return None
    if (prov.get("source") or {}).get("sha256") != src.sha256 or not prov.get("sha256"):
        return None
    names = [f"{dest_dir}/lib/{SONAME}"] + [f"{dest_dir}/lib/{n}" for n in also_names]
    for n in names:
        real = root.path(n)
        if real.is_symlink() or not real.is_file() or sha256_file(real)[0] != prov["sha256"]:
            return None
    targets = prov.get("targets", [])
    abi = {"ok": (prov.get("abi") or {}).get("ok"), "lines": (prov.get("abi") or {}).get("lines", []),
           "from": f"{dest_dir}/{PROVENANCE}"}
    return RcclReport(devices, processors, src.to_json(), Status.UNCHANGED, library=f"{dest_dir}/lib/{SONAME}",
                         staged_targets=targets, abi=abi, abi_skipped=bool((prov.get("abi") or {}).get("skipped")),
                         verify_after={"sha256_ok": True, "targets": targets, "serves_all": True},
                         env=_env_lines(dest_dir))


def _env_lines(dest_dir: str) -> list[dict]:
    return [{"key": "VLLM_NCCL_SO_PATH", "value": f"{dest_dir}/lib/{SONAME}",
             "why": "vLLM's PyNccl loads this file (a full path; a bare name returns PyTorch's own copy)"},
            {"key": "LD_LIBRARY_PATH", "value": f"{dest_dir}/lib",
             "why": "programs that link librccl.so.1 by name (rccl-tests, builds against the system ROCm)"}]


def install_rccl(root: Root, *, targets=(), source: str | None = None, from_path=None, cache=None,
                 mirror: str | None = None, tree: str | None = None, prefix: str | None = None,
                 also_names=(), skip_abi: bool = False, check: bool = False, pythons=(),
                 state_dir: str | None = None, log=lambda m: None) -> RcclReport:
    """Install the RCCL that serves every detected GPU side by side. Raises RevError:
    NOTHING_SUPPORTED (no known source has the targets), VERIFY_FAILED (the library lacks a
    target, or would not load here: the ABI verdict's lines say why), USAGE (a bad prefix)."""

    gpus, devices_from = machine_gpus(root, targets)
    if not gpus:
        raise RevError("NOTHING_SUPPORTED", f"no AMD GPU with a known target under {root.base}; pass --target")
    processors = sorted({g.processor for g in gpus})
    src = pick_source(processors, source)
    devices = [g.to_json() for g in gpus]
    dest_dir = (prefix or f"{ROCMREVIVE_PREFIX}/{src.install_name}").rstrip("/")
    if not dest_dir.startswith("/") or _is_forbidden(dest_dir):
        raise RevError("USAGE", f"--prefix {dest_dir}: rocmrevive installs RCCL side by side, never into a ROCm "
                                f"tree, a system folder or a Python environment; use a folder such as "
                                f"{ROCMREVIVE_PREFIX}/{src.install_name}")
    selected = given_trees(root, [tree])[0] if tree else None   # --tree converted once (trees.select)
    done = _already_installed(root, src, dest_dir, also_names, devices, processors)
    if done is not None:
        return done
    # who may write the prefix (trees.trust): decided on the deepest folder of it that exists
    err = refusal(decide(root.resolve(dest_dir)), dest_dir,
                  ([] if root.is_host else ["--root", str(root.base)]) + ["rccl", "install", "--prefix", dest_dir])
    if err is not None:
        raise err

    cache_dir = Path(cache) if cache else default_cache_dir(root)
    log(f"fetching {src.describe()}")
    art = fetch_source(src.as_source(), cache_dir, mirror=mirror, local=from_path, root=root)
    c = RcclSideBySide(root, devices, processors, src, art, gpus, dest_dir, tree=selected, also_names=also_names,
                       skip_abi=skip_abi, pythons=pythons)
    with staging_area(staging_parent(cache_dir)) as area:
        applied = install_component(root, c, area, state_dir=state_dir or DEFAULT_STATE_DIR, check=check)
    assert applied.plan is not None and applied.result is not None and applied.result.state is not None
    state = Status.INSTALLED if applied.result.state is TxOutcome.COMMITTED else applied.result.state
    return RcclReport(devices, processors, src.to_json(), state, art.to_json(), c.lib, c.staged_targets,
                         c.coverage, c.abi, c.abi_skipped, c.hip_conflicts, applied.plan.summary(),
                         applied.result.to_json(), c.verify_after, _env_lines(dest_dir), c.warnings)


class RcclSideBySide(Hooks):
    """The one library of an RCCL source, checked for device code and this host's ABI, with its
    provenance file, under a prefix of its own."""

    def __init__(self, root: Root, devices: list[dict], processors: list[str], src: RcclSource, art, gpus,
                 dest_dir: str, *, tree: Tree | None, also_names, skip_abi: bool, pythons):
        self.root, self.devices, self.processors, self.src, self.art, self.gpus = (root, devices, processors, src,
                                                                                   art, gpus)
        self.dest_dir, self.tree, self.also_names, self.skip_abi, self.pythons = (dest_dir, tree, also_names,
                                                                                  skip_abi, pythons)
        self.lib = f"{dest_dir}/lib/{SONAME}"
        self.label = self.lib
        self.sha = ""
        # what the walk finds: the report is built from these once, after it
        self.staged_targets: list[str] = []
        self.coverage: list[dict] = []
        self.abi: dict | None = None
        self.abi_skipped = False
        self.hip_conflicts: list[str] = []
        self.warnings: list[str] = []
        self.verify_after: dict | None = None

    def stage(self, area: Path) -> StagedFiles:
        staged = _stage_library(self.src, self.art.path, area / "pkg")
        self._check_device_code(staged)
        verdict, hip = self._check_abi(staged)
        files = self._files(staged)
        self.sha, size = sha256_file(staged)
        prov = {"schema": 1, "version": self.src.rccl_version, "source": self.src.to_json(),
                "artifact": self.art.to_json(), "file": self.lib, "also": sorted(files)[1:] if len(files) > 1 else [],
                "sha256": self.sha, "size": size, "targets": self.staged_targets, "needed_hip": hip,
                "devices": self.devices, "abi": {"ok": verdict.ok, "skipped": self.abi_skipped, "lines": verdict.lines}}
        prov_file = area / PROVENANCE
        prov_file.write_text(json.dumps(prov, indent=2, sort_keys=True) + "\n")
        files[f"{self.dest_dir}/{PROVENANCE}"] = prov_file
        # the plan's tree must exist: the nearest existing folder above the prefix (the folders
        # below it are created, journaled, and removed again by a rollback)
        tree_dir = self.dest_dir
        while tree_dir != "/" and not self.root.path(tree_dir).is_dir():
            tree_dir = posixpath.dirname(tree_dir)
        return StagedFiles(tree_dir, files, source=f"deb:{self.art.basename}",
                           meta={"kind": "rccl", "rccl_version": self.src.rccl_version,
                                 "source": self.src.name, "library": self.lib, "processors": self.processors})

    def _check_device_code(self, staged: Path) -> None:
        """The device code, read from the extracted file itself, serves every GPU."""
        src = self.src
        rep_co = inspect_file(staged)
        self.staged_targets = rep_co.targets
        cov = coverage_of(rep_co.entries, self.gpus)
        self.coverage = [c.to_json() for c in cov]
        lacking = [c for c in cov if not c.served]
        if rep_co.kind != "host-elf" or lacking:
            what = ", ".join(f"GPU{c.gpu} {c.target}" for c in lacking) or rep_co.kind
            raise RevError("VERIFY_FAILED", f"{src.member} of {src.describe()} has no device code for {what} "
                                            f"(it has {', '.join(rep_co.targets) or 'none'}); nothing was changed")

    def _check_abi(self, staged: Path):
        """The host ABI, as the loader would see it from its new place. Returns (verdict, the HIP
        runtime it needs)."""
        src, tree = self.src, self.tree
        verdict = check_library(self.root, staged, search_dirs=abi_search_dirs(self.root, tree),
                                origin=f"{self.dest_dir}/lib")
        self.abi = verdict.to_json()
        needed_hip = next((n for n in verdict.details.get("needed", []) if HIP_RE.match(n.get("name", ""))), None)
        hip = needed_hip["name"] if needed_hip else None
        for c in hip_consumers(self.root, self.pythons, tree):
            if hip and c.hip and c.hip != hip:
                self.hip_conflicts.append(f"{c.what} uses {c.hip}; this RCCL binds {hip}: two HIP runtimes in "
                                         f"one process do not work, so those programs cannot use it")
        refuse = list(verdict.lines)
        if tree:
            refuse += [x for x in self.hip_conflicts if f"at {tree.path.rstrip('/')}" in x]
        if refuse and not self.skip_abi:
            # the causes first: undefined symbols of a library that is missing follow from it
            causes = [x for x in refuse if not x.startswith(("undefined symbol", "… and "))] or refuse[:3]
            raise RevError("VERIFY_FAILED",
                           f"{SONAME} of {src.describe()} would not load here: " + "; ".join(causes)
                           + f". It needs {src.needs}. Nothing was changed; build RCCL for this machine with "
                             f"`rocmrevive rccl recipe`, or pass --skip-abi to install it anyway",
                           details={"abi": self.abi, "hip_conflicts": self.hip_conflicts})
        if refuse:
            self.abi_skipped = True
            self.warnings.append("ABI check failed and was skipped (--skip-abi): " + "; ".join(refuse[:3]))
        self.warnings += self.hip_conflicts
        return verdict, hip

    def _files(self, staged: Path) -> dict[str, Path]:
        """The library under its SONAME and any extra names; never over a file of someone else's."""
        files = {self.lib: staged}
        for name in self.also_names:
            if "/" in name or not name.startswith("librccl"):
                raise RevError("USAGE", f"--also-name {name}: a file name such as librccl.so")
            files[f"{self.dest_dir}/lib/{name}"] = staged
        existing = [d for d in files if os.path.lexists(self.root.path(d))]
        prov_path = f"{self.dest_dir}/{PROVENANCE}"
        if existing and not self.root.path(prov_path).is_file():
            raise RevError("VERIFY_FAILED", f"{existing[0]} exists and rocmrevive did not install it (no "
                                            f"{prov_path}); choose another --prefix")
        return files

    def verify(self, result) -> Verdict:
        real = self.root.path(self.lib)
        after = inspect_file(real)
        acov = coverage_of(after.entries, self.gpus)
        sha_ok, serves_all = sha256_file(real)[0] == self.sha, all(c.served for c in acov)
        v = {"sha256_ok": sha_ok, "targets": after.targets, "serves_all": serves_all}
        self.verify_after = v
        return Verdict(sha_ok and serves_all, v, why=f"{self.lib} differs from what was staged")
