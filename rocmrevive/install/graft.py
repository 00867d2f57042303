"""Host-library grafts as an install step (docs/grafts.md): for every ROCm tree and every
``library`` component of a manifest for the tree's ROCm version, the file the component's SONAME
link resolves to is replaced, one transaction per library, when (1) its device code lacks a
detected gfx906 target and (2) the source's library passes the static ABI check
(``hostlib.check_library``) against this root's own libraries, with the tree as its ``$ORIGIN``,
serving every detected GPU. A file a dpkg package owns is diverted (``txn.divert``). A graft the
ABI check refuses is a finding (``status: refused`` with the verdict's lines, and a warning), not
an error.

    (folder,) = library_folders(root, given_trees(root, ["/opt/rocm-6.4.3"]), installs)
    out = graft_library(run, folder, manifest, comp)   # a LibraryOutcome
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from packaging.version import InvalidVersion, Version

from rocmrevive.codeobj.inspect import inspect_file
from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose.audit import GraftAbi
from rocmrevive.diagnose.libraries import library_for_file
from rocmrevive.errors import RevError
from rocmrevive.hashing import sha256_file
from rocmrevive.hostlib.abi import AbiVerdict, check_library
from rocmrevive.install.core import Decline, Hooks, StagedFiles, Status, Verdict
from rocmrevive.install.extract import cached_component_file, component_file, fetch_first
from rocmrevive.install.records import AbiCheck, ArtifactRecord, Diversion, SourceRecord
from rocmrevive.install.report import LibraryOutcome, ended, refused
from rocmrevive.install.run import InstallRun
from rocmrevive.rootfs import Root
from rocmrevive.sources.manifest import TARGET
from rocmrevive.trees.installs import read_version
from rocmrevive.trees.layout import tree_library
from rocmrevive.trees.select import LibraryFolder
from rocmrevive.txn import divert
from rocmrevive.txn.divert import Ownership


def library_components(manifests, rocm_version: str | None):
    """(manifest, component) for every library component of a gfx906 manifest whose ROCm range
    holds ``rocm_version`` (every one when the version is unknown: the plan then says so)."""
    try:
        v = Version(rocm_version) if rocm_version else None
    except InvalidVersion:
        v = None
    return [(m, comp) for m in manifests if m.target == TARGET for comp in m.components_of("library")
            if v is None or m.rocm_versions.contains(v, prereleases=True)]


def serves(report, devices: Sequence[TargetId]) -> tuple[list[TargetId], list[str]]:
    """(the devices whose code ``report`` (an inspect FileReport) lacks, its processors)."""
    return [c.device for c in report.coverage(devices) if not c.loads], report.processors


def graft_library(run: InstallRun, folder: LibraryFolder, manifest, comp) -> LibraryOutcome:
    """Decide, stage, apply and verify one graft of ``comp`` (a manifest's library) in the tree's
    library folder (as ``trees.select`` selected it), and say what came of it. Its own failure is
    its ``refused`` outcome; a failure of the machine (``report.FATAL``) is raised."""
    libdir, rocm_version = folder.path, folder.rocm_version
    known = library_for_file(comp.soname)
    out = LibraryOutcome(libdir, comp.soname, known.name if known else comp.soname, rocm_version,
                         manifest=manifest.id)
    graft: LibraryGraft | None = None
    try:
        path, why = tree_library(run.root, libdir, comp.soname)
        if path is None:
            return replace(out, status=Status.REFUSED, reason=why) if why else \
                replace(out, status=Status.ABSENT, reason=f"no {comp.soname} in {libdir}")
        out = replace(out, path=path)
        current = inspect_file(run.root.resolve(path))
        if current.kind == "unreadable":
            return replace(out, status=Status.REFUSED, reason=f"{path}: {'; '.join(current.problems) or 'unreadable'}")
        lacking, has = serves(current, run.devices)
        out = replace(out, has=has, missing=[str(d) for d in lacking])
        if not lacking:
            return replace(out, status=Status.SATISFIED, reason="has device code for " + ", ".join(map(str, run.devices)))
        if rocm_version is None:
            return replace(out, status=Status.UNSUPPORTED,
                           reason=f"the ROCm version of {libdir} is unknown (no .info/version), so no source can be "
                                  f"matched to it")
        sources = manifest.sources_for_rocm(rocm_version)
        if not sources:
            return replace(out, status=Status.UNSUPPORTED,
                           reason=f"{manifest.id} has no source built for ROCm {rocm_version}")
        source, fetched = fetch_first(run.root, sources, run.cache_dir, mirror=run.mirror, from_path=run.from_path,
                                      log=run.log, progress=run.progress, manifests=run.manifests,
                                       snapshot=run.snapshot)
        out = replace(out, source=SourceRecord.of(source), artifact=ArtifactRecord.of(fetched))
        # the graft must serve the gfx906 devices, and every other detected GPU the tree's copy serves
        keep = [o for o in run.others if not serves(current, [o])[0]]
        graft = LibraryGraft(run, out, manifest, comp, source, fetched, [*run.devices, *keep])
        out, walk = run.walk(out, graft)
    except RevError as exc:
        return refused(out if graft is None else graft.found_in(out), exc)
    if walk.plan is None:
        return out
    return ended(out, walk.status, planned=f"would replace {path} with {source.describe()}",
                 installed=f"replaced with {source.describe()} (transaction {out.txid})",
                 unchanged="graft already in place")


class LibraryGraft(Hooks):
    """One source's library in place of the tree's file: ABI-checked when staged and after. What
    the walk found (``found``: the ABI verdict, dpkg's ownership and diversion, the check after)
    becomes fields of the library's outcome."""

    def __init__(self, run: InstallRun, lib: LibraryOutcome, manifest, comp, source, fetched,
                 targets: list[TargetId]):
        assert lib.path is not None
        self.run, self.lib, self.manifest, self.comp = run, lib, manifest, comp
        self.source, self.fetched, self.targets = source, fetched, targets
        self.path: str = lib.path
        self.label = lib.path
        self.abi: AbiVerdict | None = None
        self.abi_ok: bool | None = None
        self.lines: list[str] = []
        self.warnings: list[str] = []
        self.owner: Ownership | None = None
        self.divert: Diversion | None = None
        self.after: AbiCheck | None = None

    def found_in(self, out: LibraryOutcome) -> LibraryOutcome:
        """``out`` with what this walk decided: the ABI verdict, dpkg's ownership and diversion,
        the check after."""
        return replace(out, abi=self.abi, abi_ok=self.abi_ok, lines=self.lines, warnings=self.warnings,
                       owner=self.owner, divert=self.divert, verify_after=self.after)

    def stage(self, area: Path) -> StagedFiles:
        run, lib = self.run, self.lib
        staged = component_file(self.fetched, self.manifest, self.comp, self.source, run.cache_dir, run.log, area,
                                run.progress)
        verdict = check_library(run.root, staged, search_dirs=[lib.tree], targets=self.targets,
                                rocm_version=lib.rocm_version, origin=lib.tree)
        self.abi, self.abi_ok, self.lines = verdict, verdict.ok, list(verdict.lines)
        self.warnings += verdict.warnings
        if verdict.soname != lib.soname:
            self.abi_ok = False
            self.lines.append(f"the source's library is called {verdict.soname or '(no SONAME)'}, not {lib.soname}")
        graft_has = {t.split(":")[0] for t in (verdict.details.get("coverage") or {}).get("library_targets", [])}
        lost = sorted(set(lib.has) - graft_has) if graft_has else []
        if lost:
            self.warnings.append(f"the graft has no code for {', '.join(lost)}, which {self.path} has (no such GPU is "
                                 f"detected here)")
        if not self.abi_ok:
            more = f" (+{len(self.lines) - 1} more)" if len(self.lines) > 1 else ""
            raise Decline(Status.REFUSED, f"{self.source.describe()} does not load here: {self.lines[0]}{more}")
        files = self._with_diversion(staged)
        return StagedFiles(lib.tree, files,
                           source=f"{self.source.key} {self.fetched.basename} sha256:{self.fetched.sha256}",
                           meta={"kind": "library", "manifest": self.manifest.id, "library": lib.soname,
                                 "file": self.path, "source": self.source.to_json(),
                                 "artifact": self.fetched.to_json(), "devices": [str(d) for d in run.devices],
                                 "rocm_version": lib.rocm_version, "abi": verdict.summary,
                                 "divert": None if self.divert is None else self.divert.to_json()})

    def _with_diversion(self, staged: Path) -> dict[str, Path]:
        """The files to write: the graft, and (when dpkg owns the file) the package's own bytes
        where dpkg will look for them after the diversion."""
        lib, root = self.lib, self.run.root
        real = root.resolve(self.path)
        own = divert.owner_of(root, self.path, aliases=(f"{lib.tree.rstrip('/')}/{lib.soname}",))
        self.owner = own
        wanted, why_not = divert.can_divert(root, own)
        files = {self.path: staged}
        orig_sha = None
        if wanted:
            files[own.divert_path] = real
            orig_sha = sha256_file(real)[0]
        elif own.package:
            self.warnings.append(why_not)
        self.divert = Diversion(wanted, self.path, own.divert_path if wanted else None, own.package, orig_sha,
                                registered=False, why_not=why_not)
        return files

    def after_commit(self, result) -> None:
        # the transaction diverted the file itself (txn.divert.follow); say whether dpkg has it
        if self.divert and self.divert.wanted:
            self.divert = replace(self.divert, registered=divert.is_diverted(self.run.root, self.divert.path))

    def verify(self, result) -> Verdict:
        after = check_library(self.run.root, self.run.root.resolve(self.path), search_dirs=[self.lib.tree],
                              targets=self.targets, rocm_version=self.lib.rocm_version)
        self.after = AbiCheck(after.ok, tuple(after.lines), after.summary)
        return Verdict(after.ok, self.after.to_json(), why="; ".join(after.lines[:3]))


def graft_remedy(root: Root, file_machine_path: str, target: TargetId, manifests, cache_dir: Path) -> dict | None:
    """For ``audit``: whether a manifest provides ``target`` for the library at
    ``file_machine_path`` (a file in a tree's lib folder), and whether that source passes the
    ABI check here. Nothing is fetched or unpacked: a source is checked when an earlier
    ``install`` (or ``install --check``) left it extracted in the cache.

    Returns None (no manifest for it) or {"manifest", "source", "abi": a GraftAbi, "lines", "summary"}."""
    libdir, name = os.path.split(file_machine_path)
    if target.processor != TARGET:
        return None
    rocm_version = read_version(root, os.path.dirname(libdir))[0]  # <install>/.info/version
    for m, comp in library_components(manifests, rocm_version):
        if name == comp.soname or name.startswith(comp.soname + "."):
            return _remedy(root, m, comp, libdir, target, rocm_version, cache_dir)
    return None


def _remedy(root: Root, m, comp, libdir: str, target: TargetId, rocm_version, cache_dir: Path) -> dict:
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
