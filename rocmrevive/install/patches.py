"""Reversible patches for userspace Python packages (vLLM...), applied and rolled back through
the same transaction core as any other file.

A patch is two files in ``patches/``: ``<id>.toml`` (the package, the exact versions it is for,
the file it changes, why) and ``<id>.diff`` (a unified diff). It is applied only when

* the package's installed version (its ``.dist-info/METADATA``) is one the patch lists, and
* the file is byte for byte the one that version installed (the sha256 in the dist's
  ``RECORD``); an editable or source install has no RECORD hash for it, and then the diff's
  own lines must match exactly, once.

Anything else is refused, never patched "close enough". ``status`` recognises a file that is
already patched (the reverse diff gives back the RECORD bytes), so apply is idempotent.

    specs = load_patches()
    st = patch_status(Root("/"), specs[0], "/home/alice/venv/lib/python3.11/site-packages")
    st.state                                   # PatchState.APPLICABLE | APPLIED | MODIFIED | ...
    apply_patch(root, specs[0], site); rollback_patch(root, specs[0], site)
"""
from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import os
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from rocmrevive.errors import RevError
from rocmrevive.fs import check_regular, open_regular, read_error, read_fd
from rocmrevive.hardware.sysfs import list_dir
from rocmrevive.install.core import Hooks, StagedFiles, Verdict, install_component, staging_area
from rocmrevive.rootfs import Root
from rocmrevive.strenum import StrEnum
from rocmrevive.trees.pythonenv import find_envs
from rocmrevive.trees.trust import decide, refusal, undo_refusal
from rocmrevive.txn.history import list_transactions
from rocmrevive.txn.journal import TxState
from rocmrevive.txn.state import DEFAULT_STATE_DIR
from rocmrevive.txn.undo import rollback

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

_ID = re.compile(r"^[a-z0-9][a-z0-9.+_-]*$")
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


class PatchState(StrEnum):
    """A patch's file in one site-packages (``PatchStatus.state``, its JSON ``state``)."""

    APPLICABLE = "applicable"            # the release's file: the patch applies
    APPLIED = "applied"                  # the release's file with this patch
    MODIFIED = "modified"                # neither: refused
    UNKNOWN_VERSION = "unknown-version"  # a package version the patch does not list
    NOT_INSTALLED = "not-installed"
    FILE_MISSING = "file-missing"
    REFUSED = "refused"                  # a link, FIFO, device, another's file or too large: never read


class PatchMismatch(Exception):
    """The diff does not apply to these bytes; the message says where."""


# ----------------------------------------------------------------------------------------
# unified diffs

@dataclass(frozen=True)
class Hunk:
    old_start: int
    old: tuple[str, ...]      # context and removed lines, in order (with their newlines)
    new: tuple[str, ...]      # context and added lines


def parse_diff(text: str) -> tuple[str, list[Hunk]]:
    """(the file the diff changes, relative to the package root; its hunks). Text before the
    ``---`` line is a comment. Raises ValueError for anything malformed."""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines) and not lines[i].startswith("--- "):
        i += 1
    if i + 1 >= len(lines) or not lines[i + 1].startswith("+++ "):
        raise ValueError("no '--- a/FILE' / '+++ b/FILE' header")
    new_name = lines[i + 1][4:].split("\t")[0].strip()
    path = new_name[2:] if new_name.startswith("b/") else new_name
    i += 2
    hunks: list[Hunk] = []
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            if lines[i].strip():
                raise ValueError(f"line {i + 1}: expected a hunk header, got {lines[i].strip()[:40]!r}")
            i += 1
            continue
        n_old = int(m.group(2) or 1)
        n_new = int(m.group(4) or 1)
        old: list[str] = []
        new: list[str] = []
        i += 1
        while i < len(lines) and (len(old) < n_old or len(new) < n_new):
            ln = lines[i]
            tag, body = ln[:1], ln[1:]
            if ln.startswith("\\"):           # "\ No newline at end of file"
                i += 1
                continue
            if tag == " ":
                old.append(body)
                new.append(body)
            elif tag == "-":
                old.append(body)
            elif tag == "+":
                new.append(body)
            else:
                raise ValueError(f"line {i + 1}: not a diff line: {ln.strip()[:40]!r}")
            i += 1
        if len(old) != n_old or len(new) != n_new:
            raise ValueError(f"hunk at -{m.group(1)}: counts say -{n_old}/+{n_new}, found -{len(old)}/+{len(new)}")
        hunks.append(Hunk(int(m.group(1)), tuple(old), tuple(new)))
    if not hunks:
        raise ValueError("no hunks")
    return path, hunks


