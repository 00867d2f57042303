"""The opt-in apt hook: ``/etc/apt/apt.conf.d/99rocmrevive`` makes apt run ``rocmrevive hook run``
after every dpkg run (``DPkg::Post-Invoke``), so that an upgrade that replaced a rocBLAS tree, and
with it the gfx906 files rocmrevive installed, is noticed at once: a warning, or (mode
``reapply``) ``rocmrevive install --yes`` once apt has let go of its locks.

The hook file is written and removed like any other change rocmrevive makes: through a journaled
transaction (``rocmrevive.txn``), in a journal of its own (``/var/lib/rocmrevive/hook``) so that
``rocmrevive rollback`` of a rocBLAS install never undoes the hook, and removing it checks first
that nobody edited it.

    cfg = HookConfig(mode="warn", bin=["/usr/local/bin/rocmrevive"])
    install_hook(root, cfg)          # TxResult; unchanged when the same hook is already there
    hook_status(root)                # {"installed": True, "config": {...}, "intact": True, ...}
    findings(root)                   # what the dpkg run broke: [Finding(tree, kind, files, txid)]
    after_dpkg(root, mode="warn", state_dir=None, wait_s=900, log_machine=HOOK_LOG)  # HookRun
    remove_hook(root)                # every hook transaction rolled back, newest first
"""
from __future__ import annotations

import datetime
import json
import os
import posixpath
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import rocmrevive
from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, check_under, executable_problem, open_regular
from rocmrevive.install.core import Hooks, StagedFiles, install_component, staging_area
from rocmrevive.strenum import StrEnum
from rocmrevive.txn.history import Integrity, list_transactions
from rocmrevive.txn.journal import PENDING, TxState
from rocmrevive.txn.lock import check_package_managers
from rocmrevive.txn.state import DEFAULT_STATE_DIR
from rocmrevive.txn.undo import rollback

HOOK_FILE = "/etc/apt/apt.conf.d/99rocmrevive"
HOOK_DIR = "/etc/apt/apt.conf.d"
HOOK_STATE_DIR = "/var/lib/rocmrevive/hook"
HOOK_LOG = "/var/log/rocmrevive/hook.log"
MODES = ("warn", "reapply")
MARK = "// rocmrevive-hook "
FORMAT_VERSION = 1
# `hook install` options passed on to `install` when re-applying
INSTALL_PASSTHROUGH = ("--from", "--mirror", "--cache", "--manifests", "--tree")


@dataclass
class HookConfig:
    """What the hook runs. ``bin``: the argv that starts rocmrevive (an executable, or a Python
    with ``-m rocmrevive.cli.main``); ``install_args``: options passed on to ``install`` when
    re-applying (``--from``, ``--cache``, ...); ``state_dir``: the journal the hook checks."""

    mode: str = "warn"
    bin: list[str] = field(default_factory=list)
    install_args: list[str] = field(default_factory=list)
    state_dir: str | None = None

    def __post_init__(self):
        if self.mode not in MODES:
            raise RevError("USAGE", f"hook mode must be one of {', '.join(MODES)}, not {self.mode!r}")
        if not self.bin or not os.path.isabs(self.bin[0]):
            raise RevError("USAGE", "the hook needs the absolute path of the rocmrevive executable (--bin PATH)")
        for word in [*self.bin, *self.install_args, self.state_dir or ""]:
            # apt.conf strings have no escapes: a double quote or a line break would end them
            if '"' in word or "\n" in word or "\\" in word:
                raise RevError("USAGE", f"{word!r} cannot go into an apt configuration string "
                                        "(no double quotes, backslashes or line breaks)")

    def run_args(self) -> list[str]:
        """``hook run`` and its options, as apt will call it."""
        args = ["hook", "run", "--mode", self.mode]
        if self.state_dir:
            args += ["--state-dir", self.state_dir]
        if self.install_args:
            args += ["--", *self.install_args]
        return args

    def shell_command(self) -> str:
        """One line for /bin/sh: does nothing when rocmrevive was uninstalled, never fails apt."""
        exe = shlex.quote(self.bin[0])
        argv = " ".join(shlex.quote(a) for a in [*self.bin, *self.run_args()])
        return f"if [ -x {exe} ]; then {argv} || true; fi"

    def to_json(self) -> dict:
        return asdict(self)


