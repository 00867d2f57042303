"""The main path: detect → choose rocBLAS copies → plan → fetch → stage → verify staged → apply
→ verify installed → report (docs/architecture.md, "The main path").

    report = install(Root("/"), check=True)     # what would change, nothing written
    report = install(Root("/"))                 # do it, as one transaction per rocBLAS copy

Each rocBLAS copy is one transaction (``txn.apply_plan``). Nothing touches a tree before its
staged files have passed the same checks ``verify`` runs, against an overlay of the tree's own
files and the staged ones, so a source whose fallback kernels do not match the tree's index is
refused before the first byte is written.

Host-library grafts (docs/grafts.md, ``libraries=True``): for every ROCm tree and every
``library`` component of a manifest for the tree's ROCm version, the file the component's SONAME
link resolves to is replaced, one transaction per library, when (1) its device code lacks a
detected gfx906 target and (2) the source's library passes the static ABI check
(``hostlib.check_library``) against this root's own libraries, with the tree as its ``$ORIGIN``,
serving every detected GPU. A file a dpkg package owns is diverted (``txn.divert``). A graft the
ABI check refuses is a finding (``status: refused`` with the verdict's lines, and a warning), not
an error.
"""
from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.errors import RevError
from rocmrevive.fs import Dir
from rocmrevive.rootfs import Root

TARGET = "gfx906"
# Errors about the machine rather than one copy: they stop the whole install.
FATAL = ("NETWORK", "LOCKED", "INTERRUPTED", "PERMISSION", "USAGE", "INTERNAL")
Log = Callable[[str], None]


@dataclass
class CopyPlan:
    """What install decided for one rocBLAS copy."""

    library: str                       # machine path of the Tensile library folder
    layout: str
    rocblas_version: str | None
    rocm_version: str | None
    status: str = "pending"            # satisfied | planned | installed | unchanged | unsupported | refused
    reason: str = ""
    manifest: str | None = None
    source: dict | None = None
    artifact: dict | None = None
    summary: dict | None = None
    changes: list[dict] = field(default_factory=list)
    diff: dict | None = None
    verify_before: dict | None = None
    verify_staged: dict | None = None
    verify_after: dict | None = None
    txid: str | None = None
    journal: str | None = None
    changed: bool = False
    error: dict | None = None          # {"code", "exit", "message"} when this copy was refused
    verification: str = "pinned"       # "pinned" (a manifest's hashes) | "verified by content, unpinned"

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class LibraryPlan:
    """What install decided for one host library (a manifest's ``library`` component) in one tree.

    ``status``: absent (the tree has no such library) | satisfied (its device code serves every
    detected gfx906 GPU) | unsupported (no source for the tree's ROCm version, or that version is
    unknown) | refused (the source does not pass the ABI check here: ``lines``; or another reason)
    | planned (--check) | installed | unchanged | declined (answered no at the prompt)."""

    tree: str                          # machine path of the library folder (/opt/rocm-6.4.3/lib)
    soname: str                        # librocsparse.so.1
    name: str                          # rocSPARSE
    rocm_version: str | None
    manifest: str | None = None
    path: str | None = None            # the file the soname link resolves to (what a graft replaces)
    status: str = "pending"
    reason: str = ""
    missing: list[str] = field(default_factory=list)   # detected targets its device code does not serve
    has: list[str] = field(default_factory=list)       # processors its device code is for
    source: dict | None = None
    artifact: dict | None = None
    abi_ok: bool | None = None
    lines: list[str] = field(default_factory=list)     # why the ABI check refuses (empty: it loads)
    abi: dict | None = None            # the whole verdict (hostlib AbiVerdict.to_json())
    warnings: list[str] = field(default_factory=list)
    owner: dict | None = None          # dpkg ownership of ``path`` (txn.divert.Ownership)
    divert: dict | None = None         # {"wanted", "path", "divert_to", "package", "orig_sha256", "registered", "why_not"}
    summary: dict | None = None
    changes: list[dict] = field(default_factory=list)
    diff: dict | None = None
    verify_after: dict | None = None
    txid: str | None = None
    journal: str | None = None
    changed: bool = False
    error: dict | None = None

    @property
    def label(self) -> str:
        return f"{self.tree}/{self.soname}"

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class InstallReport:
    devices: list[str]
    devices_from: str
    copies: list[CopyPlan]
    check: bool
    warnings: list[str] = field(default_factory=list)
    libraries: list[LibraryPlan] = field(default_factory=list)
    libraries_enabled: bool = True

    @property
    def changed(self) -> bool:
        """Installed something, or (with check) would."""
        if self.check:
            return any(c.status == "planned" for c in (*self.copies, *self.libraries))
        return any(c.changed for c in (*self.copies, *self.libraries))

    def to_json(self) -> dict:
        plans = [*self.copies, *self.libraries]
        return {"devices": self.devices, "devices_from": self.devices_from, "check": self.check,
                "copies": [c.to_json() for c in self.copies],
                "libraries_enabled": self.libraries_enabled,
                "libraries": [lp.to_json() for lp in self.libraries],
                "diff": {"before": {k: v for c in plans for k, v in (c.diff or {}).get("before", {}).items()},
                         "after": {k: v for c in plans for k, v in (c.diff or {}).get("after", {}).items()}}}


def _verify(library: Path, devices, *, host_library, rocm_version, show):
    from rocmrevive.diagnose.verify import verify_copy

    return verify_copy(library, devices, host_library=host_library, rocm_version=rocm_version, show=show)


