"""Readers of what another user can write (issue 26, findings 6-8): root's rocmrevive opens a
config file, a venv's patch target, a ``.kpack`` or a Tensile ``.dat`` without following a link,
never blocks on a FIFO, refuses devices, caps sizes, and turns every malformed byte into a
problem line or one error line with a documented exit code. Driven from the outside (the CLI as
root, the hostile files planted by the real unprivileged account of tests/security_support.py).

    rc, doc, err = run_cli(["--root", str(m), "status"], timeout=60); one_line_error(rc, doc, err, "USAGE")
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import stat
import struct
from pathlib import Path

import msgpack
import pytest
from machines.build import build

from rocmrevive.config import load
from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from tests.security_support import Arena, attacker, one_line_error, run_cli

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="root reading what a user planted")

# a hang on the old code shows as TimeoutExpired: every CLI run here is given this long
HANG = 60


@contextlib.contextmanager
def no_hang(seconds: int = HANG):
    """Fail (TimeoutError) instead of waiting for ever on a FIFO the old code opened blocking."""
    def alarm(*_):
        raise TimeoutError(f"still blocked after {seconds} s")
    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture()
def machine(tmp_path) -> Path:
    (tmp_path / "etc/rocmrevive").mkdir(parents=True)
    return tmp_path


def _config(m: Path, data: bytes) -> Path:
    p = m / "etc/rocmrevive/config.toml"
    p.write_bytes(data)
    os.chmod(p, 0o644)
    return p


def _status(m: Path) -> str:
    rc, doc, err = run_cli(["--root", str(m), "status"], timeout=HANG)
    msg = one_line_error(rc, doc, err, "USAGE")
    assert rc == 2 and "/etc/rocmrevive/config.toml" in msg, msg
    return msg


# --- config.toml (finding 8) -------------------------------------------------------------

def test_a_fifo_at_the_config_path_is_refused_not_waited_on(machine):
    os.mkfifo(machine / "etc/rocmrevive/config.toml", 0o644)
    assert "is a FIFO, not a regular file" in _status(machine)


def test_a_device_behind_the_config_path_is_refused(machine):
    (machine / "dev").mkdir()
    os.mknod(machine / "dev/zero", 0o666 | stat.S_IFCHR, os.makedev(1, 5))   # the real /dev/zero
    os.symlink("/dev/zero", machine / "etc/rocmrevive/config.toml")          # resolved under --root
    assert "is a device, not a regular file" in _status(machine)


def test_a_config_larger_than_a_few_settings_is_refused_unread(machine):
    p = _config(machine, b"")
    os.truncate(p, 200 << 20)                     # 200 MB (sparse): refused from its size alone
    assert "more than the 65,536 allowed" in _status(machine)
    _config(machine, b"# padding\n" * 6600)
    assert "more than" in _status(machine)


def test_deep_nesting_is_one_line_not_a_recursion_traceback(machine):
    _config(machine, b"mirror = " + b"[" * 20000 + b"]" * 20000 + b"\n")
    assert "nested too deeply" in _status(machine)
    _config(machine, b"mirror = " + b"{a=" * 10000 + b"1" + b"}" * 10000 + b"\n")
    assert "nested too deeply" in _status(machine)


@pytest.mark.parametrize("text, words", [
    (b'cache = "/srv/a\\u0000b"\n', "control character"),
    (b'mirror = "http://x/\\u0000"\n', "control character"),
    (b'state_dir = "/var/lib/x\\ny"\n', "control character"),
    (b'cache = "/' + b"a" * 300 + b'"\n', "path component of 300 characters"),
    (b'manifests = "' + b"/abc" * 1100 + b'"\n', "more than a path or URL may be"),
    (b'mirror = "http://' + b"x" * 5000 + b'"\n', "more than a path or URL may be"),
])
def test_nul_and_overlong_values_are_usage_errors(machine, text, words):
    _config(machine, text)
    assert words in _status(machine)


def test_the_config_readers_refusals_in_process(machine):
    p = machine / "etc/rocmrevive/config.toml"
    os.mkfifo(p, 0o644)
    with pytest.raises(RevError) as ei, no_hang():
        load(Root(machine))
    assert ei.value.code == "USAGE" and "FIFO" in ei.value.message
    p.unlink()
    p.mkdir()
    with pytest.raises(RevError) as ei:
        load(Root(machine))
    assert ei.value.code == "USAGE" and "folder" in ei.value.message


# --- patch targets in a user's venv (finding 6) -------------------------------------------

PID = "vllm-rccl-ld-library-path"
SITE = "home/alice/venvs/vllm/lib/python3.11/site-packages"
SECRET = b"root:$y$j9T$only-root-may-read-this:19000:0:99999:7:::\n"


@pytest.fixture()
def arena():
    a = Arena.make(attacker())
    yield a
    a.cleanup()


@pytest.fixture()
def vllm_venv(arena) -> tuple[Arena, Path, Path]:
    """A machine whose vLLM 0.4.2 venv belongs to the attacker, and a root-only file beside it
    (/etc/shadow's stand-in): (arena, machine, site-packages)."""
    m = arena.base / "m"
    site = m / SITE
    (site / "vllm-0.4.2.dist-info").mkdir(parents=True)
    (site / "vllm").mkdir()
    (m / "home/alice/venvs/vllm/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.11.7\n")
    (site / "vllm-0.4.2.dist-info/METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.4.2\n")
    (site / "vllm-0.4.2.dist-info/RECORD").write_text("vllm/utils.py,sha256=AAAA,10\n")
    (site / "vllm/utils.py").write_text("import os\n")
    for d, _, files in os.walk(m / "home/alice"):
        for x in [d, *(os.path.join(d, f) for f in files)]:
            os.chown(x, arena.uid, arena.gid)
    secret = arena.base / "shadow"
    secret.write_bytes(SECRET)
    os.chmod(secret, 0o600)
    (arena.base / "rootpkg").mkdir()
    (arena.base / "rootpkg/utils.py").write_bytes(SECRET)
    os.chmod(arena.base / "rootpkg/utils.py", 0o600)
    return arena, m, site


def _plant(arena: Arena, at: Path, how: str, target: Path | None = None) -> None:
    """The attacker replaces ``at`` with a FIFO or a link."""
    def act():
        if at.is_dir() and not at.is_symlink():
            for f in at.iterdir():
                f.unlink()
            at.rmdir()
        elif at.exists() or at.is_symlink():
            at.unlink()
        if how == "fifo":
            os.mkfifo(at, 0o644)
        else:
            os.symlink(str(target), at)
    arena.as_attacker(act)


def _secret_sha() -> str:
    return hashlib.sha256(SECRET).hexdigest()


@pytest.mark.parametrize("what, how, target", [
    ("vllm/utils.py", "fifo", None),
    ("vllm/utils.py", "link", "/dev/zero"),
    ("vllm/utils.py", "link", "SHADOW"),
    ("vllm", "link", "ROOTPKG"),                              # a folder on the way, not the file
    ("vllm-0.4.2.dist-info/METADATA", "fifo", None),
    ("vllm-0.4.2.dist-info/RECORD", "link", "/dev/zero"),
])
def test_patch_reads_no_fifo_no_link_in_a_users_venv(vllm_venv, what, how, target):
    arena, m, site = vllm_venv
    real = {"SHADOW": arena.base / "shadow", "ROOTPKG": arena.base / "rootpkg"}.get(target, target)
    _plant(arena, site / what, how, Path(real) if real else None)
    rc, doc, err = run_cli(["--root", str(m), "patch", "list"], timeout=HANG)
    assert rc == 0 and doc is not None, err[-2000:]
    assert _secret_sha() not in json_text(doc) and "Traceback" not in err
    envs = [e for e in doc["environments"] if e["patch"] == PID]
    if what.startswith("vllm/") or what == "vllm":
        (env,) = envs
        assert env["state"] == "refused" and env["sha256"] is None, env
        assert ("FIFO" in env["reason"]) if how == "fifo" else ("symbolic link" in env["reason"]), env
        # apply: root does not write a venv the attacker owns at all (issue 26's per-tree trust),
        # so the planted file is never reached; the line names the owner and the command to run
        rc, doc, err = run_cli(["--root", str(m), "patch", "apply", PID], timeout=HANG)
        msg = one_line_error(rc, doc, err, "PERMISSION")
        if what == "vllm":          # the folder itself is a link: refused as a link before owners
            assert rc == 4 and f"/{SITE}/vllm/utils.py" in msg and "symbolic link" in msg, msg
        else:
            assert rc == 4 and "belongs to rrattacker" in msg and "sudo -u rrattacker" in msg, msg
        # verify only reads: it reaches the file and refuses to read it, naming it
        rc, doc, err = run_cli(["--root", str(m), "patch", "verify", PID], timeout=HANG)
        msg = one_line_error(rc, doc, err, "PERMISSION")
        assert rc == 4 and f"/{SITE}/vllm/utils.py" in msg, msg
    assert arena.victim_intact()
    assert (arena.base / "shadow").read_bytes() == SECRET


def test_a_hard_link_to_roots_file_is_not_read(vllm_venv):
    """Where fs.protected_hardlinks is off, a user may link root's file into the venv (made by
    root here: this kernel forbids the attacker to)."""
    arena, m, site = vllm_venv
    (site / "vllm/utils.py").unlink()
    os.link(arena.base / "shadow", site / "vllm/utils.py")
    rc, doc, err = run_cli(["--root", str(m), "patch", "list"], timeout=HANG)
    (env,) = [e for e in doc["environments"] if e["patch"] == PID]
    assert env["state"] == "refused" and "hard link" in env["reason"] and _secret_sha() not in json_text(doc)


def json_text(doc) -> str:
    return json.dumps(doc)


# --- a .kpack in a user's torch (finding 7) ----------------------------------------------

TORCH = "home/alice/venvs/torch/lib/python3.12/site-packages/torch"


def small_kpack(toc: bytes) -> bytes:
    """A header, padding to 64, then the TOC (what rocm-kpack writes, with a hostile TOC)."""
    return struct.pack("<4sIQ", b"KPAK", 1, 64) + bytes(48) + toc


@pytest.fixture()
def torch_machine(arena) -> tuple[Arena, Path]:
    m = build("rocm643-torch-venv", arena.base / "m")
    for d, dirs, files in os.walk(m / "home/alice"):
        for x in [d, *(os.path.join(d, f) for f in files + dirs)]:
            os.chown(x, arena.uid, arena.gid, follow_symlinks=False)
    return arena, m


@pytest.mark.parametrize("toc", [
    msgpack.packb({"compression_scheme": "none", "blobs": [], "toc": "x" * 20}),   # AttributeError before
    b"\x81\x91\x01\x02",                                                       # {[1]: 2}: TypeError before
])
def test_a_users_hostile_kpack_is_a_problem_line_for_every_command(torch_machine, toc):
    arena, m = torch_machine
    data = small_kpack(toc)
    kp = m / TORCH / ".kpack"

    def plant():
        kp.mkdir()
        (kp / "blas_lib_gfx906.kpack").write_bytes(data)
        os.mkfifo(kp / "blas_lib_gfx90a.kpack", 0o644)
        os.symlink("/dev/zero", kp / "blas_lib_gfx908.kpack")
    arena.as_attacker(plant)
    rc, doc, err = run_cli(["--root", str(m), "detect"], timeout=HANG)
    assert rc == 0 and "Traceback" not in err, err[-2000:]
    text = json_text(doc)
    assert "blas_lib_gfx906.kpack" in text and "FIFO" in text and "symbolic link" in text
    for args in (["doctor"], ["verify"], ["install", "--check", "--tree", "/opt/rocm-6.4.3", "--target", "gfx906"]):
        rc, doc, err = run_cli(["--root", str(m), *args], timeout=HANG)
        assert rc != 1 and doc is not None and "Traceback" not in err, (args, rc, err[-2000:])
    assert arena.victim_intact()


def test_a_kpack_folder_that_is_a_link_is_not_followed(tmp_path):
    """A venv's ``.kpack`` replaced by a link to a folder of root's: nothing there is listed (or
    read); a real ``.kpack`` folder is listed, its regular files only."""
    from rocmrevive.trees.layout import kpack_files

    elsewhere = tmp_path / "roots"
    elsewhere.mkdir()
    (elsewhere / "blas_lib_gfx906.kpack").write_bytes(b"KPAK")
    tree = tmp_path / "venv-prefix"
    tree.mkdir()
    (tree / ".kpack").symlink_to(elsewhere)
    assert kpack_files(tree) == []
    (tree / ".kpack").unlink()
    (tree / ".kpack").mkdir()
    (tree / ".kpack" / "blas_lib_gfx906.kpack").write_bytes(b"KPAK")
    (tree / ".kpack" / "link.kpack").symlink_to(elsewhere / "blas_lib_gfx906.kpack")
    assert kpack_files(tree) == [tree / ".kpack" / "blas_lib_gfx906.kpack"]


# --- the machine's sysfs under --root (the shared attribute reader) ----------------------------

def test_a_users_fifos_in_a_root_machine_folder_are_problems_not_waits(arena):
    """A machine folder given with --root that the attacker can write: the attacker (the real account, no root
    groups) replaces a GPU's sysfs attributes (its PCI ids and link, its hwmon temperature, its gpu_metrics) with
    FIFOs. Root's detect and the smoke's health reader finish with problem lines; the old reader's first open waited
    for a writer for ever."""
    from rocmrevive.hardware import health

    m = build("dual-mi50", arena.base / "m")
    dev = (m / "sys/bus/pci/devices/0000:19:00.0").resolve()
    hw = dev / "hwmon" / "hwmon0"
    hw.mkdir(parents=True, exist_ok=True)
    (hw / "temp1_input").write_text("40000\n")
    (dev / "gpu_metrics").write_bytes(b"\0" * 80)
    attrs = [dev / "current_link_width", dev / "max_link_width", dev / "gpu_metrics", hw / "temp1_input"]
    for d in {a.parent for a in attrs}:
        os.chown(d, arena.uid, arena.gid)

    def plant():
        for a in attrs:
            if a.exists():
                a.unlink()
            os.mkfifo(a, 0o666)
    arena.as_attacker(plant)
    assert all(stat.S_ISFIFO(a.lstat().st_mode) for a in attrs)
    import threading

    out: list = []   # read in a thread: a blocking open of a FIFO is not broken by SIGALRM's handler
    t = threading.Thread(target=lambda: out.append(health.read_health(Root(m))), daemon=True)
    t.start()
    t.join(timeout=HANG)
    assert out, "the health reader waited on the attacker's FIFO"
    cards = out[0]
    gpu = next(c for c in cards if c.bdf == "0000:19:00.0")
    assert any("not a regular file" in p for p in gpu.problems), gpu.problems
    assert gpu.gpu_metrics is None and "temp1" not in gpu.temps_c
    rc, doc, err = run_cli(["--root", str(m), "detect"], timeout=HANG)
    assert doc is not None and rc in (0, 3), (rc, err[-2000:])
    assert "not a regular file" in json.dumps(doc), json.dumps(doc)[:2000]
    assert arena.victim_intact()


# --- explain --file (root reads a log another user names) ----------------------------------------

def test_explain_never_waits_on_a_users_fifo_nor_reads_through_a_users_link(arena):
    """Root runs `rocmrevive explain --file` on a log in the attacker's home. The attacker (the real account) puts a
    FIFO there: the old reader's open() waited for a writer for ever (here: the subprocess times out); now one USAGE
    line, exit 2. A link at the log's name to a root-only file holding a failure line: refused the same way, and not a
    byte of root's file is shown (explain names an unrecognised failure line it reads)."""
    secret = arena.base / "secret.log"   # root's, outside the victim folder the arena hashes
    secret.write_text("UserWarning: Attempting to use hipBLASLt on an unsupported architecture!\n"
                      "error: root's secret line\n")
    os.chmod(secret, 0o600)

    def plant():
        os.mkfifo(arena.home / "ollama.log", 0o666)
        os.symlink(secret, arena.home / "server.log")
    arena.as_attacker(plant)
    for name, words in (("ollama.log", "a FIFO"), ("server.log", "symbolic link")):
        rc, doc, err = run_cli(["explain", "--file", str(arena.home / name)], timeout=HANG)
        msg = one_line_error(rc, doc, err, "USAGE")
        assert words in msg and "secret" not in json.dumps(doc), msg
    ok = arena.home / "real.log"
    ok.write_text("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or "
                  "directory for GPU arch : gfx906\n")
    rc, doc, err = run_cli(["explain", "--file", str(ok)], timeout=HANG)
    assert rc == 0 and doc["diagnoses"][0]["rule"] == "rocblas-tensile-missing", (rc, err[-1000:])
    assert arena.victim_intact()