def hook_config(*, reapply: bool, bin_path: str | None, argv0: str, state_dir: str | None, from_path: str | None,
                mirror: str | None, cache: str | None, manifests_dir: str | None, trees=()) -> HookConfig:
    """The configuration ``hook install`` writes from its options: the install options are kept
    for --reapply only (paths made absolute); the executable is ``bin_path`` or the running one
    (``running_bin(argv0)``: ``argv0`` is what the CLI was started as)."""
    extra = []
    for flag, value in zip(INSTALL_PASSTHROUGH, (from_path, mirror, cache, manifests_dir)):
        if value:
            extra += [flag, os.path.abspath(value) if flag in ("--from", "--cache", "--manifests") else value]
    for t in trees:
        extra += ["--tree", t]
    if extra and not reapply:
        raise RevError("USAGE", "--from, --mirror, --cache, --manifests and --tree are for --reapply")
    binv = [os.path.abspath(bin_path)] if bin_path else running_bin(argv0)
    return HookConfig(mode="reapply" if reapply else "warn", bin=binv, install_args=extra, state_dir=state_dir)


def running_bin(argv0: str, executable: str | None = None) -> list[str]:
    """The rocmrevive that is running now, not the first one on PATH (that may be a shim of
    another install): the `rocmrevive` script this process was started as (``argv0``, given by
    the CLI; its real path, so a link in ~/.local/bin that is later pointed elsewhere does not
    change what apt runs), else this interpreter with the package (`python -m rocmrevive.cli.main`)."""
    executable = executable or sys.executable
    if os.path.basename(argv0) == "rocmrevive":
        script = shutil.which(argv0) if os.sep not in argv0 else argv0
        if script and os.path.isfile(script):
            return [os.path.realpath(script)]
    return [os.path.abspath(executable), "-m", "rocmrevive.cli.main"]


def render(cfg: HookConfig) -> str:
    """The hook file's text (apt.conf syntax, apt.conf(5))."""
    meta = json.dumps({"version": FORMAT_VERSION, **cfg.to_json()}, sort_keys=True)
    what = ("prints a warning" if cfg.mode == "warn"
            else "re-installs them (`rocmrevive install --yes`) once apt has finished")
    return (
        "// rocmrevive apt hook, written by `rocmrevive hook install`. Remove it with\n"
        "// `rocmrevive hook remove`, which checks first that it is unchanged (a journal in\n"
        f"// {HOOK_STATE_DIR}). After every dpkg run it checks that the gfx906 rocBLAS files\n"
        f"// rocmrevive installed are still there; when they are not, it {what}.\n"
        f"{MARK}{meta}\n"
        f'DPkg::Post-Invoke {{ "{cfg.shell_command()}"; }};\n'
    )


def parse(text: str) -> HookConfig | None:
    """The configuration a hook file was written with (None: not a rocmrevive hook file)."""
    for line in text.splitlines():
        if line.startswith(MARK):
            try:
                d = json.loads(line[len(MARK):])
                return HookConfig(mode=d["mode"], bin=list(d["bin"]), install_args=list(d.get("install_args") or []),
                                  state_dir=d.get("state_dir"))
            except (ValueError, KeyError, TypeError, RevError):
                return None
    return None


SECURE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"   # sudo's secure_path
_MAX_CHAIN = 4   # a script run by an interpreter that is itself a script, ...


def check_hook_bin(root, exe: str, *, package: str | None = None) -> None:
    """apt runs the hook's executable as root after every dpkg run: refuse one that another user
    could replace (owned by someone else, or in a folder others can write), and the same for
    every interpreter its ``#!`` line names, down the whole chain (a root-owned script whose
    ``#!`` names a user's python would have apt run the user's interpreter as root); ``env
    NAME`` is resolved on sudo's secure path. ``package``: the folder of the rocmrevive package
    an interpreter run with ``-m`` imports, checked the same way. RevError("PERMISSION")."""
    problem = _chain_problem(root, exe)
    if problem is None and package is not None:
        problem = executable_problem(package) if not os.path.isdir(package) else _folder_problem(package)
    if problem:
        raise RevError("PERMISSION", f"refusing to make apt run {exe} as root: {problem}; install rocmrevive "
                                     f"root-owned (e.g. pip install as root into /usr/local) and pass --bin with "
                                     f"its path")


def _real(root, exe: str) -> str:
    return str(root.path(exe)) if not root.is_host and os.path.lexists(root.path(exe)) else exe