def _gating_ok(result) -> bool:
    """The checks an install must pass: targets and the Tensile cross-reference. The host
    library's own device code is reported, not gated on: Tensile files cannot change it."""
    from rocmrevive.diagnose.verify import FAIL

    return all(c.status != FAIL for d in result.devices for c in d.checks if c.name in ("targets", "tensile"))


def _first_failures(result, limit: int = 3) -> str:
    from rocmrevive.diagnose.verify import FAIL

    out = []
    for d in result.devices:
        for c in d.checks:
            if c.status == FAIL and c.name in ("targets", "tensile"):
                names = ", ".join(o.get("file") or "?" for o in c.offenders[:limit])
                out.append(f"{d.target} {c.name}: {c.summary}" + (f" ({names})" if names else ""))
    return "; ".join(out)


def _overlay(real_library: Path, staged: dict[str, Path], where: Path) -> Path:
    """A folder that looks like the library after the install: links to the tree's files, with
    the staged files in their place. Only links are made; the tree is not touched."""
    ov = where / "overlay"
    ov.mkdir()
    with os.scandir(real_library) as it:
        for e in it:
            if e.name not in staged:
                os.symlink(e.path, ov / e.name)
    for name, p in staged.items():
        os.symlink(p, ov / name)
    return ov


def _choose_manifest(manifests, rocblas_version: str | None):
    from packaging.version import InvalidVersion, Version

    if rocblas_version is None:
        return None
    try:
        v = Version(rocblas_version)
    except InvalidVersion:
        return None
    for m in manifests:
        if (m.target == TARGET and m.rocblas_versions is not None and m.components_of("tensile")
                and m.rocblas_versions.contains(v, prereleases=True)):
            return m
    return None


def install(root: Root, *, trees=(), targets=(), manifests_dir=None, cache=None, mirror: str | None = None,
            from_path: str | None = None, cross_version: bool = False, check: bool = False,
            state_dir: str | None = None, pythons=(), log: Log = lambda s: None, progress=None,
            confirm: Callable[[CopyPlan | LibraryPlan], bool] | None = None,
            libraries: bool = True) -> InstallReport:
    """Install the gfx906 files every rocBLAS copy lacks (or the ``trees`` named); with
    ``libraries``, also graft each host library that lacks gfx906 where a manifest's source
    provably loads (module docstring).

    A copy that cannot be served (no manifest for its version, staged files that fail the
    checks) is reported with its own error and the others go on; machine-wide trouble (lock,
    network, permission, an interrupted transaction) stops everything. ``confirm(copy_plan)``
    is asked before each copy is changed (False skips it)."""
    from rocmrevive.hardware.devices import resolve_devices
    from rocmrevive.sources.cache import default_cache_dir
    from rocmrevive.sources.manifest import default_manifest_dir, load_manifests
    from rocmrevive.trees.installs import find_installs
    from rocmrevive.txn.transaction import DEFAULT_STATE_DIR

    state_dir = state_dir or DEFAULT_STATE_DIR
    devices, devices_from = resolve_devices(root, targets, processor=None if targets else TARGET)
    bad = ", ".join(str(d) for d in devices if d.processor != TARGET)
    if bad:
        raise RevError("NOTHING_SUPPORTED", f"rocmrevive installs gfx906 files; --target {bad} is not gfx906")
    manifests = load_manifests(manifests_dir or default_manifest_dir())
    cache_dir = Path(cache) if cache else default_cache_dir(root)

    installs, _link = find_installs(root)
    lib_trees = _library_trees(root, trees, installs) if libraries else []
    try:
        copies = _select_copies(root, trees, pythons, installs)
    except RevError as exc:
        # a --tree without a rocBLAS folder may still hold host libraries to graft
        if exc.code != "NOTHING_SUPPORTED" or not lib_trees:
            raise
        copies = []
    report = InstallReport([str(d) for d in devices], devices_from, [], check, libraries_enabled=libraries)
    if not copies and not lib_trees:
        raise RevError("NOTHING_SUPPORTED", f"no rocBLAS copy found under {root.base}; name one with "
                                            f"--tree (an /opt/rocm-X.Y.Z install or its rocblas/library folder)")
    for copy in copies:
        cp = CopyPlan(copy.path, copy.layout, copy.rocblas_version, copy.rocm_version)
        report.copies.append(cp)
        try:
            _plan_copy(root, copy, cp, devices, manifests, cache_dir, mirror=mirror, from_path=from_path,
                       cross_version=cross_version, check=check, state_dir=state_dir, log=log,
                       progress=progress, confirm=confirm)
        except RevError as exc:
            if exc.code in FATAL:
                raise
            cp.status, cp.reason, cp.error = "refused", exc.message, exc.to_json()
    if lib_trees:
        _plan_libraries(root, report, lib_trees, devices, targets, manifests, cache_dir, mirror=mirror,
                        from_path=from_path, check=check, state_dir=state_dir, log=log, progress=progress,
                        confirm=confirm)
    return report


def _refuse_drift(root, real_lib: Path, machine_lib: str, state_dir: str) -> None:
    """A copy that serves the cards but whose files rocmrevive installed were changed since (edited
    by hand) is not "satisfied": say which files and how to get back to the pinned ones."""
    from rocmrevive.txn.transaction import list_transactions

    drifted: list[tuple[str, str]] = []
    for tx in list_transactions(root, state_dir=state_dir):
        for path in tx.get("drifted") or []:
            try:
                inside = root.resolve(path).parent == real_lib
            except ValueError:
                inside = False
            if inside:
                drifted.append((path, tx["txid"]))
    if not drifted:
        return
    txids = sorted({t for _p, t in drifted})
    names = ", ".join(p.rsplit("/", 1)[-1] for p, _t in drifted[:3]) + (" …" if len(drifted) > 3 else "")
    raise RevError("DRIFT", f"{len(drifted)} file(s) rocmrevive installed in {machine_lib} changed since transaction "
                            f"{', '.join(txids)}: {names}; to get the pinned files back run `rocmrevive rollback "
                            f"--force {txids[-1]}` (the edited bytes are kept in the backups), then install again",
                   details={"drift": [p for p, _t in drifted], "transactions": txids})