def apply_hunks(data: bytes, hunks: list[Hunk], *, reverse: bool = False) -> bytes:
    """Apply (or undo) the hunks. Each hunk's lines must occur exactly once in the file, in
    hunk order; anything else raises PatchMismatch."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchMismatch(f"not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    lines = text.splitlines(keepends=True)
    pos = 0
    for n, h in enumerate(hunks, 1):
        find, put = (h.new, h.old) if reverse else (h.old, h.new)
        k = len(find)
        hits = [j for j in range(len(lines) - k + 1) if tuple(lines[j:j + k]) == find]
        if not hits:
            first = find[0].strip() if find else ""
            raise PatchMismatch(f"hunk {n} (line {h.old_start}) does not match: {first[:60]!r}… is not there "
                                f"as the diff expects")
        if len(hits) > 1:
            raise PatchMismatch(f"hunk {n} matches {len(hits)} places (lines {', '.join(str(j + 1) for j in hits[:4])})")
        j = hits[0]
        if j < pos:
            raise PatchMismatch(f"hunk {n} matches before the previous hunk")
        lines[j:j + k] = list(put)
        pos = j + len(put)
    return "".join(lines).encode("utf-8")


# ----------------------------------------------------------------------------------------
# patch specs

@dataclass(frozen=True)
class PatchSpec:
    id: str
    package: str
    versions: tuple[str, ...]
    file: str                 # relative to site-packages
    summary: str
    why: str
    upstream: str
    diff_text: str
    hunks: tuple[Hunk, ...]
    origin: str               # the .toml it was read from

    def to_json(self) -> dict:
        return {"id": self.id, "package": self.package, "versions": list(self.versions), "file": self.file,
                "summary": self.summary, "why": self.why, "upstream": self.upstream, "origin": self.origin}


def default_patch_dir() -> Path:
    """$ROCMREVIVE_PATCHES, else the ``patches/`` folder shipped with rocmrevive."""
    env = os.environ.get("ROCMREVIVE_PATCHES")
    if env:
        return Path(env)
    here = Path(__file__).resolve().parent.parent  # the rocmrevive package
    for cand in (here.parent / "patches", here / "data" / "patches"):
        if cand.is_dir():
            return cand
    return here.parent / "patches"


def load_patches(directory: Path | str | None = None) -> list[PatchSpec]:
    """Every ``*.toml`` patch in ``directory``, checked; any error raises RevError("USAGE")
    naming the file."""
    d = Path(directory) if directory else default_patch_dir()
    out = []
    for toml in sorted(d.glob("*.toml")):
        where = str(toml)
        try:
            meta = tomllib.loads(toml.read_text())
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise RevError("USAGE", f"{where}: {exc}") from None
        try:
            pid = meta["id"]
            if not isinstance(pid, str) or not _ID.match(pid):
                raise ValueError(f"id {pid!r} is not a lower-case name")
            versions = meta["versions"]
            if not versions or not all(isinstance(v, str) for v in versions):
                raise ValueError("versions must list the package versions the patch is for")
            diff_text = (toml.parent / meta["diff"]).read_text()
            path, hunks = parse_diff(diff_text)
            if path != meta["file"]:
                raise ValueError(f"the diff changes {path}, the patch says file = {meta['file']}")
            out.append(PatchSpec(pid, meta["package"], tuple(versions), meta["file"], meta.get("summary", ""),
                                 meta.get("why", "").strip(), meta.get("upstream", "").strip(), diff_text,
                                 tuple(hunks), where))
        except (KeyError, ValueError, OSError) as exc:
            what = f"missing key {exc}" if isinstance(exc, KeyError) else str(exc)
            raise RevError("USAGE", f"{where}: {what}") from None
    ids = [p.id for p in out]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise RevError("USAGE", f"{d}: patch id {sorted(dup)[0]} is defined twice")
    return out


def patch_named(specs: list[PatchSpec], pid: str) -> PatchSpec:
    for s in specs:
        if s.id == pid:
            return s
    raise RevError("USAGE", f"no patch {pid} ({', '.join(s.id for s in specs) or 'none known'}); "
                            f"`rocmrevive patch list` shows them")


# ----------------------------------------------------------------------------------------
# the installed package

def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


@dataclass
class Dist:
    site: str                 # machine path of site-packages
    dist_info: str            # machine path
    name: str
    version: str
    record: dict[str, str]    # file -> sha256 hex (from RECORD's urlsafe base64)

    def to_json(self) -> dict:
        return {"site": self.site, "dist_info": self.dist_info, "name": self.name, "version": self.version}


def find_dist(root: Root, site: str, package: str) -> Dist | None:
    """The installed distribution ``package`` in ``site`` (its .dist-info), or None. Its
    METADATA and RECORD are read as files the venv's owner may have planted (``read_in_site``);
    one that cannot be read so leaves the version from the folder's name and no hashes."""
    want = _norm(package)
    for name in list_dir(root.path(site)):
        if not name.endswith(".dist-info"):
            continue
        stem = name[: -len(".dist-info")]
        dname, _, ver = stem.rpartition("-")
        if _norm(dname) != want:
            continue
        di = f"{site.rstrip('/')}/{name}"
        version = ver
        record: dict[str, str] = {}
        try:
            with site_folder(root, site) as sfd:
                meta = read_in_site(sfd, f"{name}/METADATA", f"{di}/METADATA").decode(errors="replace")
                rows = read_in_site(sfd, f"{name}/RECORD", f"{di}/RECORD").decode(errors="replace")
        except (OSError, RevError):
            meta = rows = ""
        m = re.search(r"^Version:\s*(\S+)", meta, re.M)
        if m:
            version = m.group(1)
        try:
            for row in csv.reader(io.StringIO(rows)):
                if len(row) >= 2 and row[1].startswith("sha256="):
                    b64 = row[1][len("sha256="):]
                    record[row[0]] = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex()
        except (ValueError, csv.Error):
            pass
        return Dist(site, di, dname, version, record)
    return None


