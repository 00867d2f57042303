"""rocBLAS Tensile files as an install component: for one rocBLAS copy, the manifest's gfx906
members of a version-matched source, staged and checked — ELF targets, then the same checks
``verify`` runs, on the tree's folder read with the staged files in their place — before a byte
of the tree is written.

    rec = CopyPlan(copy.path, copy.layout, copy.rocblas_version, copy.rocm_version)
    plan_copy(ctx, copy, rec)        # rec.status: satisfied | planned | installed | ...
"""
from __future__ import annotations

import os
from pathlib import Path

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.errors import RevError
from rocmrevive.hardware.p2p import size_text
from rocmrevive.install.core import Hooks, Staged, Status, Verdict, feed, install_component, staging_area
from rocmrevive.install.extract import extracted, fetch_first, forget_extracted
from rocmrevive.install.report import CopyPlan, record_applied
from rocmrevive.install.unpinned import VERIFIED_BY_CONTENT
from rocmrevive.txn.plan import Op

TARGET = "gfx906"
GATING = ("targets", "tensile")  # the host library's own device code is reported, not gated on


def choose_manifest(manifests, rocblas_version: str | None):
    """The gfx906 manifest with Tensile files for this rocBLAS version, or None."""
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


def _gating_ok(result) -> bool:
    from rocmrevive.diagnose.verify import CheckStatus

    return all(c.status != CheckStatus.FAIL for d in result.devices for c in d.checks if c.name in GATING)


def _first_failures(result, limit: int = 3) -> str:
    from rocmrevive.diagnose.verify import CheckStatus

    out = []
    for d in result.devices:
        for c in d.checks:
            if c.status == CheckStatus.FAIL and c.name in GATING:
                names = ", ".join(o.get("file") or "?" for o in c.offenders[:limit])
                out.append(f"{d.target} {c.name}: {c.summary}" + (f" ({names})" if names else ""))
    return "; ".join(out)


def check_staged_targets(by_name: dict[str, Path], devices: list[TargetId]) -> None:
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
    is verified again, whole."""

    def __init__(self, ctx, copy, rec: CopyPlan, real_lib: Path, host_lib):
        self.ctx, self.copy, self.rec = ctx, copy, rec
        self.real_lib, self.host_lib = real_lib, host_lib
        self.label = copy.path
        self.files: dict[str, Path] = {}
        self.sha256: dict[str, tuple[str, int]] = {}   # file name → as extracted (collect may say)
        self.listings: list[frozenset[str]] = []       # the folder's names each cross-reference read

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
    def stage(self, area: Path) -> Staged:
        ctx, copy = self.ctx, self.copy
        by_name = self.collect(area)
        staged = _verify(copy, self.real_lib, self.host_lib, ctx.devices, show=self._shown, staged=by_name,
                         progress=feed(ctx.progress, "verifying", "checks"))
        self.rec.verify_staged = staged.to_json()
        if not _gating_ok(staged):
            raise RevError("VERIFY_FAILED", self.refusal(_first_failures(staged)))
        self.listings = [d.xref.names for d in staged.devices if d.xref is not None]
        self.files = {f"{copy.path}/{n}": p for n, p in by_name.items()}
        source, meta = self.provenance()
        return Staged(copy.path, self.files, source=source,
                      meta={**meta, "devices": [str(d) for d in ctx.devices], "rocblas_version": copy.rocblas_version,
                            "rocm_version": copy.rocm_version, "library": copy.path},
                      sha256={f"{copy.path}/{n}": h for n, h in self.sha256.items() if n in by_name})

    def _shown(self, p: Path) -> str:
        """The library folder as the copy's machine path (what the tree calls it), others as theirs."""
        return self.copy.path if p == self.real_lib else self.ctx.root.machine_path(p)

    def verify(self, result) -> Verdict:
        from rocmrevive.hashing import sha256_file

        changed = {a["path"]: a.get("after") for a in result.actions if a.get("after")}
        root = self.ctx.root
        # a file still the inode the apply wrote and hashed is those bytes (TxResult.still_written)
        wrong = [p for p, sha in changed.items() if p in self.files and not result.still_written(p, root.resolve(p))
                 and sha256_file(root.resolve(p))[0] != sha]
        if wrong:
            self.rec.verify_after = dict(self.rec.verify_staged or {}, ok=False)
            return Verdict(False, self.rec.verify_after,
                           why=f"{len(wrong)} files differ from what was staged ({wrong[0]})")
        try:
            same_names = all(names == frozenset(os.listdir(self.real_lib)) for names in self.listings)
        except OSError:
            same_names = False
        if same_names and self.listings:  # the folder the staged cross-reference read: its verdict stands
            staged = self.rec.verify_staged or {}
            self.rec.verify_after = dict(staged, ok=bool(staged.get("ok")))
            return Verdict(True, self.rec.verify_after)
        after = _verify(self.copy, self.real_lib, self.host_lib, self.ctx.devices, show=self._shown)
        self.rec.verify_after = after.to_json()
        return Verdict(_gating_ok(after), self.rec.verify_after, why=_first_failures(after))