def _select_copies(root, trees, pythons, installs):
    """Every rocBLAS copy on the machine, or only those in the ``--tree`` folders."""
    from rocmrevive.diagnose.locate import rocblas_library_dirs
    from rocmrevive.trees.pythonenv import find_envs
    from rocmrevive.trees.rocblas import find_copies

    envs, _problems = find_envs(root, pythons)
    if not trees:
        return find_copies(root, installs=installs, envs=envs)
    libs: list[str] = []
    for t in trees:
        real = root.path(t) if not root.is_host else Path(os.path.abspath(t))
        if not real.exists():
            raise RevError("USAGE", f"--tree {t}: no such folder under {root.base}")
        try:
            resolved = root.resolve(root.machine_path(real))
        except ValueError as exc:
            raise RevError("USAGE", f"--tree {t}: {exc}") from None
        found = rocblas_library_dirs(resolved)
        if not found:
            raise RevError("NOTHING_SUPPORTED", f"--tree {t}: no rocBLAS Tensile library folder in it "
                                                f"(looked for lib/rocblas/library and rocblas/*/library)")
        libs += [root.machine_path(f) for f in found]
    wanted = {root.resolve(x) for x in libs}
    # find_copies names each real folder once, by the path its install or package knows it by
    return [c for c in find_copies(root, installs=installs, envs=envs, extra=libs)
            if root.resolve(c.path) in wanted]


def _plan_copy(root, copy, cp: CopyPlan, devices, manifests, cache_dir: Path, *, mirror, from_path,
               cross_version, check, state_dir, log, progress, confirm) -> None:
    from rocmrevive.diagnose import locate
    from rocmrevive.txn.plan import plan_from_staged

    real_lib = root.resolve(copy.path)
    host_lib = locate.rocblas_host_library(real_lib)
    show = root.machine_path
    if copy.arch_folders or copy.kpack:
        from rocmrevive.trees.recipe import therock_gfx906_command

        cmd, _notes = therock_gfx906_command(copy, [TARGET])
        cp.status, cp.reason = "unsupported", (f"a TheRock tree (ROCm {copy.rocm_version or '7.13+'}: per-target "
                                               f".kpack archives / per-arch folders): rocmrevive does not patch it; "
                                               f"AMD builds {TARGET} itself: {cmd}")
        return
    before = _verify(real_lib, devices, host_library=host_lib, rocm_version=copy.rocm_version, show=show)
    cp.verify_before = before.to_json()
    if _gating_ok(before):
        _refuse_drift(root, real_lib, copy.path, state_dir)
        cp.status, cp.reason = "satisfied", "already serves " + ", ".join(map(str, devices))
        return
    manifest = _choose_manifest(manifests, copy.rocblas_version)
    pinned = None if manifest is None else (manifest.sources if cross_version
                                            else manifest.sources_for(copy.rocblas_version))
    if from_path and not pinned:
        # no manifest source for this rocBLAS: the folder or tarball must prove itself by content
        _plan_unpinned(root, copy, cp, devices, manifest, cache_dir, real_lib=real_lib, host_lib=host_lib,
                       from_path=from_path, check=check, state_dir=state_dir, confirm=confirm)
        return
    if manifest is None:
        cp.status = "unsupported"
        cp.reason = (f"no manifest for rocBLAS {copy.rocblas_version or '(version unknown)'}"
                     + ("" if copy.rocblas_version else f" ({'; '.join(copy.problems)})")
                     + f"; `rocmrevive recipe --tree {copy.path}` writes the build, `install --from` takes it")
        return
    cp.manifest = manifest.id
    sources = manifest.sources if cross_version else manifest.sources_for(copy.rocblas_version)
    if not sources:
        cp.status = "refused"
        cp.reason = (f"{manifest.id} has no source built for rocBLAS {copy.rocblas_version}; "
                     f"`rocmrevive recipe --tree {copy.path}` writes the build and `install --from <its prefix>` "
                     f"takes it, verified by content (--cross-version allows "
                     f"{', '.join(s.name for s in manifest.sources)}, at your risk)")
        return
    source, fetched = _fetch_first(root, sources, cache_dir, mirror=mirror, from_path=from_path, log=log,
                                   progress=progress)
    cp.source, cp.artifact = source.to_json(), fetched.to_json()

    work = Path(tempfile.mkdtemp(prefix=f"stage-{os.getpid()}-", dir=_staging_parent(cache_dir)))
    try:
        tensile = manifest.select_kind("tensile")
        by_name = {n: p for n, p in _extracted(fetched, manifest, source, cache_dir, log, work).items()
                   if tensile(n)}
        try:
            nested = sorted(n for n in by_name if "/" in n)
            if nested:  # rocBLAS reads one flat library folder
                raise RevError("VERIFY_FAILED", f"{fetched.basename}: {len(nested)} selected member(s) lie in a "
                                                f"subfolder of {source.member_prefix} (first: {ascii(nested[0])}); "
                                                f"rocBLAS reads one flat library folder: the manifest's member_prefix "
                                                f"must be that folder; nothing was changed")
            _check_staged_targets(by_name, devices)
            staged_result = _verify(_overlay(real_lib, by_name, work), devices, host_library=host_lib,
                                    rocm_version=copy.rocm_version, show=lambda p: str(p))
            cp.verify_staged = staged_result.to_json()
            if not _gating_ok(staged_result):
                raise RevError("VERIFY_FAILED", f"files from {source.describe()} do not serve "
                                                f"{copy.path}: {_first_failures(staged_result)}; nothing was changed")
        except RevError:
            forget_extracted(fetched, manifest, cache_dir)  # a refusal leaves nothing in the cache
            raise
        plan = plan_from_staged(root, copy.path, {f"{copy.path}/{n}": p for n, p in by_name.items()},
                                source=f"{source.key} {fetched.basename} sha256:{fetched.sha256}",
                                meta={"manifest": manifest.id, "source": source.to_json(),
                                      "artifact": fetched.to_json(), "devices": [str(d) for d in devices],
                                      "rocblas_version": copy.rocblas_version, "rocm_version": copy.rocm_version,
                                      "library": copy.path})
        _apply_copy_plan(root, plan, copy, cp, devices, real_lib=real_lib, host_lib=host_lib, check=check,
                         state_dir=state_dir, confirm=confirm)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _apply_copy_plan(root, plan, copy, cp: CopyPlan, devices, *, real_lib, host_lib, check, state_dir,
                     confirm) -> None:
    """Apply (or, with check, dry-run) one copy's plan; verify the installed copy and roll back
    when it fails."""
    from rocmrevive.txn.transaction import apply_plan, rollback

    cp.summary = plan.summary()
    cp.diff = plan.diff()
    if not check and confirm is not None and not confirm(cp):
        cp.status, cp.reason = "declined", "declined at the prompt; nothing was changed"
        return
    res = apply_plan(root, plan, state_dir=state_dir, dry_run=check)
    cp.changes = res.actions
    if check:
        pending = [a for a in res.actions if a.get("op") not in ("unchanged",)]
        cp.status = "planned" if pending else "unchanged"
        cp.reason = (f"would add {cp.summary['create']} and replace {cp.summary['replace']} "
                     f"{_files(cp.summary)} ({cp.summary['bytes']:,} bytes)") if pending else "files already in place"
        return
    cp.txid, cp.journal, cp.changed = res.txid, res.journal_path, res.changed
    after = _verify(real_lib, devices, host_library=host_lib, rocm_version=copy.rocm_version,
                    show=root.machine_path)
    cp.verify_after = after.to_json()
    if not _gating_ok(after):
        if res.txid:
            rollback(root, res.txid, state_dir=state_dir, force=True)
        raise RevError("VERIFY_FAILED", f"{copy.path} failed verification after the install and was "
                                        f"rolled back: {_first_failures(after)}")
    cp.status = "installed" if res.changed else "unchanged"
    cp.reason = (f"added {cp.summary['create']}, replaced {cp.summary['replace']} {_files(cp.summary)} "
                 f"(transaction {res.txid})") if res.changed else "files already in place"