# ----------------------------------------------------------------------------------------
# reading a file of someone else's site-packages

MAX_SITE_FILE = 16 << 20   # a module, METADATA or RECORD (vLLM's rocm.py: ~20 KB; torch's RECORD: ~2 MB)


@contextlib.contextmanager
def site_folder(root: Root, site: str) -> Iterator[int]:
    """A descriptor on the site-packages folder (its own path resolved as the machine would);
    everything below it is read relative to it, never through a link (``read_in_site``)."""
    try:
        real = root.resolve(site)
    except ValueError as exc:
        raise RevError("PERMISSION", f"{site}: {exc}") from None
    fd = os.open(real, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        yield fd
    finally:
        os.close(fd)


def read_in_site(site_fd: int, rel: str, shown: str) -> bytes:
    """The file ``rel`` below a site-packages folder another user may own, read as root reads
    hostile input: no component followed when it is a link (fs.open_regular with a folder
    descriptor), never a FIFO or device, at most ``MAX_SITE_FILE`` bytes, and not a hard link
    to a file of another owner than the folder's (a venv holds its owner's files; a second
    name for root's /etc/shadow is not one). FileNotFoundError when absent; RevError
    ("PERMISSION", one line naming ``shown``) for anything refused.

        data = read_in_site(fd, "vllm/platforms/rocm.py", "/home/al/venv/.../vllm/platforms/rocm.py")
    """
    try:
        fd = open_regular(rel, max_size=MAX_SITE_FILE, dir_fd=site_fd, what=shown)
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise read_error(shown, exc) from None
    except RevError as exc:
        raise RevError("PERMISSION", exc.message) from None
    try:
        st = check_regular(fd, shown, max_size=MAX_SITE_FILE)
        owner = os.fstat(site_fd).st_uid
        if st.st_nlink > 1 and st.st_uid != owner:
            raise RevError("PERMISSION", f"{shown} is a hard link to a file uid {st.st_uid} owns, in a folder of "
                                         f"uid {owner}; rocmrevive never reads it: replace it with a copy")
        return read_fd(fd, max_size=MAX_SITE_FILE, what=shown)
    except RevError as exc:
        raise RevError("PERMISSION", exc.message) from None
    except OSError as exc:
        raise read_error(shown, exc) from None
    finally:
        os.close(fd)


# ----------------------------------------------------------------------------------------
# status, apply, rollback

@dataclass
class PatchStatus:
    patch: str
    site: str
    state: PatchState
    reason: str
    file: str | None = None           # machine path
    version: str | None = None
    sha256: str | None = None
    record_sha256: str | None = None
    txid: str | None = None           # the rocmrevive transaction that applied it
    warnings: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"patch": self.patch, "site": self.site, "state": self.state, "reason": self.reason,
                "file": self.file, "version": self.version, "sha256": self.sha256,
                "record_sha256": self.record_sha256, "txid": self.txid, "warnings": self.warnings}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def patch_status(root: Root, spec: PatchSpec, site: str, *, state_dir: str | None = None) -> PatchStatus:
    dist = find_dist(root, site, spec.package)
    if dist is None:
        return PatchStatus(spec.id, site, PatchState.NOT_INSTALLED, f"{spec.package} is not installed in {site}")
    path = f"{site.rstrip('/')}/{spec.file}"
    # refused (MODIFIED) until the file is read and matched below
    st = PatchStatus(spec.id, site, PatchState.MODIFIED, "", path, dist.version, record_sha256=dist.record.get(spec.file))
    try:
        data = read_target(root, site, spec.file)
    except RevError as exc:
        st.state, st.reason = PatchState.REFUSED, exc.message
        return st
    except OSError as exc:
        st.state, st.reason = PatchState.FILE_MISSING, f"{path}: {exc.strerror or exc}"
        return st
    st.sha256 = _sha(data)
    st.txid = _applied_by(root, spec, site, state_dir)
    if dist.version not in spec.versions:
        st.state = PatchState.UNKNOWN_VERSION
        st.reason = (f"{spec.package} {dist.version} is not a version this patch knows "
                     f"({', '.join(spec.versions)}); refusing to patch it")
        return st
    rec = st.record_sha256
    if rec is None:
        st.warnings.append(f"{dist.dist_info}/RECORD has no sha256 for {spec.file} (an editable or source "
                           f"install): the file is matched by the diff's own lines only")
    fwd_ok = rev = None
    try:
        fwd_ok = apply_hunks(data, list(spec.hunks))
    except PatchMismatch as exc:
        fwd_err = str(exc)
    try:
        rev = apply_hunks(data, list(spec.hunks), reverse=True)
    except PatchMismatch:
        pass
    if rec is not None:
        if st.sha256 == rec and fwd_ok is not None:
            st.state, st.reason = PatchState.APPLICABLE, f"{path} is {spec.package} {dist.version}'s file (RECORD sha256)"
        elif rev is not None and _sha(rev) == rec:
            st.state, st.reason = PatchState.APPLIED, f"{path} is {spec.package} {dist.version}'s file with this patch"
        else:
            st.state = PatchState.MODIFIED
            st.reason = (f"{path} (sha256 {st.sha256[:12]}…) is neither {spec.package} {dist.version}'s file "
                         f"(RECORD sha256 {rec[:12]}…) nor that file patched; refusing to touch it")
        return st
    if fwd_ok is not None and rev is None:
        st.state, st.reason = PatchState.APPLICABLE, f"the diff's lines match {path} exactly once"
    elif rev is not None and fwd_ok is None:
        st.state, st.reason = PatchState.APPLIED, f"{path} holds the patched lines"
    else:
        st.state = PatchState.MODIFIED
        st.reason = f"{path} does not match the diff: {fwd_err if fwd_ok is None else 'ambiguous'}; refusing"
    return st


