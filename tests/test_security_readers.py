"""Readers of what another user can write (issue 26, findings 6-8): root's rocmrevive opens a
config file, a venv's patch target, a ``.kpack`` or a Tensile ``.dat`` without following a link,
never blocks on a FIFO, refuses devices, caps sizes, and turns every malformed byte into a
problem line or one error line with a documented exit code. Driven from the outside (the CLI as
root, the hostile files planted by the real unprivileged account of tests/security_support.py).

    rc, doc, err = run_cli(["--root", str(m), "status"], timeout=60); one_line_error(rc, doc, err, "USAGE")
"""
from __future__ import annotations

import contextlib
import os
import signal
import stat
from pathlib import Path

import pytest

from rocmrevive.config import load
from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from tests.security_support import one_line_error, run_cli

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