def _plan_unpinned(root, copy, cp: CopyPlan, devices, manifest, cache_dir: Path, *, real_lib, host_lib,
                   from_path, check, state_dir, confirm) -> None:
    """``--from`` a folder or tarball no manifest pins: staged, then accepted only by content
    (``rocmrevive.unpinned``), and journaled as "verified by content, unpinned"."""
    from rocmrevive import unpinned
    from rocmrevive.codeobj.inspect import inspect_file
    from rocmrevive.diagnose.verify import runtime_limit
    from rocmrevive.txn.plan import plan_from_staged

    cp.verification = unpinned.VERIFIED_BY_CONTENT
    cp.manifest = manifest.id if manifest else None
    comps = manifest.components_of("tensile") if manifest else []
    patterns = [p for c in comps for p in c.files] or list(unpinned.default_patterns(TARGET))
    work = Path(tempfile.mkdtemp(prefix="stage-", dir=_staging_parent(cache_dir)))
    try:
        staged = unpinned.stage(Path(from_path), TARGET, unpinned.selector(patterns), work)
        cp.source = {"kind": "unpinned", "from": str(from_path), "verification": unpinned.VERIFIED_BY_CONTENT}
        cp.artifact = staged.to_json()
        unpinned.check_version(staged, copy.rocblas_version, copy.path)
        _check_staged_targets(staged.by_name, devices)
        limit, basis = runtime_limit(copy.rocm_version, inspect_file(host_lib) if host_lib else None)
        unpinned.check_code_object_versions(staged.by_name, limit, basis)
        staged_result = _verify(_overlay(real_lib, staged.by_name, work), devices, host_library=host_lib,
                                rocm_version=copy.rocm_version, show=lambda p: str(p))
        cp.verify_staged = staged_result.to_json()
        if not _gating_ok(staged_result):
            raise RevError("VERIFY_FAILED", f"--from {from_path} does not serve {copy.path}: "
                                            f"{_first_failures(staged_result)} (the cross-reference against the "
                                            f"tree's own index: a build of another rocBLAS release?); nothing "
                                            f"was changed")
        plan = plan_from_staged(root, copy.path, {f"{copy.path}/{n}": p for n, p in staged.by_name.items()},
                                source=f"unpinned {from_path} ({unpinned.VERIFIED_BY_CONTENT})",
                                meta={"manifest": None, "source": f"{unpinned.VERIFIED_BY_CONTENT}: {from_path}",
                                      "verification": unpinned.VERIFIED_BY_CONTENT, "pinned": False,
                                      "artifact": staged.to_json(), "devices": [str(d) for d in devices],
                                      "rocblas_version": copy.rocblas_version, "rocm_version": copy.rocm_version,
                                      "library": copy.path})
        _apply_copy_plan(root, plan, copy, cp, devices, real_lib=real_lib, host_lib=host_lib, check=check,
                         state_dir=state_dir, confirm=confirm)
        if cp.status in ("installed", "planned", "unchanged"):
            cp.reason += f"; {unpinned.VERIFIED_BY_CONTENT}"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _files(summary: dict) -> str:
    return "file" if summary.get("create", 0) + summary.get("replace", 0) == 1 else "files"


