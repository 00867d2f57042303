"""Small, forgiving readers for sysfs/procfs-style files under a Root.

Missing optional attributes are normal (older kernels, other drivers); anything else that goes
wrong (a directory where a file should be, a permission error, bytes that are not text) is turned
into a problem string for the device being read, never an exception.

    text, problem = read_text(root.path("/sys/bus/pci/devices/0000:19:00.0/vendor"))
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

MAX_ATTR = 1 << 20  # sysfs attributes are one page; refuse to slurp anything huge


def read_bytes(path: Path, *, limit: int = MAX_ATTR) -> tuple[bytes | None, str | None]:
    """(bytes, None), (None, None) when the file is missing, or (None, problem). Opened ``O_NONBLOCK`` and
    checked with ``fstat`` before a byte is read: a FIFO or a device planted where an attribute should be (a
    machine folder given with --root may be a user's) is a problem line, never a wait."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY)
    except (FileNotFoundError, NotADirectoryError):
        return None, None
    except OSError as exc:
        return None, f"cannot read {path.name}: {exc.strerror or exc}"
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            return None, f"{path.name} is a directory, not a file"
        if not stat.S_ISREG(mode):
            return None, f"{path.name} is not a regular file (a FIFO, socket or device): not read"
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(limit + 1)
    except OSError as exc:
        return None, f"cannot read {path.name}: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if len(data) > limit:
        return None, f"{path.name} is larger than {limit} bytes"
    return data, None


def read_text(path: Path, *, limit: int = MAX_ATTR) -> tuple[str | None, str | None]:
    """(text, None), (None, None) when the file is missing, or (None, problem) (``read_bytes``'s, or not text)."""
    data, problem = read_bytes(path, limit=limit)
    if data is None:
        return None, problem
    try:
        return data.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, f"{path.name} is not text"


def parse_int(text: str | None) -> int | None:
    """``"0x1002"``, ``"4098"``, ``"-1"`` → int; anything else → None."""
    if text is None:
        return None
    s = text.strip()
    if not s:
        return None
    try:
        return int(s, 0) if s.lower().startswith(("0x", "-0x")) else int(s, 10)
    except ValueError:
        return None


def parse_hex(text: str | None) -> int | None:
    """PCI id files hold hex with or without ``0x``."""
    if text is None:
        return None
    s = text.strip().lower()
    if s.startswith("0x"):
        s = s[2:]
    try:
        return int(s, 16) if s else None
    except ValueError:
        return None


def read_link_name(path: Path) -> str | None:
    """The last component of a symlink's target (``driver`` → ``amdgpu``), or None."""
    try:
        return os.path.basename(os.readlink(path).rstrip("/")) or None
    except OSError:
        return None


def list_dir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def parse_key_values(text: str) -> tuple[dict[str, int], list[str]]:
    """KFD ``properties``: one ``key value`` pair per line, values decimal integers.

    Returns the pairs that parse and one problem per bad line (at most five, then a count)."""
    out: dict[str, int] = {}
    bad: list[str] = []
    nbad = 0
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split()
        value = parse_int(parts[1]) if len(parts) == 2 else None
        if value is None or not parts[0].replace("_", "").isalnum():
            nbad += 1
            if len(bad) < 5:
                bad.append(f"line {no} is not 'key integer': {line.strip()[:60]!r}")
            continue
        out[parts[0]] = value
    if nbad > len(bad):
        bad.append(f"... and {nbad - len(bad)} more bad lines")
    return out, bad
