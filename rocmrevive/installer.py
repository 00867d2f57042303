"""The main path: detect → choose rocBLAS copies → plan → fetch → stage → verify staged → apply
→ verify installed → report (DESIGN.md "The main path").

    report = install(Root("/"), check=True)     # what would change, nothing written
    report = install(Root("/"))                 # do it, as one transaction per rocBLAS copy

Each rocBLAS copy is one transaction (``txn.apply_plan``). Nothing touches a tree before its
staged files have passed the same checks ``verify`` runs, against an overlay of the tree's own
files and the staged ones, so a source whose fallback kernels do not match the tree's index is
refused before the first byte is written.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.errors import RevError
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

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class InstallReport:
    devices: list[str]
    devices_from: str
    copies: list[CopyPlan]
    check: bool
    warnings: list[str] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        """Installed something, or (with check) would."""
        if self.check:
            return any(c.status == "planned" for c in self.copies)
        return any(c.changed for c in self.copies)

    def to_json(self) -> dict:
        return {"devices": self.devices, "devices_from": self.devices_from, "check": self.check,
                "copies": [c.to_json() for c in self.copies],
                "diff": {"before": {k: v for c in self.copies for k, v in (c.diff or {}).get("before", {}).items()},
                         "after": {k: v for c in self.copies for k, v in (c.diff or {}).get("after", {}).items()}}}


def _verify(library: Path, devices, *, host_library, rocm_version, show) -> "CopyResult":
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
        if m.target == TARGET and m.rocblas_versions.contains(v, prereleases=True):
            return m
    return None


def install(root: Root, *, trees=(), targets=(), manifests_dir=None, cache=None, mirror: str | None = None,
            from_path: str | None = None, cross_version: bool = False, check: bool = False,
            state_dir: str | None = None, pythons=(), log: Log = lambda s: None, progress=None,
            confirm: Callable[[CopyPlan], bool] | None = None) -> InstallReport:
    """Install the gfx906 files every rocBLAS copy lacks (or the ``trees`` named).

    A copy that cannot be served (no manifest for its version, staged files that fail the
    checks) is reported with its own error and the others go on; machine-wide trouble (lock,
    network, permission, an interrupted transaction) stops everything. ``confirm(copy_plan)``
    is asked before each copy is changed (False skips it)."""
    from rocmrevive.hardware.devices import resolve_devices
    from rocmrevive.sources.cache import default_cache_dir
    from rocmrevive.sources.manifest import default_manifest_dir, load_manifests
    from rocmrevive.trees.installs import find_installs
    from rocmrevive.trees.pythonenv import find_envs
    from rocmrevive.trees.rocblas import find_copies
    from rocmrevive.txn.transaction import DEFAULT_STATE_DIR

    state_dir = state_dir or DEFAULT_STATE_DIR
    devices, devices_from = resolve_devices(root, targets, processor=None if targets else TARGET)
    if any(not d.covers_processor(TARGET) and d.processor != TARGET for d in devices):
        bad = ", ".join(str(d) for d in devices if d.processor != TARGET)
        raise RevError("NOTHING_SUPPORTED", f"rocmrevive installs gfx906 files; --target {bad} is not gfx906")
    manifests = load_manifests(manifests_dir or default_manifest_dir())
    cache_dir = Path(cache) if cache else default_cache_dir(root)

    copies = _select_copies(root, trees, pythons, find_installs, find_envs, find_copies)
    report = InstallReport([str(d) for d in devices], devices_from, [], check)
    if not copies:
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
    return report


def _select_copies(root, trees, pythons, find_installs, find_envs, find_copies):
    from rocmrevive.diagnose.locate import rocblas_library_dirs

    installs, _ = find_installs(root)
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
    wanted = {str(root.resolve(x)) for x in libs}
    every = find_copies(root, installs=installs, envs=envs, extra=libs)
    picked = []
    for c in every:
        try:
            real = str(root.resolve(c.path))
        except ValueError:
            continue
        if real in wanted and real not in {str(root.resolve(p.path)) for p in picked}:
            picked.append(c)
    return picked


def _plan_copy(root, copy, cp: CopyPlan, devices, manifests, cache_dir: Path, *, mirror, from_path,
               cross_version, check, state_dir, log, progress, confirm) -> None:
    from rocmrevive.diagnose import locate
    from rocmrevive.sources.fetch import fetch_source
    from rocmrevive.txn.plan import plan_from_staged
    from rocmrevive.txn.transaction import apply_plan, rollback

    real_lib = root.resolve(copy.path)
    host_lib = locate.rocblas_host_library(real_lib)
    show = root.machine_path
    if copy.arch_folders or copy.kpack:
        cp.status, cp.reason = "unsupported", ("TheRock layout (per-arch folders / .kpack archives) is "
                                               "recognised but not supported yet")
        return
    before = _verify(real_lib, devices, host_library=host_lib, rocm_version=copy.rocm_version, show=show)
    cp.verify_before = before.to_json()
    if _gating_ok(before):
        cp.status, cp.reason = "satisfied", "already serves " + ", ".join(map(str, devices))
        return
    manifest = _choose_manifest(manifests, copy.rocblas_version)
    if manifest is None:
        cp.status = "unsupported"
        cp.reason = (f"no manifest for rocBLAS {copy.rocblas_version or '(version unknown)'}"
                     + ("" if copy.rocblas_version else f" ({'; '.join(copy.problems)})"))
        return
    cp.manifest = manifest.id
    sources = manifest.sources if cross_version else manifest.sources_for(copy.rocblas_version)
    if not sources:
        cp.status = "refused"
        cp.reason = (f"{manifest.id} has no source built for rocBLAS {copy.rocblas_version}; "
                     f"--cross-version allows {', '.join(s.name for s in manifest.sources)}")
        return
    last: RevError | None = None
    fetched = source = None
    for src in sources:
        try:
            log(f"fetching {src.describe()}")
            fetched = fetch_source(src, cache_dir, mirror=mirror, local=from_path, root=root, progress=progress)
            source = src
            break
        except RevError as exc:
            if exc.code != "NETWORK":
                raise
            last = exc
    if fetched is None:
        assert last is not None
        raise last
    cp.source, cp.artifact = source.to_json(), fetched.to_json()

    work = Path(tempfile.mkdtemp(prefix="stage-", dir=_staging_parent(cache_dir)))
    try:
        by_name = _extracted(fetched, manifest, source, cache_dir, log)
        _check_staged_targets(by_name, devices)
        staged_result = _verify(_overlay(real_lib, by_name, work), devices, host_library=host_lib,
                                rocm_version=copy.rocm_version, show=lambda p: str(p))
        cp.verify_staged = staged_result.to_json()
        if not _gating_ok(staged_result):
            raise RevError("VERIFY_FAILED", f"files from {source.describe()} do not serve "
                                            f"{copy.path}: {_first_failures(staged_result)}; nothing was changed")
        plan = plan_from_staged(root, copy.path, {f"{copy.path}/{n}": p for n, p in by_name.items()},
                                source=f"{source.key} {fetched.basename} sha256:{fetched.sha256}",
                                meta={"manifest": manifest.id, "source": source.to_json(),
                                      "artifact": fetched.to_json(), "devices": [str(d) for d in devices],
                                      "rocblas_version": copy.rocblas_version, "rocm_version": copy.rocm_version,
                                      "library": copy.path})
        cp.summary = plan.summary()
        cp.diff = plan.diff()
        if not check and confirm is not None and not confirm(cp):
            cp.status, cp.reason = "skipped", "not confirmed"
            return
        res = apply_plan(root, plan, state_dir=state_dir, dry_run=check)
        cp.changes = res.actions
        if check:
            pending = [a for a in res.actions if a.get("op") not in ("unchanged",)]
            cp.status = "planned" if pending else "unchanged"
            cp.reason = (f"would add {cp.summary['create']} and replace {cp.summary['replace']} files "
                         f"({cp.summary['bytes']:,} bytes)") if pending else "files already in place"
            return
        cp.txid, cp.journal, cp.changed = res.txid, res.journal_path, res.changed
        after = _verify(real_lib, devices, host_library=host_lib, rocm_version=copy.rocm_version, show=show)
        cp.verify_after = after.to_json()
        if not _gating_ok(after):
            if res.txid:
                rollback(root, res.txid, state_dir=state_dir, force=True)
            raise RevError("VERIFY_FAILED", f"{copy.path} failed verification after the install and was "
                                            f"rolled back: {_first_failures(after)}")
        cp.status = "installed" if res.changed else "unchanged"
        cp.reason = (f"added {cp.summary['create']}, replaced {cp.summary['replace']} files "
                     f"(transaction {res.txid})") if res.changed else "files already in place"
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _extracted(fetched, manifest, source, cache_dir: Path, log: Log) -> dict[str, Path]:
    """The manifest's members of a verified artifact, extracted once per (artifact, manifest)
    into the cache and re-hashed on every reuse: a second tree, a re-install after an upgrade
    or a fleet node with a shared cache skips the decompression (most of an install's time)."""
    import json

    from rocmrevive.sources.cache import sha256_file
    from rocmrevive.sources.unpack import extract_selected

    key = f"{fetched.sha256[:32]}-{manifest.id}"
    done = cache_dir / "extracted" / key
    index = done / "index.json"
    if index.is_file():
        try:
            listed = json.loads(index.read_text())
            files = {n: done / "files" / n for n in listed}
            if all(sha256_file(p) == tuple(listed[n]) for n, p in files.items()):
                log(f"using the {len(files)} files extracted earlier from {fetched.basename}")
                return files
        except (OSError, ValueError, TypeError):
            pass
        log(f"extracted files of {fetched.basename} in the cache were damaged; extracting again")
        shutil.rmtree(done, ignore_errors=True)
    log(f"extracting {manifest.id} files from {fetched.basename}")
    parent = cache_dir / "extracted"
    parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=parent))
    try:
        staged = extract_selected(Path(fetched.path), manifest.select, tmp / "files",
                                  member_prefix=source.member_prefix)
        if not staged:
            raise RevError("VERIFY_FAILED", f"{fetched.basename}: no member under {source.member_prefix} "
                                            f"matches manifest {manifest.id}")
        (tmp / "index.json").write_text(json.dumps({f.name: [f.sha256, f.size] for f in staged}))
        os.replace(tmp, done)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return {f.name: done / "files" / f.name for f in staged}


def _staging_parent(cache_dir: Path) -> Path:
    p = cache_dir / "staging"
    p.mkdir(parents=True, exist_ok=True)
    return p


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
