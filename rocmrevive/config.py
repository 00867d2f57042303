"""The machine's own settings: ``/etc/rocmrevive/config.toml`` (read under ``--root``).

A one-time setting instead of a flag on every run, e.g. an Ubuntu host whose apt configuration
names no Debian mirror::

    # /etc/rocmrevive/config.toml
    mirror = "http://deb.example.org/debian"   # like --mirror
    snapshot = "none"                          # like --snapshot (a URL, or none: never)
    cache = "/srv/rocmrevive-cache"            # like --cache (a path on this machine)
    state_dir = "/var/lib/rocmrevive"          # like --state-dir
    manifests = "/etc/rocmrevive/manifests"    # like --manifests

Every command that has one of these options takes the file's value when the option is not given
on the command line (an option given always wins). Paths are the machine's paths: under
``--root DIR`` they are read under DIR, as every other path is. A key this version does not know,
a value that is not a string, or a TOML error is a usage error naming the file and the line;
when run as root, a file that another user owns or may write is refused (it would choose where
rocmrevive downloads from and writes to).

    cfg = load(Root("/")); cfg.options  # {"--mirror": "http://...", "--cache": "/srv/..."}
"""
from __future__ import annotations

import difflib
import os
import stat
import sys
from dataclasses import dataclass, field

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from urllib.parse import urlsplit

from rocmrevive.errors import RevError
from rocmrevive.fs import open_regular, printable_name, read_error, read_fd

CONFIG_FILE = "/etc/rocmrevive/config.toml"
MAX_CONFIG = 64 << 10      # a few settings; more is not a config file (and is never read whole)
MAX_VALUE = 4096           # PATH_MAX, counting the NUL
NAME_MAX = 255
_FIX = "make it a regular file of a few settings, or remove it"

# key -> (the option it stands for, whether it is a path on the machine)
KEYS: dict[str, tuple[str, bool]] = {
    "mirror": ("--mirror", False),
    "snapshot": ("--snapshot", False),
    "cache": ("--cache", True),
    "state_dir": ("--state-dir", False),   # --state-dir is a machine path already (read under --root)
    "manifests": ("--manifests", True),
}


@dataclass
class Config:
    file: str | None = None                            # the machine path read, None if there is none
    values: dict[str, str] = field(default_factory=dict)  # key -> value as written
    options: dict[str, str] = field(default_factory=dict)  # option -> value to use (host paths)
    unknown: list[str] = field(default_factory=list)  # one line per key this version does not know

    @property
    def state_dir(self) -> str | None:
        return self.values.get("state_dir")


def load(root, path: str = CONFIG_FILE) -> Config:
    """Read the config file of the machine at ``root`` (a missing file is an empty config)."""
    raw = _read(root, path)
    if raw is None:
        return Config()
    data = _parse(path, raw)
    cfg = Config(file=path)
    for key, value in data.items():
        if key not in KEYS:
            # a reader goes on with a warning, a writer refuses (cli/main.py decides)
            cfg.unknown.append(f"{path}: unknown setting {key!r}{did_you_mean(key)}; the settings are {', '.join(KEYS)}")
            continue
        if not isinstance(value, str) or not value:
            raise RevError("USAGE", f"{path}: {key} must be a non-empty string, not {value!r}")
        _check_value(path, key, value)
        option, is_path = KEYS[key]
        if is_path and not value.startswith("/"):
            raise RevError("USAGE", f"{path}: {key} = {value!r} must be an absolute path on this machine")
        problem = mirror_problem(value) if key == "mirror" else snapshot_problem(value) if key == "snapshot" else None
        if problem:
            raise RevError("USAGE", f"{path}: {key} = {value!r} {problem}; fix {key} in {path}")
        cfg.values[key] = value
        cfg.options[option] = str(root.path(value)) if is_path else value
    return cfg