def _chain_problem(root, exe: str, depth: int = 0) -> str | None:
    """Why ``exe`` or an interpreter its ``#!`` chain names may not be run as root, or None."""
    problem = executable_problem(_real(root, exe))
    if problem or depth >= _MAX_CHAIN:
        return problem if problem or depth < _MAX_CHAIN else f"{exe}: a #! chain deeper than {_MAX_CHAIN}"
    try:
        fd = open_regular(os.path.realpath(_real(root, exe)))
    except (OSError, RevError) as exc:
        return f"cannot read {exe}: {getattr(exc, 'message', None) or exc}"
    try:
        head = os.read(fd, 256)
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").split()
    if not words:
        return f"{exe} has an empty #! line"
    interp = words[0]
    if os.path.basename(interp) == "env":
        problem = _chain_problem(root, interp, depth + 1)
        if problem:
            return f"the #! interpreter {interp} of {exe} may not run as root ({problem})"
        names = [w for w in words[1:] if not w.startswith("-")]
        if not names:
            return f"{exe}: #!{interp} names no program"
        found = shutil.which(names[0], path=SECURE_PATH if root.is_host else
                             os.pathsep.join(str(root.path(d)) for d in SECURE_PATH.split(":")))
        if not found:
            return f"{exe}: #!{interp} {names[0]}: no {names[0]} on the secure path {SECURE_PATH}"
        interp = root.machine_path(found) if not root.is_host else found
    problem = _chain_problem(root, interp, depth + 1)
    return f"the #! interpreter {interp} of {exe} may not run as root ({problem})" if problem else None


def _folder_problem(folder: str) -> str | None:
    """A folder root would import from: root's, and writable by no one else, up to ``/``."""
    try:
        with Dir.open(folder, what="package folder", allow_shared=False):
            return None
    except RevError as exc:
        return exc.message.split(", so another user")[0]


def install_hook(root, cfg: HookConfig, *, dry_run: bool = False):
    """Write the hook file through a transaction (a create, or a replace of another hook file,
    whose bytes go to the backups); nothing is written when the same hook is there already."""
    if not root.path(HOOK_DIR).is_dir():
        raise RevError("NOTHING_SUPPORTED", f"no {HOOK_DIR} under {root.base}: the hook is for apt-based systems "
                                            "(Debian, Ubuntu)")
    # run as `python -m rocmrevive.cli.main`: the package that interpreter imports is checked too
    package = os.path.dirname(os.path.abspath(rocmrevive.__file__)) if "-m" in cfg.bin[1:2] else None
    check_hook_bin(root, cfg.bin[0], package=package)
    with staging_area() as area:
        return install_component(root, AptHook(cfg), area, state_dir=HOOK_STATE_DIR, check=dry_run).result


class AptHook(Hooks):
    """The apt hook file, rendered from its configuration."""

    label = HOOK_FILE

    def __init__(self, cfg: HookConfig):
        self.cfg = cfg

    def stage(self, area: Path) -> StagedFiles:
        staged = area / Path(HOOK_FILE).name
        staged.write_text(render(self.cfg))
        return StagedFiles(HOOK_DIR, {HOOK_FILE: staged}, source="rocmrevive hook install",
                           meta={"kind": "apt-hook", "mode": self.cfg.mode})


def remove_hook(root, *, force: bool = False, dry_run: bool = False) -> list:
    """Roll back every committed hook transaction, newest first: the hook file goes (or the file
    that was there before comes back). A hook file edited since is refused (DRIFT) unless
    ``force``. Returns the TxResults; [] when no hook was installed. A dry run checks the newest
    transaction only (the older ones can be checked only once it is undone)."""
    txs = [t for t in list_transactions(root, state_dir=HOOK_STATE_DIR, verify=False) if t.state == TxState.COMMITTED]
    if dry_run:
        # each older transaction is only checkable once the newer ones are undone: check the newest
        return [rollback(root, txs[-1].txid, force=force, state_dir=HOOK_STATE_DIR, dry_run=True)] if txs else []
    return [rollback(root, t.txid, force=force, state_dir=HOOK_STATE_DIR) for t in reversed(txs)]


def hook_status(root) -> dict:
    """Whether the hook is installed, with what configuration, and whether the file is still the
    one rocmrevive wrote."""
    real = root.path(HOOK_FILE)
    text = real.read_text(errors="replace") if real.is_file() else None
    cfg = parse(text) if text is not None else None
    txs = list_transactions(root, state_dir=HOOK_STATE_DIR)
    live = [t for t in txs if t.state == TxState.COMMITTED and HOOK_FILE in t.managed]
    last = live[-1] if live else None
    intact = None if last is None else HOOK_FILE in last.intact
    return {"path": HOOK_FILE, "installed": cfg is not None, "exists": text is not None,
            "config": cfg.to_json() if cfg else None, "managed": last is not None,
            "intact": intact, "transactions": [t.txid for t in txs],
            "pending": [t.txid for t in txs if t.state in PENDING],
            "state_dir": HOOK_STATE_DIR}


