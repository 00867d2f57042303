"""Host-library grafts as an install component (docs/grafts.md): for every ROCm tree and every
``library`` component of a manifest for the tree's ROCm version, the file the component's SONAME
link resolves to is replaced, one transaction per library, when (1) its device code lacks a
detected gfx906 target and (2) the source's library passes the static ABI check
(``hostlib.check_library``) against this root's own libraries, with the tree as its ``$ORIGIN``,
serving every detected GPU. A file a dpkg package owns is diverted (``txn.divert``). A graft the
ABI check refuses is a finding (``status: refused`` with the verdict's lines, and a warning), not
an error.

    lp = LibraryPlan("/opt/rocm-6.4.3/lib", "librocsparse.so.1", "rocSPARSE", "6.4.3")
    plan_library(ctx, lp, manifest, comp)
"""
from __future__ import annotations

import os
from pathlib import Path

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose.audit import GraftAbi
from rocmrevive.install.core import Decline, Hooks, Staged, Status, Verdict, install_component, staging_area
from rocmrevive.install.extract import cached_component_file, component_file, fetch_first
from rocmrevive.install.report import LibraryPlan, record_applied
from rocmrevive.rootfs import Root
from rocmrevive.trees.layout import tree_library

TARGET = "gfx906"


def library_components(manifests, rocm_version: str | None):
    """(manifest, component) for every library component of a gfx906 manifest whose ROCm range
    holds ``rocm_version`` (every one when the version is unknown: the plan then says so)."""
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(rocm_version) if rocm_version else None
    except InvalidVersion:
        v = None
    return [(m, comp) for m in manifests if m.target == TARGET for comp in m.components_of("library")
            if v is None or m.rocm_versions.contains(v, prereleases=True)]


def serves(report, devices: list[TargetId]) -> tuple[list[TargetId], list[str]]:
    """(the devices whose code ``report`` (an inspect FileReport) lacks, its processors)."""
    return [c.device for c in report.coverage(devices) if not c.loads], report.processors


def plan_library(ctx, lp: LibraryPlan, manifest, comp) -> None:
    """Decide, stage, apply and verify one graft; the outcome lands in ``lp``."""
    from rocmrevive.codeobj.inspect import inspect_file

    path, why = tree_library(ctx.root, lp.tree, lp.soname)
    if path is None:
        lp.status, lp.reason = (Status.REFUSED, why) if why else (Status.ABSENT, f"no {lp.soname} in {lp.tree}")
        return
    lp.path = path
    current = inspect_file(ctx.root.resolve(path))
    if current.kind == "unreadable":
        lp.status, lp.reason = Status.REFUSED, f"{path}: {'; '.join(current.problems) or 'unreadable'}"
        return
    lacking, lp.has = serves(current, ctx.devices)
    lp.missing = [str(d) for d in lacking]
    if not lacking:
        lp.status, lp.reason = Status.SATISFIED, "has device code for " + ", ".join(map(str, ctx.devices))
        return
    if lp.rocm_version is None:
        lp.status, lp.reason = Status.UNSUPPORTED, (f"the ROCm version of {lp.tree} is unknown (no .info/version), "
                                                    f"so no source can be matched to it")
        return
    sources = manifest.sources_for_rocm(lp.rocm_version)
    if not sources:
        lp.status = Status.UNSUPPORTED
        lp.reason = f"{manifest.id} has no source built for ROCm {lp.rocm_version}"
        return
    source, fetched = fetch_first(ctx.root, sources, ctx.cache_dir, mirror=ctx.mirror, from_path=ctx.from_path,
                                  log=ctx.log, progress=ctx.progress, manifests=ctx.manifests)
    lp.source, lp.artifact = source.to_json(), fetched.to_json()
    # the graft must serve the gfx906 devices, and every other detected GPU the tree's copy serves
    keep = [o for o in ctx.others if not serves(current, [o])[0]]
    graft = LibraryGraft(ctx, lp, manifest, comp, source, fetched, [*ctx.devices, *keep])
    with staging_area(ctx.staging) as area:
        applied = install_component(ctx.root, graft, area, state_dir=ctx.state_dir, check=ctx.check,
                                    confirm=ctx.confirm)
    record_applied(lp, applied, check=ctx.check)
    if applied.plan is None:
        return
    lp.reason = {
        Status.DECLINED: "declined at the prompt; nothing was changed",
        Status.PLANNED: f"would replace {path} with {source.describe()}",
        Status.INSTALLED: f"replaced with {source.describe()} (transaction {lp.txid})",
    }.get(applied.status, "graft already in place")