def _read(root, path: str) -> bytes | None:
    """The file's bytes, read as a file another user may have planted: never through a link at
    its name, never a FIFO (opened ``O_NONBLOCK``, ``fstat``-checked), at most ``MAX_CONFIG``
    bytes; when run as root, only a file root owns and only root may write. None when absent."""
    try:
        real = root.resolve(path)
    except ValueError as exc:
        raise RevError("USAGE", f"{path}: {exc}") from None
    try:
        fd = open_regular(real, max_size=MAX_CONFIG, what=path)
    except FileNotFoundError:
        return None
    except (RevError, OSError) as exc:   # a link, FIFO, device or folder, or too large for a few settings
        raise _unusable(path, exc) from None
    try:
        st = os.fstat(fd)
        if os.geteuid() == 0 and (st.st_uid != 0 or st.st_mode & 0o022):
            raise RevError("PERMISSION", f"{path}: owned by uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):o}; "
                                         f"rocmrevive runs as root and trusts only a config file root owns and only "
                                         f"root may write: chown root:root and chmod 644 it")
        try:
            return read_fd(fd, max_size=MAX_CONFIG, what=path)
        except (RevError, OSError) as exc:   # grew past the cap while read, or an I/O error
            raise _unusable(path, exc) from None
    finally:
        os.close(fd)


def _unusable(path: str, exc: RevError | OSError) -> RevError:
    why = exc.message if isinstance(exc, RevError) else read_error(path, exc).message
    return RevError("USAGE", f"{why.removesuffix('; remove it')}; {_FIX}")


def _parse(path: str, raw: bytes) -> dict:
    """The TOML document; every way it can be wrong is one usage line naming the file."""
    try:
        return tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RevError("USAGE", f"{path}: not valid TOML: {exc}; fix the file (keys: {', '.join(KEYS)})") from None
    except RecursionError:   # tomllib recurses once per nested array or inline table
        raise RevError("USAGE", f"{path}: not valid TOML: nested too deeply for a file of a few settings; "
                                f"fix the file (keys: {', '.join(KEYS)})") from None


def _check_value(path: str, key: str, value: str) -> None:
    """A value is a URL or a machine path: printable, and short enough for the kernel's limits
    (PATH_MAX, NAME_MAX), so no later open or request fails in a way that names no file."""
    if not printable_name(value):
        raise RevError("USAGE", f"{path}: {key} = {value[:60]!r} holds a control character (NUL, newline...); "
                                f"fix the file")
    if len(value.encode("utf-8")) >= MAX_VALUE:
        raise RevError("USAGE", f"{path}: {key} is {len(value):,} characters long, more than a path or URL may "
                                f"be ({MAX_VALUE - 1}); fix the file")
    if KEYS[key][1] or key == "state_dir":
        long = next((c for c in value.split("/") if len(c.encode("utf-8")) > NAME_MAX), None)
        if long is not None:
            raise RevError("USAGE", f"{path}: {key} has a path component of {len(long):,} characters, more "
                                    f"than a file name may have ({NAME_MAX}); fix the file")


def did_you_mean(key: str) -> str:
    """' (did you mean 'mirror'?)' for a key close to a known one, else ''."""
    close = difflib.get_close_matches(key, list(KEYS), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def mirror_problem(url: str) -> str | None:
    """What is wrong with a Debian mirror URL (http(s):// with a host, or file:// with a path), or
    None; the one rule for ``--mirror`` and the config file's ``mirror``."""
    try:
        u = urlsplit(url)
        u.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError as exc:
        return f"is not a URL ({exc}); e.g. http://deb.example.org/debian"
    if u.scheme not in ("http", "https", "file") or (u.scheme != "file" and not u.hostname) or \
            (u.scheme == "file" and not u.path):
        return "is not an http://, https:// or file:// URL of a Debian mirror"
    return None


def snapshot_problem(value: str) -> str | None:
    """What is wrong with a snapshot archive setting ('none', or a URL as for a mirror), or None;
    the one rule for ``--snapshot`` and the config file's ``snapshot``."""
    if value.strip().lower() == "none":
        return None
    problem = mirror_problem(value)
    return None if problem is None else problem.replace("of a Debian mirror", "of Debian's snapshot archive, "
                                                                              "or none")