def _extracted(fetched, manifest, source, cache_dir: Path, log: Log, work: Path) -> dict[str, Path]:
    """The manifest's members of a verified artifact, extracted once per (artifact, manifest)
    into the cache and re-hashed on every reuse: a second tree, a re-install after an upgrade
    or a fleet node with a shared cache skips the decompression (most of an install's time)."""
    from rocmrevive.sources.cache import Cache

    select = manifest.select  # every component: the Tensile and library paths share one extraction
    if not fetched.sha256 or Cache(cache_dir).shared:
        # an unpacked folder given with --from has no artifact hash to key a cache entry on, and
        # nothing another user can write is reused (docs/security.md): extract privately
        return _extract_now(fetched, select, source, manifest, work, log)
    key = _extracted_key(fetched.sha256, manifest)
    # one extraction per (artifact, manifest) at a time: a concurrent install waits, then reuses it
    with Cache(cache_dir).lock(f"extract-{key}"):
        return _extracted_locked(fetched, manifest, source, select, cache_dir, key, log)


def _extracted_locked(fetched, manifest, source, select, cache_dir: Path, key: str, log: Log) -> dict[str, Path]:
    import json

    from rocmrevive.fs import printable_name
    from rocmrevive.hashing import sha256_file

    parent = cache_dir / "extracted"
    done = parent / key
    index = done / "index.json"
    if _real_dir(done):
        try:
            listed = json.loads(index.read_text())
            files = {n: done / "files" / n for n in listed}
            if all(printable_name(n) and ".." not in n.split("/") and sha256_file(p, follow_symlinks=False)
                   == tuple(listed[n]) for n, p in files.items()):
                log(f"using the {len(files)} files extracted earlier from {fetched.basename}")
                return files
        except (OSError, ValueError, TypeError):
            pass
        log(f"extracted files of {fetched.basename} in the cache were damaged; extracting again")
        with Dir.open(parent, what="cache") as pd:
            pd.rmtree(key)
    log(f"extracting {manifest.id} files from {fetched.basename}")
    with Dir.open(parent, create=True, what="cache") as pd:
        _sweep_dead(pd)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}.{os.getpid()}-", dir=parent))
    try:
        staged = _extract_members(fetched, select, source, manifest, tmp / "files")
        (tmp / "index.json").write_text(json.dumps({f.name: [f.sha256, f.size] for f in staged}))
        os.replace(tmp, done)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {f.name: done / "files" / f.name for f in staged}


def _extracted_key(sha256: str, manifest) -> str:
    return f"{sha256[:32]}-{manifest.id}"


def _real_dir(p: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(p).st_mode)
    except OSError:
        return False


def forget_extracted(fetched, manifest, cache_dir: Path) -> None:
    """Drop an extraction whose files were refused, so a refusal leaves nothing in the cache."""
    if not fetched.sha256:
        return
    try:
        with Dir.open(Path(cache_dir) / "extracted", what="cache") as pd:
            if not pd.shared:
                pd.rmtree(_extracted_key(fetched.sha256, manifest))
    except (OSError, RevError):
        pass


def _sweep_dead(d: Dir) -> None:
    """Remove staging folders (``stage-<pid>-*``, ``.<key>.<pid>-*``) whose run is gone (a kill)."""
    for name in d.listdir():
        m = re.match(r"^(?:stage(?:-lib)?|\.[0-9a-f]{32}-.+)[.-](\d+)-[A-Za-z0-9_]+$", name)
        if not m:
            continue
        pid = int(m.group(1))
        if pid == os.getpid():
            continue
        try:
            os.kill(pid, 0)
            continue  # still running
        except ProcessLookupError:
            pass
        except PermissionError:
            continue
        d.rmtree(name)


def _extract_members(fetched, select, source, manifest, dest: Path):
    from rocmrevive.sources.unpack import extract_selected

    staged = extract_selected(Path(fetched.path), select, dest, member_prefix=source.member_prefix)
    if not staged:
        raise RevError("VERIFY_FAILED", f"{fetched.basename}: no member under {source.member_prefix} "
                                        f"matches manifest {manifest.id}")
    return staged


def _extract_now(fetched, select, source, manifest, work: Path, log: Log) -> dict[str, Path]:
    """Extract without caching into this install's own staging folder (removed after it)."""
    log(f"extracting {manifest.id} files from {fetched.basename}")
    staged = _extract_members(fetched, select, source, manifest, work / "files")
    return {f.name: f.path for f in staged}


def _staging_parent(cache_dir: Path) -> Path:
    """``<cache>/staging`` (checked as the cache is: rocmrevive.fs), swept of what killed runs left;
    a shared cache stages in a private temporary folder instead."""
    from rocmrevive.sources.cache import Cache

    cache = Cache(cache_dir)
    if cache.shared:
        return cache.private_dir()
    with cache.dir().sub("staging", create=True) as d:
        _sweep_dead(d)
    return cache_dir / "staging"