class PinnedTensile(TensileFiles):
    """The manifest's members of a fetched, checksummed artifact."""

    def __init__(self, ctx, copy, rec: CopyPlan, real_lib: Path, host_lib, manifest, source, fetched):
        super().__init__(ctx, copy, rec, real_lib, host_lib)
        self.manifest, self.source, self.fetched = manifest, source, fetched

    def stage(self, area: Path) -> Staged:
        try:
            return super().stage(area)
        except RevError:
            forget_extracted(self.fetched, self.manifest, self.ctx.cache_dir)  # a refusal leaves nothing cached
            raise

    def collect(self, area: Path) -> dict[str, Path]:
        ctx, fetched, source = self.ctx, self.fetched, self.source
        tensile = self.manifest.select_kind("tensile")
        members = {n: m for n, m in extracted(fetched, self.manifest, source, ctx.cache_dir, ctx.log,
                                              area, ctx.progress).items() if tensile(n)}
        by_name = {n: m.path for n, m in members.items()}
        self.sha256 = {n: (m.sha256, m.size) for n, m in members.items()}
        nested = sorted(n for n in by_name if "/" in n)
        if nested:  # rocBLAS reads one flat library folder
            raise RevError("VERIFY_FAILED", f"{fetched.basename}: {len(nested)} selected member(s) lie in a "
                                            f"subfolder of {source.member_prefix} (first: {ascii(nested[0])}); "
                                            f"rocBLAS reads one flat library folder: the manifest's member_prefix "
                                            f"must be that folder; nothing was changed")
        check_staged_targets(by_name, ctx.devices)
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

    def __init__(self, ctx, copy, rec: CopyPlan, real_lib: Path, host_lib, manifest):
        super().__init__(ctx, copy, rec, real_lib, host_lib)
        self.manifest = manifest
        self.artifact: dict = {}

    def collect(self, area: Path) -> dict[str, Path]:
        from rocmrevive.install import unpinned
        from rocmrevive.codeobj.inspect import inspect_file
        from rocmrevive.diagnose.verify import runtime_limit

        ctx, rec, from_path = self.ctx, self.rec, self.ctx.from_path
        comps = self.manifest.components_of("tensile") if self.manifest else []
        patterns = [p for c in comps for p in c.files] or list(unpinned.default_patterns(TARGET))
        staged = unpinned.stage(Path(from_path), TARGET, unpinned.selector(patterns), area)
        rec.source = {"kind": "unpinned", "from": str(from_path), "verification": unpinned.VERIFIED_BY_CONTENT}
        rec.artifact = self.artifact = staged.to_json()
        self.sha256 = staged.sha256
        unpinned.check_version(staged, self.copy.rocblas_version, self.copy.path)
        check_staged_targets(staged.by_name, ctx.devices)
        limit, basis = runtime_limit(self.copy.rocm_version, inspect_file(self.host_lib) if self.host_lib else None)
        unpinned.check_code_object_versions(staged.by_name, limit, basis)
        return staged.by_name

    def refusal(self, failures: str) -> str:
        return (f"--from {self.ctx.from_path} does not serve {self.copy.path}: {failures} (the cross-reference "
                f"against the tree's own index: a build of another rocBLAS release?); nothing was changed")

    def provenance(self) -> tuple[str, dict]:
        from rocmrevive.install.unpinned import VERIFIED_BY_CONTENT

        src = self.ctx.from_path
        return (f"unpinned {src} ({VERIFIED_BY_CONTENT})",
                {"manifest": None, "source": f"{VERIFIED_BY_CONTENT}: {src}", "verification": VERIFIED_BY_CONTENT,
                 "pinned": False, "artifact": self.artifact})