class LibraryGraft(Hooks):
    """One source's library in place of the tree's file: ABI-checked when staged and after."""

    def __init__(self, ctx, lp: LibraryPlan, manifest, comp, source, fetched, targets: list[TargetId]):
        self.ctx, self.lp, self.manifest, self.comp = ctx, lp, manifest, comp
        self.source, self.fetched, self.targets = source, fetched, targets
        self.label = lp.path or lp.label

    def stage(self, area: Path) -> Staged:
        from rocmrevive.hostlib.abi import check_library

        ctx, lp = self.ctx, self.lp
        staged = component_file(self.fetched, self.manifest, self.comp, self.source, ctx.cache_dir, ctx.log, area,
                                ctx.progress)
        verdict = check_library(ctx.root, staged, search_dirs=[lp.tree], targets=self.targets,
                                rocm_version=lp.rocm_version, origin=lp.tree)
        lp.abi, lp.abi_ok, lp.lines = verdict.to_json(), verdict.ok, list(verdict.lines)
        lp.warnings += verdict.warnings
        if verdict.soname != lp.soname:
            lp.abi_ok = False
            lp.lines.append(f"the source's library is called {verdict.soname or '(no SONAME)'}, not {lp.soname}")
        graft_has = {t.split(":")[0] for t in (verdict.details.get("coverage") or {}).get("library_targets", [])}
        lost = sorted(set(lp.has) - graft_has) if graft_has else []
        if lost:
            lp.warnings.append(f"the graft has no code for {', '.join(lost)}, which {lp.path} has (no such GPU is "
                               f"detected here)")
        if not lp.abi_ok:
            more = f" (+{len(lp.lines) - 1} more)" if len(lp.lines) > 1 else ""
            raise Decline(Status.REFUSED, f"{self.source.describe()} does not load here: {lp.lines[0]}{more}")
        files = self._with_diversion(staged)
        return Staged(lp.tree, files, source=f"{self.source.key} {self.fetched.basename} sha256:{self.fetched.sha256}",
                      meta={"kind": "library", "manifest": self.manifest.id, "library": lp.soname,
                            "file": lp.path, "source": self.source.to_json(), "artifact": self.fetched.to_json(),
                            "devices": [str(d) for d in ctx.devices], "rocm_version": lp.rocm_version,
                            "abi": verdict.summary, "divert": lp.divert})

    def _with_diversion(self, staged: Path) -> dict[str, Path]:
        """The files to write: the graft, and (when dpkg owns the file) the package's own bytes
        where dpkg will look for them after the diversion."""
        from rocmrevive.hashing import sha256_file
        from rocmrevive.txn import divert

        lp, root = self.lp, self.ctx.root
        assert lp.path is not None
        real = root.resolve(lp.path)
        own = divert.owner_of(root, lp.path, aliases=(f"{lp.tree.rstrip('/')}/{lp.soname}",))
        lp.owner = own.to_json()
        wanted, why_not = divert.can_divert(root, own)
        files = {lp.path: staged}
        orig_sha = None
        if wanted:
            files[own.divert_path] = real
            orig_sha = sha256_file(real)[0]
        elif own.package:
            lp.warnings.append(why_not)
        lp.divert = {"wanted": wanted, "path": lp.path, "divert_to": own.divert_path if wanted else None,
                     "package": own.package, "orig_sha256": orig_sha, "registered": False, "why_not": why_not}
        return files

    def after_commit(self, result) -> None:
        from rocmrevive.txn import divert

        # the transaction diverted the file itself (txn.divert.follow); say whether dpkg has it
        if self.lp.divert and self.lp.divert["wanted"]:
            self.lp.divert["registered"] = divert.is_diverted(self.ctx.root, self.lp.divert["path"])

    def verify(self, result) -> Verdict:
        from rocmrevive.hostlib.abi import check_library

        lp = self.lp
        after = check_library(self.ctx.root, self.ctx.root.resolve(lp.path), search_dirs=[lp.tree],
                              targets=self.targets, rocm_version=lp.rocm_version)
        lp.verify_after = {"ok": after.ok, "lines": after.lines, "summary": after.summary}
        return Verdict(after.ok, lp.verify_after, why="; ".join(after.lines[:3]))


def graft_remedy(root: Root, file_machine_path: str, target: TargetId, manifests, cache_dir: Path) -> dict | None:
    """For ``audit``: whether a manifest provides ``target`` for the library at
    ``file_machine_path`` (a file in a tree's lib folder), and whether that source passes the
    ABI check here. Nothing is fetched or unpacked: a source is checked when an earlier
    ``install`` (or ``install --check``) left it extracted in the cache.

    Returns None (no manifest for it) or {"manifest", "source", "abi": a GraftAbi, "lines", "summary"}."""
    from rocmrevive.trees.installs import read_version

    libdir, name = os.path.split(file_machine_path)
    if target.processor != TARGET:
        return None
    rocm_version = read_version(root, os.path.dirname(libdir))[0]  # <install>/.info/version
    for m, comp in library_components(manifests, rocm_version):
        if name == comp.soname or name.startswith(comp.soname + "."):
            return _remedy(root, m, comp, libdir, target, rocm_version, cache_dir)
    return None


def _remedy(root: Root, m, comp, libdir: str, target: TargetId, rocm_version, cache_dir: Path) -> dict:
    from rocmrevive.hostlib.abi import check_library

    out = {"manifest": m.id, "soname": comp.soname, "source": None, "abi": GraftAbi.NO_SOURCE, "lines": [],
           "summary": ""}
    sources = m.sources_for_rocm(rocm_version) if rocm_version else []
    if not sources:
        out["lines"] = [f"{m.id} has no source for ROCm {rocm_version or '(unknown version)'}"]
        return out
    for src in sources:
        staged = cached_component_file(m, comp, src, cache_dir)
        out["source"] = src.describe()
        if staged is None:
            continue
        v = check_library(root, staged, search_dirs=[libdir], targets=[target], rocm_version=rocm_version,
                          origin=libdir)
        out.update(abi=GraftAbi.LOADS if v.ok else GraftAbi.REFUSED, lines=list(v.lines), summary=v.summary,
                   source=src.describe())
        return out
    out["abi"] = GraftAbi.NOT_FETCHED
    return out