def read_target(root: Root, site: str, rel: str) -> bytes:
    """The bytes of the patch target ``rel`` in ``site`` (``read_in_site``)."""
    with site_folder(root, site) as sfd:
        return read_in_site(sfd, rel, f"{site.rstrip('/')}/{rel}")


def _applied_by(root: Root, spec: PatchSpec, site: str, state_dir: str | None) -> str | None:
    """The last committed rocmrevive transaction that applied ``spec`` in ``site``."""
    try:
        txs = list_transactions(root, state_dir=state_dir or DEFAULT_STATE_DIR, verify=False)
    except RevError:
        return None
    hits = [t for t in txs if t.state == TxState.COMMITTED and t.meta.get("kind") == "patch"
            and t.meta.get("patch") == spec.id and t.meta.get("site") == site]
    return hits[-1].txid if hits else None


def apply_patch(root: Root, spec: PatchSpec, site: str, *, state_dir: str | None = None, dry_run: bool = False):
    """Apply ``spec`` to the package in ``site`` as one transaction. Returns (status after,
    TxResult or None when it was already applied). Raises RevError: NOTHING_SUPPORTED (not
    installed, a version the patch does not know), VERIFY_FAILED (the file does not match, or
    does not read as patched afterwards: the transaction is then rolled back)."""
    refuse_untrusted_site(root, spec, site)
    st = patch_status(root, spec, site, state_dir=state_dir)
    if st.state is PatchState.APPLIED:
        return st, None
    if st.state in (PatchState.NOT_INSTALLED, PatchState.UNKNOWN_VERSION, PatchState.FILE_MISSING):
        raise RevError("NOTHING_SUPPORTED", st.reason)
    if st.state is PatchState.REFUSED:
        raise RevError("PERMISSION", st.reason)
    if st.state is not PatchState.APPLICABLE:
        raise RevError("VERIFY_FAILED", st.reason)
    component = PatchedFile(root, spec, site, st, state_dir)
    with staging_area() as area:
        applied = install_component(root, component, area, state_dir=state_dir or DEFAULT_STATE_DIR, check=dry_run)
    return patch_status(root, spec, site, state_dir=state_dir), applied.result