def _verify(copy, library: Path, host_lib, devices, *, show, progress=None, staged=None):
    from rocmrevive.diagnose.verify import verify_copy

    return verify_copy(library, devices, host_library=host_lib, rocm_version=copy.rocm_version, show=show,
                       progress=progress, staged=staged, host_report=_host_report(host_lib))


_HOST_REPORTS: dict[tuple, object] = {}  # the last host library inspected, by its stat identity


def _host_report(host_lib: Path | None):
    """``inspect_file`` of the host library, read once per process while it stays the same file:
    verify before and on the staged files both need it (librocblas.so: ~0.13 s each). Kept by
    (path, dev, inode, size, mtime, ctime), the stat identity the check after trusts too
    (``TxResult.still_written``), taken before and after the read so a file changed meanwhile is
    not kept."""
    from rocmrevive.codeobj.inspect import inspect_file

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
    report = inspect_file(host_lib)
    if key is not None and identity() == key:
        _HOST_REPORTS.clear()
        _HOST_REPORTS[key] = report
    return report


def plan_copy(ctx, copy, rec: CopyPlan) -> None:
    """Decide, stage, apply and verify one rocBLAS copy; the outcome lands in ``rec``."""
    from rocmrevive.diagnose import locate

    real_lib = ctx.root.resolve(copy.path)
    host_lib = locate.rocblas_host_library(real_lib)
    if copy.arch_folders or copy.kpack:
        from rocmrevive.trees.gfx906_choices import summary   # issue 31: no AMD package to name

        have = set(copy.targets) | set(copy.kpack_arches)   # a whole gfx906 stack (7.14, 10.0) serves itself
        if all(d.processor in have for d in ctx.devices):
            rec.status, rec.reason = Status.SATISFIED, (f"a TheRock tree that carries {TARGET} device code "
                                                        f"({', '.join(sorted(have))}): nothing to install; "
                                                        f"`rocmrevive verify` checks it library by library")
            return
        rec.status, rec.reason = Status.UNSUPPORTED, (f"a TheRock tree (ROCm {copy.rocm_version or '7.13+'}: per-target "
                                                      f".kpack archives / per-arch folders): rocmrevive does not patch it; "
                                                      f"{summary(copy.rocm_version, copy.path)}")
        return
    before = _verify(copy, real_lib, host_lib, ctx.devices, show=ctx.root.machine_path)
    rec.verify_before = before.to_json()
    if _gating_ok(before):
        _refuse_drift(ctx.root, real_lib, copy.path, ctx.state_dir)
        rec.status, rec.reason = Status.SATISFIED, "already serves " + ", ".join(map(str, ctx.devices))
        return
    component = _component(ctx, copy, rec, real_lib, host_lib)
    if component is None:
        return
    with staging_area(ctx.staging) as area:
        applied = install_component(ctx.root, component, area, state_dir=ctx.state_dir, check=ctx.check,
                                    confirm=ctx.confirm)
    record_applied(rec, applied, check=ctx.check)
    s = rec.summary or {}
    rec.reason = {
        Status.DECLINED: "declined at the prompt; nothing was changed",
        Status.PLANNED: f"would add {s.get(Op.CREATE)} and replace {s.get(Op.REPLACE)} {_files(s)} ({size_text(s.get('bytes', 0))})",
        Status.INSTALLED: f"added {s.get(Op.CREATE)}, replaced {s.get(Op.REPLACE)} {_files(s)} (transaction {rec.txid})",
    }.get(applied.status, "files already in place")
    if isinstance(component, UnpinnedTensile) and rec.status is not Status.DECLINED:
        rec.reason += f"; {VERIFIED_BY_CONTENT}"


