"""The machine's own settings: ``/etc/rocmrevive/config.toml`` (read under ``--root``).

A one-time setting instead of a flag on every run, e.g. an Ubuntu host whose apt configuration
names no Debian mirror::

    # /etc/rocmrevive/config.toml
    mirror = "http://deb.example.org/debian"   # like --mirror
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

import os
import stat
import sys
from dataclasses import dataclass, field

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from rocmrevive.errors import RevError

CONFIG_FILE = "/etc/rocmrevive/config.toml"

# key -> (the option it stands for, whether it is a path on the machine)
KEYS: dict[str, tuple[str, bool]] = {
    "mirror": ("--mirror", False),
    "cache": ("--cache", True),
    "state_dir": ("--state-dir", False),   # --state-dir is a machine path already (read under --root)
    "manifests": ("--manifests", True),
}


@dataclass
class Config:
    file: str | None = None                            # the machine path read, None if there is none
    values: dict[str, str] = field(default_factory=dict)  # key -> value as written
    options: dict[str, str] = field(default_factory=dict)  # option -> value to use (host paths)

    @property
    def state_dir(self) -> str | None:
        return self.values.get("state_dir")


def load(root, path: str = CONFIG_FILE) -> Config:
    """Read the config file of the machine at ``root`` (a missing file is an empty config)."""
    try:
        real = root.resolve(path)
    except ValueError as exc:
        raise RevError("USAGE", f"{path}: {exc}") from None
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        return Config()
    except OSError as exc:
        raise RevError("USAGE", f"cannot read {path} under {root.base}: {exc.strerror}; "
                                f"fix or remove the file") from None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise RevError("USAGE", f"{path} is not a regular file; make it one or remove it")
        if os.geteuid() == 0 and (st.st_uid != 0 or st.st_mode & 0o022):
            raise RevError("PERMISSION", f"{path}: owned by uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):o}; "
                                         f"rocmrevive runs as root and trusts only a config file root owns and only "
                                         f"root may write: chown root:root and chmod 644 it")
        raw = fh.read()
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RevError("USAGE", f"{path}: not valid TOML: {exc}; fix the file (keys: {', '.join(KEYS)})") from None
    cfg = Config(file=path)
    for key, value in data.items():
        if key not in KEYS:
            raise RevError("USAGE", f"{path}: unknown setting {key!r}; the settings are {', '.join(KEYS)}")
        if not isinstance(value, str) or not value:
            raise RevError("USAGE", f"{path}: {key} must be a non-empty string, not {value!r}")
        option, is_path = KEYS[key]
        if is_path and not value.startswith("/"):
            raise RevError("USAGE", f"{path}: {key} = {value!r} must be an absolute path on this machine")
        cfg.values[key] = value
        cfg.options[option] = str(root.path(value)) if is_path else value
    return cfg
