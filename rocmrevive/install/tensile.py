"""rocBLAS Tensile files as an install step: for one rocBLAS copy, the manifest's gfx906
members of a version-matched source, staged and checked — ELF targets, then the same checks
``verify`` runs, on the tree's folder read with the staged files in their place — before a byte
of the tree is written.

    out = install_copy(run, copy)    # a CopyOutcome: satisfied | planned | installed | refused | ...
"""
from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Callable, Sequence

from rocmrevive import hashing  # a module: tests count its calls
from rocmrevive.codeobj import inspect as objinspect  # a module: tests count its calls
from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.diagnose import verify as dverify  # a module: tests count its calls
from rocmrevive.diagnose.verify import CheckStatus, CopyResult, runtime_limit
from rocmrevive.errors import RevError
from rocmrevive.install import unpinned
from rocmrevive.install.core import Hooks, StagedFiles, Status, Verdict, feed
from rocmrevive.install.extract import extracted, fetch_first, forget_extracted
from rocmrevive.install.records import (
    ArtifactRecord,
    PlanSummary,
    SourceRecord,
    UnpinnedArtifact,
    UnpinnedSource,
    VerifyRecord,
)
from rocmrevive.install.report import CopyOutcome, ended, refused
from rocmrevive.install.run import InstallRun
from rocmrevive.install.unpinned import VERIFIED_BY_CONTENT
from rocmrevive.invocation import shell_command
from rocmrevive.sources.manifest import TARGET, choose_manifest
from rocmrevive.trees.gfx906_choices import summary
from rocmrevive.trees.select import Copy
from rocmrevive.trees.trust import TreeTrust
from rocmrevive.txn.history import list_transactions
from rocmrevive.units import size_text

GATING = ("targets", "tensile")  # the host library's own device code is reported, not gated on


def _gating_ok(result) -> bool:
    return all(c.status != CheckStatus.FAIL for d in result.devices for c in d.checks if c.name in GATING)


def _first_failures(result, limit: int = 3) -> str:
    out = []
    for d in result.devices:
        for c in d.checks:
            if c.status == CheckStatus.FAIL and c.name in GATING:
                names = ", ".join(o.get("file") or "?" for o in c.offenders[:limit])
                out.append(f"{d.target} {c.name}: {c.summary}" + (f" ({names})" if names else ""))
    return "; ".join(out)


def check_staged_targets(by_name: dict[str, Path], devices: Sequence[TargetId]) -> None:
    """Every staged code object is gfx906 code that loads on every device."""
    for name, p in sorted(by_name.items()):
        rep = objinspect.inspect_file(p)
        if rep.problems:
            raise RevError("VERIFY_FAILED", f"staged {name}: {rep.problems[0]}; nothing was changed")
        if rep.kind in ("tensile-dat",):
            continue
        if not rep.entries:
            raise RevError("VERIFY_FAILED", f"staged {name} is {rep.kind}, not a GPU code object; nothing was changed")
        for e in rep.entries:
            for c in TargetId.coverage([e], devices):
                if not c.loads:
                    raise RevError("VERIFY_FAILED", f"staged {name} holds {e.target} code, which does not "
                                                    f"load on {c.device}; nothing was changed")