def _refuse_drift(root, real_lib: Path, machine_lib: str, state_dir: str) -> None:
    """A copy that serves the cards but whose files rocmrevive installed were changed since (edited
    by hand) is not "satisfied": say which files and how to get back to the pinned ones."""
    from rocmrevive.txn.history import list_transactions

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


def _files(summary: dict) -> str:
    return "file" if summary.get(Op.CREATE, 0) + summary.get(Op.REPLACE, 0) == 1 else "files"


def _from_is_build(ctx) -> bool:
    """Whether ``--from`` is a rocBLAS build (``unpinned.offered_as_build``), decided once per install;
    packages and exports keep their meaning: artifacts matched to the manifests by sha256."""
    from rocmrevive.install import unpinned

    if "from_is_build" not in ctx.memo:
        given = Path(ctx.from_path)
        if given.is_file():  # a .deb is listed once, in a staging area (nothing is written there)
            with staging_area(ctx.staging) as area:
                ctx.memo["from_is_build"] = unpinned.offered_as_build(given, area)
        else:
            ctx.memo["from_is_build"] = unpinned.offered_as_build(given, None)
    return ctx.memo["from_is_build"]


def _component(ctx, copy, rec: CopyPlan, real_lib: Path, host_lib) -> TensileFiles | None:
    """The source for this copy: a manifest's pinned source (fetched here), or an unpinned
    ``--from`` when no manifest source is built for its rocBLAS; None (``rec`` says why) when
    there is neither."""
    manifest = choose_manifest(ctx.manifests, copy.rocblas_version)
    pinned = None if manifest is None else (manifest.sources if ctx.cross_version
                                            else manifest.sources_for(copy.rocblas_version))
    if ctx.from_path and not pinned and _from_is_build(ctx):
        # no manifest source for this rocBLAS, and --from is a build: it must prove itself by content
        rec.verification = VERIFIED_BY_CONTENT
        rec.manifest = manifest.id if manifest else None
        return UnpinnedTensile(ctx, copy, rec, real_lib, host_lib, manifest)
    if manifest is None:
        rec.status = Status.UNSUPPORTED
        rec.reason = (f"no manifest for rocBLAS {copy.rocblas_version or '(version unknown)'}"
                      + ("" if copy.rocblas_version else f" ({'; '.join(copy.problems)})")
                      + f"; `rocmrevive recipe --tree {copy.path}` writes the build, `install --from` takes it")
        return None
    rec.manifest = manifest.id
    if not pinned:
        rec.status = Status.REFUSED
        rec.reason = (f"{manifest.id} has no source built for rocBLAS {copy.rocblas_version}; "
                      f"`rocmrevive recipe --tree {copy.path}` writes the build and `install --from <its prefix>` "
                      f"takes it, verified by content (--cross-version allows "
                      f"{', '.join(s.name for s in manifest.sources)}, at your risk)")
        return None
    source, fetched = fetch_first(ctx.root, pinned, ctx.cache_dir, mirror=ctx.mirror, from_path=ctx.from_path,
                                  log=ctx.log, progress=ctx.progress, manifests=ctx.manifests)
    rec.source, rec.artifact = source.to_json(), fetched.to_json()
    return PinnedTensile(ctx, copy, rec, real_lib, host_lib, manifest, source, fetched)