def _check_staged_targets(by_name: dict[str, Path], devices: list[TargetId]) -> None:
    """Every staged code object is gfx906 code that loads on every device."""
    from rocmrevive.codeobj.inspect import inspect_file

    for name, p in sorted(by_name.items()):
        rep = inspect_file(p)
        if rep.problems:
            raise RevError("VERIFY_FAILED", f"staged {name}: {rep.problems[0]}; nothing was changed")
        if rep.kind in ("tensile-dat",):
            continue
        if not rep.entries:
            raise RevError("VERIFY_FAILED", f"staged {name} is {rep.kind}, not a GPU code object; nothing was changed")
        for e in rep.entries:
            for d in devices:
                if not e.target.can_load_on(d):
                    raise RevError("VERIFY_FAILED", f"staged {name} holds {e.target} code, which does not "
                                                    f"load on {d}; nothing was changed")


# --------------------------------------------------------------------------------------------
# host-library grafts (docs/grafts.md)

def _library_trees(root: Root, trees, installs) -> list[tuple[str, str | None]]:
    """(library folder, ROCm version) of every tree whose host libraries may be grafted: the
    ``lib`` folder of each ROCm install (or of each ``--tree``; a library folder itself too)."""
    from rocmrevive.trees.installs import read_version

    out: list[tuple[str, str | None]] = []
    seen: set[str] = set()

    def add(libdir: str, version: str | None) -> None:
        try:
            real = str(root.resolve(libdir))
        except ValueError:
            return
        if real not in seen and Path(real).is_dir():
            seen.add(real)
            out.append((root.machine_path(real), version))

    def version_of(machine_dir: str) -> str | None:
        real = str(root.resolve(machine_dir))
        for inst in installs:
            ireal = str(root.resolve(inst.path))
            if real == ireal or real.startswith(ireal + os.sep):
                return inst.version
        parent = os.path.dirname(machine_dir.rstrip("/"))
        return read_version(root, parent)[0] or read_version(root, machine_dir)[0]

    if not trees:
        for inst in installs:
            add(f"{inst.path}/lib", inst.version)
        return out
    for t in trees:
        real = root.path(t) if not root.is_host else Path(os.path.abspath(t))
        if not real.is_dir():
            continue  # the Tensile part reports a bad --tree
        mp = root.machine_path(real)
        if (real / "lib").is_dir():
            add(f"{mp.rstrip('/')}/lib", version_of(mp))
        elif any(p.name.startswith("lib") and ".so" in p.name for p in real.iterdir()):
            add(mp, version_of(mp))
    return out


def _other_devices(root: Root, targets) -> list[TargetId]:
    """The detected GPUs that are not gfx906 (a graft must keep serving them too)."""
    from rocmrevive.hardware.devices import resolve_devices

    if targets:
        return []
    try:
        every, _ = resolve_devices(root, ())
    except RevError:
        return []
    return [d for d in every if d.processor != TARGET]


def _library_components(manifests, rocm_version: str | None):
    """(manifest, component) for every library component of a gfx906 manifest whose ROCm range
    holds ``rocm_version`` (every one when the version is unknown: the plan then says so)."""
    from packaging.version import InvalidVersion, Version

    try:
        v = Version(rocm_version) if rocm_version else None
    except InvalidVersion:
        v = None
    out = []
    for m in manifests:
        if m.target != TARGET:
            continue
        for comp in m.components_of("library"):
            if v is None or m.rocm_versions.contains(v, prereleases=True):
                out.append((m, comp))
    return out


def _plan_libraries(root, report: InstallReport, lib_trees, devices, targets, manifests, cache_dir: Path, *,
                    mirror, from_path, check, state_dir, log, progress, confirm) -> None:
    from rocmrevive.diagnose.libraries import library_for_file
    from rocmrevive.txn.divert import reconcile

    others = _other_devices(root, targets)
    if not check:
        # a rollback or a crash since the last run may have left dpkg's diversions behind
        for line in reconcile(root, state_dir):
            log(line)
    for libdir, rocm_version in lib_trees:
        for manifest, comp in _library_components(manifests, rocm_version):
            known = library_for_file(comp.soname)
            lp = LibraryPlan(libdir, comp.soname, known.name if known else comp.soname, rocm_version,
                             manifest=manifest.id)
            report.libraries.append(lp)
            try:
                _plan_library(root, lp, manifest, comp, devices, others, cache_dir, mirror=mirror,
                              from_path=from_path, check=check, state_dir=state_dir,
                              log=log, progress=progress, confirm=confirm)
            except RevError as exc:
                if exc.code in FATAL:
                    raise
                lp.status, lp.reason, lp.error = "refused", exc.message, exc.to_json()
            if lp.status == "refused" and lp.abi_ok is False:
                report.warnings.append(f"{lp.label} lacks {', '.join(lp.missing)}; no graft: {lp.reason}")


def tree_library(root: Root, libdir: str, soname: str) -> tuple[str | None, str]:
    """The machine path of the file ``<libdir>/<soname>`` leads to (None when absent) and, when
    it cannot be used, why. Only a regular file in the same folder is grafted over."""
    link = f"{libdir.rstrip('/')}/{soname}"
    if not os.path.lexists(root.path(link)):
        return None, ""
    try:
        real = root.resolve(link)
    except ValueError as exc:
        return None, f"{link}: {exc}"
    if not real.is_file():
        return None, f"{link} leads to {root.machine_path(real)}, which is not a file"
    if real.parent != root.resolve(libdir):
        return None, (f"{link} leads to {root.machine_path(real)}, outside {libdir}; rocmrevive replaces "
                      f"only a library that lives in the tree's own folder")
    return root.machine_path(real), ""