class TensileFiles(Hooks):
    """The Tensile files one source provides for one rocBLAS copy (``collect`` says which).

    The staged files pass ``verify_copy`` on the tree's folder read with them in their place;
    when after the transaction the folder holds the same names and the written files the staged
    bytes (re-hashed), the staged verdict is the installed one: one verification pass per copy
    besides the one that decides whether it is needed. A folder that changed beside the install
    is verified again, whole. What the walk found (``found``) becomes fields of the copy's
    outcome."""

    def __init__(self, run: InstallRun, copy: Copy):
        self.run, self.copy = run, copy
        self.real_lib, self.host_lib = copy.real, copy.host   # as trees.select resolved them, once
        self.label = copy.path
        self.files: dict[str, Path] = {}
        self.sha256: dict[str, tuple[str, int]] = {}   # file name → as extracted (collect may say)
        self.listings: list[frozenset[str]] = []       # the folder's names each cross-reference read
        self.staged: CopyResult | None = None           # the verdict on the staged files
        self.after: VerifyRecord | None = None          # the verdict after the install

    def found_in(self, out: CopyOutcome) -> CopyOutcome:
        """``out`` with what this walk decided (``verify_staged``, ``verify_after``; a kind of
        source adds its own)."""
        return replace(out, verify_staged=None if self.staged is None else VerifyRecord.of(self.staged),
                       verify_after=self.after)

    # what a kind of source says ----------------------------------------------------------
    def collect(self, area: Path) -> dict[str, Path]:
        """File name → staged file, checked as far as the source kind requires."""
        raise NotImplementedError

    def refusal(self, failures: str) -> str:
        """The one line when the staged files fail the checks on the overlay."""
        raise NotImplementedError

    def provenance(self) -> tuple[str, dict]:
        """(the plan's source line, the journal's meta)."""
        raise NotImplementedError

    # the walk's part ---------------------------------------------------------------------
    def stage(self, area: Path) -> StagedFiles:
        run, copy = self.run, self.copy
        by_name = self.collect(area)
        staged = _verify(copy, self.real_lib, self.host_lib, run.devices, show=self._shown, staged=by_name,
                         progress=feed(run.progress, "verifying", "checks"))
        self.staged = staged
        if not _gating_ok(staged):
            raise RevError("VERIFY_FAILED", self.refusal(_first_failures(staged)))
        self.listings = [d.xref.names for d in staged.devices if d.xref is not None]
        self.files = {f"{copy.path}/{n}": p for n, p in by_name.items()}
        source, meta = self.provenance()
        return StagedFiles(copy.path, self.files, source=source,
                           meta={**meta, "devices": [str(d) for d in run.devices],
                                 "rocblas_version": copy.rocblas_version, "rocm_version": copy.rocm_version,
                                 "library": copy.path},
                           sha256={f"{copy.path}/{n}": h for n, h in self.sha256.items() if n in by_name})

    def _shown(self, p: Path) -> str:
        """The library folder as the copy's machine path (what the tree calls it), others as theirs."""
        return self.copy.path if p == self.real_lib else self.run.root.machine_path(p)

    def verify(self, result) -> Verdict:
        changed = {a.path: a.after for a in result.actions if a.after}
        root = self.run.root
        assert self.staged is not None   # stage() verified the staged files before the transaction
        staged = VerifyRecord.of(self.staged)
        # a file still the inode the apply wrote and hashed is those bytes (TxResult.still_written)
        wrong = [p for p, sha in changed.items() if p in self.files and not result.still_written(p, root.resolve(p))
                 and hashing.sha256_file(root.resolve(p))[0] != sha]
        if wrong:
            self.after = replace(staged, ok=False)
            return Verdict(False, self.after.to_json(), why=f"{len(wrong)} files differ from what was staged ({wrong[0]})")
        try:
            same_names = all(names == frozenset(os.listdir(self.real_lib)) for names in self.listings)
        except OSError:
            same_names = False
        if same_names and self.listings:
            self.after = staged  # the folder the staged cross-reference read: its verdict stands
            return Verdict(True, self.after.to_json())
        after = _verify(self.copy, self.real_lib, self.host_lib, self.run.devices, show=self._shown)
        self.after = VerifyRecord.of(after)
        return Verdict(_gating_ok(after), self.after.to_json(), why=_first_failures(after))


class PinnedTensile(TensileFiles):
    """The manifest's members of a fetched, checksummed artifact."""

    def __init__(self, run: InstallRun, copy: Copy, manifest, source, fetched):
        super().__init__(run, copy)
        self.manifest, self.source, self.fetched = manifest, source, fetched

    def found_in(self, out: CopyOutcome) -> CopyOutcome:
        return replace(super().found_in(out), source=SourceRecord.of(self.source),
                       artifact=ArtifactRecord.of(self.fetched))

    def stage(self, area: Path) -> StagedFiles:
        try:
            return super().stage(area)
        except RevError:
            forget_extracted(self.fetched, self.manifest, self.run.cache_dir)  # a refusal leaves nothing cached
            raise

    def collect(self, area: Path) -> dict[str, Path]:
        run, fetched, source = self.run, self.fetched, self.source
        tensile = self.manifest.select_kind("tensile")
        members = {n: m for n, m in extracted(fetched, self.manifest, source, run.cache_dir, run.log,
                                              area, run.progress).items() if tensile(n)}
        by_name = {n: m.path for n, m in members.items()}
        self.sha256 = {n: (m.sha256, m.size) for n, m in members.items()}
        nested = sorted(n for n in by_name if "/" in n)
        if nested:  # rocBLAS reads one flat library folder
            raise RevError("VERIFY_FAILED", f"{fetched.basename}: {len(nested)} selected member(s) lie in a "
                                            f"subfolder of {source.member_prefix} (first: {ascii(nested[0])}); "
                                            f"rocBLAS reads one flat library folder: the manifest's member_prefix "
                                            f"must be that folder; nothing was changed")
        check_staged_targets(by_name, run.devices)
        return by_name

    def refusal(self, failures: str) -> str:
        return f"files from {self.source.describe()} do not serve {self.copy.path}: {failures}; nothing was changed"

    def provenance(self) -> tuple[str, dict]:
        f = self.fetched
        return (f"{self.source.key} {f.basename} sha256:{f.sha256}",
                {"manifest": self.manifest.id, "source": self.source.to_json(), "artifact": f.to_json()})