def patch_tree(spec: PatchSpec, site: str) -> str:
    """The folder a patch writes in (machine path): the package's own folder in ``site``."""
    return f"{site.rstrip('/')}/{spec.file.split('/')[0]}" if "/" in spec.file else site


def refuse_untrusted_site(root: Root, spec: PatchSpec, site: str) -> None:
    """The trust decision for the folder the patched file is written in (``trees.trust``: it and
    every folder above it), made before anything is read or written: a folder this run may not
    write is refused with one line (as root, a user's venv: the command to run as that user)."""
    tree = os.path.dirname(f"{site.rstrip('/')}/{spec.file}")
    args = ([] if root.is_host else ["--root", str(root.base)]) + ["patch", "apply", spec.id, "--python", site]
    err = refusal(decide(root.resolve(tree)), tree, args)
    if err is not None:
        raise err


class PatchedFile(Hooks):
    """The package's file with the patch's hunks applied; after the install it must read as
    ``applied``."""

    def __init__(self, root: Root, spec: PatchSpec, site: str, st: PatchStatus, state_dir: str | None):
        if st.file is None:  # an applicable patch always names the installed file
            raise RevError("VERIFY_FAILED", f"{spec.id}: the patched file is not known")
        self.root, self.spec, self.site, self.st, self.state_dir = root, spec, site, st, state_dir
        self.file: str = st.file
        self.label: str = st.file

    def stage(self, area: Path) -> StagedFiles:
        spec, st, site = self.spec, self.st, self.site
        staged = area / os.path.basename(spec.file)
        data = read_target(self.root, site, spec.file)
        if _sha(data) != st.sha256:   # it changed since it was matched: patch nothing rather than other bytes
            raise RevError("VERIFY_FAILED", f"{self.file} changed while rocmrevive read it; run the command again")
        staged.write_bytes(apply_hunks(data, list(spec.hunks)))
        return StagedFiles(patch_tree(spec, site), {self.file: staged}, source=f"patch:{spec.id}",
                           meta={"kind": "patch", "patch": spec.id, "package": spec.package,
                                 "version": st.version, "site": site, "file": st.file})

    def verify(self, result) -> Verdict:
        after = patch_status(self.root, self.spec, self.site, state_dir=self.state_dir)
        return Verdict(after.state is PatchState.APPLIED, {"state": after.state},
                       why=f"it is not as the patch expects ({after.reason})")


def rollback_patch(root: Root, spec: PatchSpec, site: str, *, state_dir: str | None = None,
                   force: bool = False, dry_run: bool = False):
    """Undo the transaction that applied ``spec`` in ``site``, byte for byte. Returns (status
    after, TxResult)."""
    txid = _applied_by(root, spec, site, state_dir)
    if txid is None:
        st = patch_status(root, spec, site, state_dir=state_dir)
        raise RevError("USAGE", f"rocmrevive has not applied {spec.id} in {site} (its file is {st.state}); "
                                f"nothing to roll back")
    folder = os.path.dirname(f"{site.rstrip('/')}/{spec.file}")
    err = None if dry_run else undo_refusal(txid, folder, decide(root.resolve(folder)))
    if err is not None:
        raise err
    res = rollback(root, txid, force=force, state_dir=state_dir or DEFAULT_STATE_DIR, dry_run=dry_run)
    return patch_status(root, spec, site, state_dir=state_dir), res


def sites_with(root: Root, spec_or_package, pythons=(), *, common: bool = True) -> list[str]:
    """The site-packages folders (machine paths) where the package is installed."""
    package = spec_or_package.package if isinstance(spec_or_package, PatchSpec) else spec_or_package
    envs, _ = find_envs(root, pythons, common=common)
    return [e.site_packages for e in envs if find_dist(root, e.site_packages, package) is not None]