def serves(report, devices: list[TargetId]) -> tuple[list[TargetId], list[str]]:
    """(the devices whose code ``report`` (an inspect FileReport) lacks, its processors)."""
    lacking = [d for d in devices if not any(e.target.can_load_on(d) for e in report.entries)]
    return lacking, sorted({e.target.processor for e in report.entries})


def _plan_library(root, lp: LibraryPlan, manifest, comp, devices, others, cache_dir: Path, *, mirror,
                  from_path, check, state_dir, log, progress, confirm) -> None:
    from rocmrevive.codeobj.inspect import inspect_file

    path, why = tree_library(root, lp.tree, lp.soname)
    if path is None:
        lp.status, lp.reason = ("refused", why) if why else ("absent", f"no {lp.soname} in {lp.tree}")
        return
    lp.path = path
    real = root.resolve(path)
    current = inspect_file(real)
    if current.kind == "unreadable":
        lp.status, lp.reason = "refused", f"{path}: {'; '.join(current.problems) or 'unreadable'}"
        return
    lacking, lp.has = serves(current, devices)
    lp.missing = [str(d) for d in lacking]
    if not lacking:
        lp.status, lp.reason = "satisfied", "has device code for " + ", ".join(map(str, devices))
        return
    if lp.rocm_version is None:
        lp.status, lp.reason = "unsupported", (f"the ROCm version of {lp.tree} is unknown (no .info/version), "
                                               f"so no source can be matched to it")
        return
    sources = manifest.sources_for_rocm(lp.rocm_version)
    if not sources:
        lp.status = "unsupported"
        lp.reason = f"{manifest.id} has no source built for ROCm {lp.rocm_version}"
        return
    source, fetched = _fetch_first(root, sources, cache_dir, mirror=mirror, from_path=from_path,
                                            log=log, progress=progress)
    lp.source, lp.artifact = source.to_json(), fetched.to_json()
    work = Path(tempfile.mkdtemp(prefix=f"stage-lib-{os.getpid()}-", dir=_staging_parent(cache_dir)))
    try:
        _graft(root, lp, manifest, comp, source, fetched, current, devices, others, cache_dir, work,
               check=check, state_dir=state_dir, log=log, confirm=confirm)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _graft(root, lp: LibraryPlan, manifest, comp, source, fetched, current, devices, others, cache_dir: Path,
           work: Path, *, check, state_dir, log, confirm) -> None:
    """ABI-check the staged library, then plan and apply (or, with ``check``, dry-run) the graft."""
    from rocmrevive.hostlib.abi import check_library
    from rocmrevive.txn import divert
    from rocmrevive.txn.plan import plan_from_staged
    from rocmrevive.txn.transaction import apply_plan, rollback

    path = lp.path
    real = root.resolve(path)
    staged = _staged_library(fetched, manifest, comp, source, cache_dir, log, work)

    # the graft must serve the gfx906 devices, and every other detected GPU the tree's copy serves
    keep = [o for o in others if not serves(current, [o])[0]]
    verdict = check_library(root, staged, search_dirs=[lp.tree], targets=[*devices, *keep],
                            rocm_version=lp.rocm_version, origin=lp.tree)
    lp.abi, lp.abi_ok, lp.lines = verdict.to_json(), verdict.ok, list(verdict.lines)
    lp.warnings += verdict.warnings
    if verdict.soname != lp.soname:
        lp.abi_ok = False
        lp.lines.append(f"the source's library is called {verdict.soname or '(no SONAME)'}, not {lp.soname}")
    graft_has = {t.split(":")[0] for t in (verdict.details.get("coverage") or {}).get("library_targets", [])}
    lost = sorted(set(lp.has) - graft_has) if graft_has else []
    if lost:
        lp.warnings.append(f"the graft has no code for {', '.join(lost)}, which {path} has (no such GPU is "
                           f"detected here)")
    if not lp.abi_ok:
        lp.status = "refused"
        lp.reason = f"{source.describe()} does not load here: {lp.lines[0]}" + \
            (f" (+{len(lp.lines) - 1} more)" if len(lp.lines) > 1 else "")
        return

    own = divert.owner_of(root, path, aliases=(f"{lp.tree.rstrip('/')}/{lp.soname}",))
    lp.owner = own.to_json()
    wanted, why_not = divert.can_divert(root, own)
    files = {path: staged}
    orig_sha = None
    if wanted:
        files[own.divert_path] = real  # the package's bytes, where dpkg will look for them
        from rocmrevive.txn.fsutil import sha256_file

        orig_sha = sha256_file(real)[0]
    elif own.package:
        lp.warnings.append(why_not)
    lp.divert = {"wanted": wanted, "path": path, "divert_to": own.divert_path if wanted else None,
                 "package": own.package, "orig_sha256": orig_sha, "registered": False, "why_not": why_not}
    plan = plan_from_staged(root, lp.tree, files,
                            source=f"{source.key} {fetched.basename} sha256:{fetched.sha256}",
                            meta={"kind": "library", "manifest": manifest.id, "library": lp.soname,
                                  "file": path, "source": source.to_json(), "artifact": fetched.to_json(),
                                  "devices": [str(d) for d in devices], "rocm_version": lp.rocm_version,
                                  "abi": verdict.summary, "divert": lp.divert})
    lp.summary, lp.diff = plan.summary(), plan.diff()
    if not check and confirm is not None and not confirm(lp):
        lp.status, lp.reason = "declined", "declined at the prompt; nothing was changed"
        return
    res = apply_plan(root, plan, state_dir=state_dir, dry_run=check)
    lp.changes = res.actions
    pending = [a for a in res.actions if a.get("op") not in ("unchanged",)]
    if check:
        lp.status = "planned" if pending else "unchanged"
        lp.reason = f"would replace {path} with {source.describe()}" if pending else "graft already in place"
        return
    lp.txid, lp.journal, lp.changed = res.txid, res.journal_path, res.changed
    try:
        if wanted:
            divert.reconcile(root, state_dir)
            lp.divert["registered"] = divert.is_diverted(root, path)
        after = check_library(root, real, search_dirs=[lp.tree], targets=[*devices, *keep],
                              rocm_version=lp.rocm_version)
        lp.verify_after = {"ok": after.ok, "lines": after.lines, "summary": after.summary}
        if not after.ok:
            raise RevError("VERIFY_FAILED", f"{path} failed the ABI check after the install and was rolled "
                                            f"back: {'; '.join(after.lines[:3])}")
    except RevError:
        if res.txid:
            rollback(root, res.txid, state_dir=state_dir, force=True)
            divert.reconcile(root, state_dir)
        raise
    lp.status = "installed" if res.changed else "unchanged"
    lp.reason = (f"replaced with {source.describe()} (transaction {res.txid})" if res.changed
                 else "graft already in place")