class UnpinnedTensile(TensileFiles):
    """``--from`` a folder or tarball no manifest pins: accepted only by content
    (``rocmrevive.install.unpinned``), and journaled as "verified by content, unpinned"."""

    def __init__(self, run: InstallRun, copy: Copy, manifest):
        super().__init__(run, copy)
        self.manifest = manifest
        self.artifact: UnpinnedArtifact | None = None     # the staged build (unpinned.UnpinnedBuild)

    def found_in(self, out: CopyOutcome) -> CopyOutcome:
        if self.artifact is None:
            return super().found_in(out)
        return replace(super().found_in(out), artifact=self.artifact,
                       source=UnpinnedSource(str(self.run.from_path), VERIFIED_BY_CONTENT))

    def collect(self, area: Path) -> dict[str, Path]:
        run, from_path = self.run, self.run.from_path
        assert from_path is not None
        comps = self.manifest.components_of("tensile") if self.manifest else []
        patterns = [p for c in comps for p in c.files] or list(unpinned.default_patterns(TARGET))
        staged = unpinned.stage(Path(from_path), TARGET, unpinned.selector(patterns), area)
        self.artifact = UnpinnedArtifact.of(staged)
        self.sha256 = staged.sha256
        unpinned.check_version(staged, self.copy.rocblas_version, self.copy.path)
        check_staged_targets(staged.by_name, run.devices)
        limit, basis = runtime_limit(self.copy.rocm_version, objinspect.inspect_file(self.host_lib) if self.host_lib else None)
        unpinned.check_code_object_versions(staged.by_name, limit, basis)
        return staged.by_name

    def refusal(self, failures: str) -> str:
        return (f"--from {self.run.from_path} does not serve {self.copy.path}: {failures} (the cross-reference "
                f"against the tree's own index: a build of another rocBLAS release?); nothing was changed")

    def provenance(self) -> tuple[str, dict]:
        src = self.run.from_path
        return (f"unpinned {src} ({VERIFIED_BY_CONTENT})",
                {"manifest": None, "source": f"{VERIFIED_BY_CONTENT}: {src}", "verification": VERIFIED_BY_CONTENT,
                 "pinned": False, "artifact": {} if self.artifact is None else self.artifact.to_json()})


def _verify(copy, library: Path, host_lib, devices, *, show, progress=None, staged=None):
    return dverify.verify_copy(library, devices, host_library=host_lib, rocm_version=copy.rocm_version, show=show,
                       progress=progress, staged=staged, host_report=_host_report(host_lib))


_HOST_REPORTS: dict[tuple, object] = {}  # the last host library inspected, by its stat identity


def _host_report(host_lib: Path | None):
    """``inspect_file`` of the host library, read once per process while it stays the same file:
    verify before and on the staged files both need it (librocblas.so: ~0.13 s each). Kept by
    (path, dev, inode, size, mtime, ctime), the stat identity the check after trusts too
    (``TxResult.still_written``), taken before and after the read so a file changed meanwhile is
    not kept."""
    if host_lib is None:
        return None

    def identity() -> tuple | None:
        try:
            st = os.stat(host_lib)
        except OSError:
            return None
        return (str(host_lib), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)

    key = identity()
    if key is not None and key in _HOST_REPORTS:
        return _HOST_REPORTS[key]
    report = objinspect.inspect_file(host_lib)
    if key is not None and identity() == key:
        _HOST_REPORTS.clear()
        _HOST_REPORTS[key] = report
    return report