class FindingKind(StrEnum):
    """What the package manager did to a tree rocmrevive installed into."""

    LOST = "lost"        # files gone, the tree still there
    GONE = "gone"        # the whole tree
    CHANGED = "changed"  # files there, other bytes


@dataclass
class Finding:
    """One thing the package manager did to what rocmrevive installed."""

    tree: str
    kind: FindingKind
    files: list[str]
    txid: str

    def message(self) -> str:
        n = len(self.files)
        if self.kind is FindingKind.GONE:
            return (f"{self.tree} is gone (an upgrade to another ROCm?): run `rocmrevive install` for the new "
                    f"tree, and `rocmrevive rollback {self.txid}` to forget the old one")
        if self.kind is FindingKind.LOST:
            return (f"{self.tree} lost {n} gfx906 file{'s' * (n != 1)} rocmrevive installed (transaction "
                    f"{self.txid}): run `rocmrevive install`")
        return (f"{n} file{'s' * (n != 1)} rocmrevive installed in {self.tree} (transaction {self.txid}) "
                "were changed by something else: run `rocmrevive verify`")

    def to_json(self) -> dict:
        return {**asdict(self), "message": self.message()}


def findings(root, state_dir: str | None = None) -> list[Finding]:
    """What is wrong with the files of every committed rocBLAS transaction now."""
    out = []
    for t in list_transactions(root, state_dir=state_dir or DEFAULT_STATE_DIR):
        if t.state != TxState.COMMITTED or t.integrity in (None, Integrity.INTACT):
            continue
        if t.missing:
            kind = FindingKind.LOST if t.tree_exists else FindingKind.GONE
            out.append(Finding(t.tree or "", kind, list(t.missing), t.txid))
        if t.drifted:
            out.append(Finding(t.tree or "", FindingKind.CHANGED, list(t.drifted), t.txid))
    return out


class HookAction(StrEnum):
    """What ``hook run`` did after a dpkg run (``HookRun.action``) and what its background half
    did (``reapply_now``'s ``action``)."""

    NONE = "none"
    WARNED = "warned"
    REAPPLY_STARTED = "reapply-started"  # ``pid`` re-installs in the background, logging to ``log``
    ERROR = "error"                      # the check itself failed: ``problem`` (the hook never fails apt)
    GAVE_UP = "gave-up"                  # apt/dpkg still held their locks
    REAPPLIED = "reapplied"


@dataclass
class HookRun:
    """What ``hook run`` found after a dpkg run and did about it (a ``HookAction``)."""

    mode: str
    findings: list[Finding]
    action: HookAction
    pid: int | None = None
    log: str | None = None
    problem: str | None = None

    @classmethod
    def failed(cls, mode: str, exc: Exception) -> "HookRun":
        return cls(mode, [], HookAction.ERROR, problem=getattr(exc, "message", None) or f"{type(exc).__name__}: {exc}")

    def to_json(self) -> dict:
        head = {"mode": self.mode, "findings": [f.to_json() for f in self.findings], "action": self.action}
        if self.action is HookAction.ERROR:
            return {**head, "problem": self.problem}
        return {**head, "pid": self.pid, "log": self.log}


def after_dpkg(root, *, mode: str, state_dir: str | None, wait_s: float, log_machine: str,
               install_args=()) -> HookRun:
    """What apt runs after dpkg: check every committed install's files; in mode reapply, when a
    tree lost its files, start the re-install in the background (``start_reapply``)."""
    try:
        found = findings(root, state_dir)
    except Exception as exc:  # noqa: BLE001 - the hook must never break apt; say what went wrong instead
        return HookRun.failed(mode, exc)
    if mode == "reapply" and any(f.kind in (FindingKind.LOST, FindingKind.GONE) for f in found):
        try:
            pid = start_reapply(root, found, state_dir=state_dir, wait_s=wait_s, log_machine=log_machine,
                                install_args=install_args)
        except Exception as exc:  # noqa: BLE001 - a refused log (a link, a folder another user owns), ...: apt goes on
            return HookRun(mode, found, HookAction.ERROR, problem=HookRun.failed(mode, exc).problem)
        return HookRun(mode, found, HookAction.REAPPLY_STARTED, pid, log_machine)
    return HookRun(mode, found, HookAction.WARNED if found else HookAction.NONE)