def _fetch_first(root, sources, cache_dir: Path, *, mirror, from_path, log, progress):
    """(source, FetchResult) of the first source that can be fetched; a network failure moves on
    to the next source, any other error stops."""
    from rocmrevive.sources.fetch import fetch_source

    last: RevError | None = None
    for src in sources:
        try:
            log(f"fetching {src.describe()}")
            return src, fetch_source(src, cache_dir, mirror=mirror, local=from_path, root=root, progress=progress)
        except RevError as exc:
            if exc.code != "NETWORK":
                raise
            last = exc
    assert last is not None
    raise last


def _staged_library(fetched, manifest, comp, source, cache_dir: Path, log: Log, work: Path) -> Path:
    """The one file of ``comp`` in the artifact, extracted (once, into the cache; an unpacked
    folder given with --from has no checksum to key the cache on, so it is staged in ``work``)."""
    found = _extracted(fetched, manifest, source, cache_dir, log, work)
    files = {n: p for n, p in found.items() if comp.select(n)}
    if len(files) != 1:
        raise RevError("VERIFY_FAILED", f"{fetched.basename}: {len(files)} members under {source.member_prefix} "
                                        f"match {', '.join(comp.files)} (expected exactly one library file)")
    return next(iter(files.values()))


def cached_library(manifest, comp, source, cache_dir: Path) -> Path | None:
    """The component's file as an earlier install extracted it into the cache, or None: what
    ``audit`` checks without fetching or unpacking anything."""
    import json

    if not source.sha256:
        return None
    try:  # read-only: never create the cache; nothing another user could have planted is used
        with Dir.open(Path(cache_dir) / "extracted", allow_shared=False, what="cache"):
            pass
    except (OSError, RevError):
        return None
    done = Path(cache_dir) / "extracted" / f"{source.sha256[:32]}-{manifest.id}"
    try:
        listed = json.loads((done / "index.json").read_text())
    except (OSError, ValueError):
        return None
    for name, (_sha, size) in sorted(listed.items()):
        if comp.select(name):
            p = done / "files" / name
            try:
                # audit only reads it (install re-hashes before using it): the size will do
                return p if p.stat().st_size == size else None
            except OSError:
                return None
    return None


def graft_remedy(root: Root, file_machine_path: str, target: TargetId, manifests, cache_dir: Path) -> dict | None:
    """For ``audit``: whether a manifest provides ``target`` for the library at
    ``file_machine_path`` (a file in a tree's lib folder), and whether that source passes the
    ABI check here. Nothing is fetched or unpacked: a source is checked when an earlier
    ``install`` (or ``install --check``) left it extracted in the cache.

    Returns None (no manifest for it) or {"manifest", "source", "abi": "loads" | "refused" |
    "not-fetched" | "no-source", "lines", "summary"}."""
    from rocmrevive.hostlib.abi import check_library
    from rocmrevive.trees.installs import read_version

    libdir, name = os.path.split(file_machine_path)
    if target.processor != TARGET:
        return None
    rocm_version = read_version(root, os.path.dirname(libdir))[0]  # <install>/.info/version
    for m, comp in _library_components(manifests, rocm_version):
        if not (name == comp.soname or name.startswith(comp.soname + ".")):
            continue
        out = {"manifest": m.id, "soname": comp.soname, "source": None, "abi": "no-source", "lines": [],
               "summary": ""}
        sources = m.sources_for_rocm(rocm_version) if rocm_version else []
        if not sources:
            out["lines"] = [f"{m.id} has no source for ROCm {rocm_version or '(unknown version)'}"]
            return out
        for src in sources:
            staged = cached_library(m, comp, src, cache_dir)
            out["source"] = src.describe()
            if staged is None:
                continue
            v = check_library(root, staged, search_dirs=[libdir], targets=[target], rocm_version=rocm_version,
                              origin=libdir)
            out.update(abi="loads" if v.ok else "refused", lines=list(v.lines), summary=v.summary,
                       source=src.describe())
            return out
        out["abi"] = "not-fetched"
        return out
    return None