def install_copy(run: InstallRun, copy: Copy, *, trust: TreeTrust | None = None) -> CopyOutcome:
    """Decide, stage, apply and verify one rocBLAS copy, and say what came of it. The copy's own
    failure (a checksum, a refused staged file, a failed check after) is its ``refused`` outcome;
    a failure of the machine (``report.FATAL``) is raised. ``copy``: as ``trees.select`` selected it
    (its real library folder and ``librocblas.so`` resolved there, once)."""
    out = CopyOutcome(copy.path, copy.layout, copy.rocblas_version, copy.rocm_version, trust=trust)
    component: TensileFiles | None = None
    rb = copy.found   # what trees.rocblas read of it
    real_lib, host_lib = copy.real, copy.host
    try:
        if rb.arch_folders or rb.kpack:
            have = set(rb.targets) | set(rb.kpack_arches)   # a whole gfx906 stack (7.14, 10.0) serves itself
            if all(d.processor in have for d in run.devices):
                return replace(out, status=Status.SATISFIED,
                               reason=(f"a TheRock tree that carries {TARGET} device code ({', '.join(sorted(have))}): "
                                       f"nothing to install; `rocmrevive verify` checks it library by library"))
            return replace(out, status=Status.UNSUPPORTED,
                           reason=(f"a TheRock tree (ROCm {copy.rocm_version or '7.13+'}: per-target .kpack archives / "
                                   f"per-arch folders): rocmrevive does not patch it; "
                                   f"{summary(copy.rocm_version, copy.path)}"))
        before = _verify(copy, real_lib, host_lib, run.devices, show=run.root.machine_path)
        out = replace(out, verify_before=VerifyRecord.of(before))
        if _gating_ok(before):
            _refuse_drift(run.root, real_lib, copy.path, run.state_dir)
            return replace(out, status=Status.SATISFIED, reason="already serves " + ", ".join(map(str, run.devices)))
        out, make = _component(run, copy, out)
        if make is None:
            return out
        component = make()   # a pinned source is fetched here
        out, walk = run.walk(out, component)
    except RevError as exc:
        return refused(out if component is None else component.found_in(out), exc)
    s = out.summary or PlanSummary(copy.path, 0, 0, 0, 0, 0, 0)
    how = f"; {VERIFIED_BY_CONTENT}" if isinstance(component, UnpinnedTensile) else ""
    files = "file" if s.written == 1 else "files"
    return ended(out, walk.status,
                 planned=f"would add {s.create} and replace {s.replace} {files} ({size_text(s.bytes)}){how}",
                 installed=f"added {s.create}, replaced {s.replace} {files} (transaction {out.txid}){how}",
                 unchanged=f"files already in place{how}")


def _refuse_drift(root, real_lib: Path, machine_lib: str, state_dir: str) -> None:
    """A copy that serves the cards but whose files rocmrevive installed were changed since (edited
    by hand) is not "satisfied": say which files and how to get back to the pinned ones."""
    drifted: list[tuple[str, str]] = []
    for tx in list_transactions(root, state_dir=state_dir):
        for path in tx.drifted:
            try:
                inside = root.resolve(path).parent == real_lib
            except ValueError:
                inside = False
            if inside:
                drifted.append((path, tx.txid))
    if not drifted:
        return
    txids = sorted({t for _p, t in drifted})
    names = ", ".join(p.rsplit("/", 1)[-1] for p, _t in drifted[:3]) + (" …" if len(drifted) > 3 else "")
    raise RevError("DRIFT", f"{len(drifted)} file(s) rocmrevive installed in {machine_lib} changed since transaction "
                            f"{', '.join(txids)}: {names}; to get the pinned files back run `rocmrevive rollback "
                            f"--force {txids[-1]}` (the edited bytes are kept in the backups), then install again",
                   details={"drift": [p for p, _t in drifted], "transactions": txids})


def _component(run: InstallRun, copy: Copy, out: CopyOutcome) -> tuple[CopyOutcome, Callable[[], TensileFiles] | None]:
    """The source for this copy: a manifest's pinned source (fetched when the component is
    made), or an unpinned ``--from`` when no manifest source is built for its rocBLAS; None (the
    outcome says why) when there is neither. The outcome gains the manifest chosen."""
    manifest = choose_manifest(run.manifests, copy.rocblas_version, TARGET)
    pinned = None if manifest is None else (manifest.sources if run.cross_version
                                            else manifest.sources_for(copy.rocblas_version))
    if run.from_path and not pinned and run.from_is_build:
        # no manifest source for this rocBLAS, and --from is a build: it must prove itself by content
        out = replace(out, verification=VERIFIED_BY_CONTENT, manifest=manifest.id if manifest else None)
        return out, lambda: UnpinnedTensile(run, copy, manifest)
    if manifest is None:
        return replace(out, status=Status.UNSUPPORTED,
                       reason=(f"no manifest for rocBLAS {copy.rocblas_version or '(version unknown)'}"
                               + ("" if copy.rocblas_version else f" ({'; '.join(copy.found.problems)})")
                               + f"; `{shell_command(['recipe', '--tree', copy.path])}` writes the build, `install --from` "
                                 f"takes it")), None
    out = replace(out, manifest=manifest.id)
    if not pinned:
        return replace(out, status=Status.REFUSED,
                       reason=(f"{manifest.id} has no source built for rocBLAS {copy.rocblas_version}; "
                               f"`{shell_command(['recipe', '--tree', copy.path])}` writes the build and `install --from <its "
                               f"prefix>` takes it, verified by content (--cross-version allows "
                               f"{', '.join(s.name for s in manifest.sources)}, at your risk)")), None

    def fetched() -> TensileFiles:
        source, artifact = fetch_first(run.root, pinned, run.cache_dir, mirror=run.mirror, from_path=run.from_path,
                                       log=run.log, progress=run.progress, manifests=run.manifests,
                                       snapshot=run.snapshot)
        return PinnedTensile(run, copy, manifest, source, artifact)
    return out, fetched