def wait_for_package_managers(root, timeout: float, poll: float = 1.0) -> bool:
    """Wait until apt/dpkg/rpm hold no lock (a Post-Invoke hook runs while apt still holds
    /var/lib/dpkg/lock-frontend). True when free, False when ``timeout`` passed."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            check_package_managers(root)
            return True
        except RevError as exc:
            if exc.code != "LOCKED" or time.monotonic() >= deadline:
                return False
        time.sleep(poll)


# --------------------------------------------------------------------------------------------
# re-applying after a dpkg run (mode reapply): this process starts a second one that waits

def self_argv(root) -> list[str]:
    """How to start rocmrevive again: the executable the installed hook names (what apt runs),
    else this same interpreter and package."""
    real = root.path(HOOK_FILE)
    cfg = parse(real.read_text(errors="replace")) if real.is_file() else None
    argv = list(cfg.bin) if cfg else [sys.executable, "-m", "rocmrevive.cli.main"]
    if not root.is_host:
        argv += ["--root", str(root.base)]
    return argv


def _stamp() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _open_log(root, log_machine: str):
    """The hook's log, opened to append as root: its folder through ``fs.Dir`` (created when
    missing, never reached through a link another user planted), the file itself ``O_NOFOLLOW``
    and a regular file (docs/security.md)."""
    log_real = root.path(log_machine)
    if not root.is_host:   # walked from the image's root before a link in it is followed (fs.check_under)
        folder = posixpath.dirname("/" + log_machine.strip("/"))
        check_under(root.base, folder, what="hook log folder")
        try:
            log_real = root.resolve(folder) / log_real.name
        except ValueError as exc:
            raise RevError("PERMISSION", f"{exc}; the hook's log stays under --root {root.base}") from None
    with Dir.open(log_real.parent, create=True, what="hook log folder") as d:
        return os.fdopen(d.open_rw(log_real.name, append=True), "a")


def start_reapply(root, found: list[Finding], *, state_dir: str | None, wait_s: float, log_machine: str,
                  install_args=()) -> int:
    """Start ``rocmrevive hook run --now`` detached (apt holds its locks while its hooks run, so
    the install must wait in another process); returns its process id. Logs what dpkg left."""
    argv = self_argv(root) + ["hook", "run", "--mode", "reapply", "--now", "--wait", str(wait_s)]
    argv += (["--state-dir", state_dir] if state_dir else []) + ["--log", log_machine]
    argv += ["--", *install_args] if install_args else []
    with _open_log(root, log_machine) as logf:
        logf.write(f"{_stamp()} dpkg run left: {'; '.join(f.message() for f in found)}\n")
        logf.flush()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=logf, stderr=logf,
                                start_new_session=True, close_fds=True)
    return proc.pid


def reapply_now(root, *, state_dir: str | None, install_args, wait_s: float, log_machine: str) -> dict:
    """The background half: wait for apt, look again, run ``rocmrevive install --yes``, log.
    Returns {"action": HookAction.GAVE_UP | NONE | REAPPLIED, "exit", "install"}."""
    def log(line: str) -> None:
        with _open_log(root, log_machine) as f:
            f.write(f"{_stamp()} {line}\n")

    if not wait_for_package_managers(root, wait_s):
        log(f"gave up: apt/dpkg still held their locks after {wait_s:g} s; run `rocmrevive install` by hand")
        return {"action": HookAction.GAVE_UP}
    if not [f for f in findings(root, state_dir) if f.kind in (FindingKind.LOST, FindingKind.GONE)]:
        log("nothing to re-install any more")
        return {"action": HookAction.NONE}
    argv = self_argv(root) + ["--json", "--no-progress", "install", "--yes", *install_args]
    log("running: " + " ".join(argv))
    r = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True)
    try:
        doc = json.loads(r.stdout)
    except ValueError:
        doc = {"error": {"message": (r.stderr or r.stdout).strip()[-500:]}}
    err = (doc.get("error") or {}).get("message")
    copies = ", ".join(f"{c['library']}: {c['status']}" for c in doc.get("copies") or [])
    log(f"install exited {r.returncode}" + (f": {copies}" if copies else "") + (f"; {err}" if err else ""))
    return {"action": HookAction.REAPPLIED, "exit": r.returncode, "install": doc}
