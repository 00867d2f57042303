"""``HSA_OVERRIDE_GFX_VERSION`` on a machine with a real gfx906: where it is set. Guides and images
still spread ``HSA_OVERRIDE_GFX_VERSION=9.0.6``; on a card that already reports gfx906
(``gfx_target_version`` 90006) it changes nothing useful and hides the real cause of a failure (a
rocBLAS without gfx906 files fails the same way, with the override in every log); any other
value makes the runtime treat the card as another GPU and load code built for that one.

Places read (under --root, each file through ``fs.read_regular`` below the root's descriptor:
no component followed when it is a link, no FIFO, at most 1 MiB; at most 500 names a pattern):
this process's environment, /etc/environment and /etc/environment.d, /etc/profile.d, systemd
units and drop-ins of any unit under /etc/systemd/system, /run/systemd/system, /usr/lib and
/usr/local/lib/systemd/system (ollama.service, docker's and any other), Docker's container configs
(/var/lib/docker/containers/*/config.v2.json: the container's own environment), and compose/env
files under /opt, /srv and /home/*.

    for f in override_findings(Root("/"), hw, os.environ): print(f.message)
"""
from __future__ import annotations

import glob
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from rocmrevive.errors import RevError
from rocmrevive.fs import printable_name, read_regular
from rocmrevive.hardware.findings import Finding, FixKind, Severity
from rocmrevive.rootfs import Root

VAR = "HSA_OVERRIDE_GFX_VERSION"
MAX_FILE = 1 << 20
MAX_NAMES = 500
# VAR=9.0.6, VAR: "9.0.6", "VAR=9.0.6" (JSON Env lists), Environment="VAR=9.0.6" (systemd)
_SET = re.compile(r"""HSA_OVERRIDE_GFX_VERSION["']?\s*[=:]\s*["']?([0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2})""")

PLACES = (
    ("/etc/environment", "environment file"),
    ("/etc/environment.d/*.conf", "environment.d file"),
    ("/etc/profile.d/*.sh", "login-shell profile"),
    ("/etc/systemd/system/*.service", "systemd unit"),
    ("/etc/systemd/system/*.service.d/*.conf", "systemd drop-in"),
    ("/run/systemd/system/*.service.d/*.conf", "systemd drop-in"),
    ("/usr/lib/systemd/system/*.service", "systemd unit"),
    ("/usr/local/lib/systemd/system/*.service", "systemd unit"),
    ("/var/lib/docker/containers/*/config.v2.json", "Docker container config"),
    ("/opt/*/docker-compose.y*ml", "compose file"), ("/opt/*/compose.y*ml", "compose file"),
    ("/opt/*/.env", "container env file"), ("/opt/*/*.env", "container env file"),
    ("/srv/*/docker-compose.y*ml", "compose file"), ("/srv/*/.env", "container env file"),
    ("/home/*/*/docker-compose.y*ml", "compose file"), ("/home/*/*/compose.y*ml", "compose file"),
    ("/home/*/*/.env", "container env file"), ("/etc/ollama/*.env", "container env file"),
)


@dataclass(frozen=True)
class OverrideSeen:
    where: str           # machine path, or "this process's environment"
    kind: str
    line: int | None
    value: str

    def to_json(self) -> dict:
        return {"where": self.where, "kind": self.kind, "line": self.line, "value": self.value}


def _lines(text: str) -> list[tuple[int, str]]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith(("#", ";", "//")) or VAR not in s:
            continue
        out.append((n, s))
    return out


def scan_file(root: Root, path: str, kind: str) -> tuple[list[OverrideSeen], str | None]:
    """The assignments in one file (``path``: a machine path), or a problem when it was refused.
    Every component below the root is opened without following a link (``/home/alice/x`` planted
    as a link to root's folders is refused, not read)."""
    try:
        base = os.open(root.path("/"), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as exc:
        return [], f"{path}: {exc.strerror or exc}"
    try:
        raw = read_regular(path.lstrip("/"), max_size=MAX_FILE, dir_fd=base, what=path)
    except FileNotFoundError:
        return [], None
    except RevError as exc:
        return [], exc.message
    except OSError as exc:
        return [], f"{path}: {exc.strerror or exc}"
    finally:
        os.close(base)
    text = raw.decode("utf-8", "replace")
    out = []
    for n, line in _lines(text):
        for m in _SET.finditer(line):
            out.append(OverrideSeen(path, kind, n, m.group(1)))
    return out, None


def _paths(root: Root, pattern: str) -> list[str]:
    base = "" if root.is_host else glob.escape(str(root.base))
    found = sorted(glob.glob(base + pattern))[:MAX_NAMES]
    return [m for m in (root.machine_path(p) for p in found) if printable_name(m)]


def find_overrides(root: Root, env: Mapping[str, str] | None = None) -> tuple[list[OverrideSeen], list[str]]:
    """Every place ``HSA_OVERRIDE_GFX_VERSION`` is set, and the files that could not be read."""
    seen: list[OverrideSeen] = []
    problems: list[str] = []
    value = (env or {}).get(VAR)
    if value is not None:
        m = re.fullmatch(r"\s*([0-9]{1,2}\.[0-9]{1,2}\.[0-9]{1,2})\s*", value)
        seen.append(OverrideSeen("this process's environment", "environment", None,
                                 m.group(1) if m else "(not a version)"))
    for pattern, kind in PLACES:
        for path in _paths(root, pattern) if "*" in pattern else [pattern]:
            if root.path(path).is_symlink():   # systemd's enablement links: the unit is read where it lives
                continue
            got, problem = scan_file(root, path, kind)
            seen += got
            if problem:
                problems.append(problem)
    return seen, problems


def _where(s: OverrideSeen) -> str:
    return s.where + (f" (line {s.line})" if s.line else "")


def override_findings(root: Root, hw, env: Mapping[str, str] | None = None) -> list[Finding]:
    """A warning per place the override is set to 9.0.6, an error per place it names another
    target, on a machine whose KFD lists a real gfx906 (90006); nothing otherwise."""
    real = [g for g in hw.gpus if g.processor == "gfx906" and g.gfx_target_version == 90006]
    if not real:
        return []
    seen, problems = find_overrides(root, env)
    out = []
    cards = ", ".join(g.label for g in real)
    for s in seen:
        same = s.value == "9.0.6"
        if s.kind == "environment":
            fix = f"`unset {VAR}` (and remove it from the shell's startup file)"
        else:
            fix = f"remove the line from {s.where}"
            if "systemd" in s.kind:
                fix += "; then `sudo systemctl daemon-reload` and restart the unit"
            elif "ontainer" in s.kind or "compose" in s.kind:
                fix += "; then recreate the container"
        out.append(Finding(
            "hsa-override-set", Severity.WARNING if same else Severity.ERROR, s.where,
            f"{VAR}={s.value} is set in {_where(s)} ({s.kind}) on a machine whose {cards} already report gfx906",
            ("the card already is gfx906: the override does nothing useful and hides the real cause of a failure "
             "(a rocBLAS without gfx906 files fails the same way, with the override in every log)") if same else
            (f"the runtime treats the gfx906 card as the target {s.value} names and loads code built for that GPU: "
             "kernels fail or crash"),
            fix, FixKind.SETTING, s.to_json()))
    for p in problems:
        out.append(Finding("hsa-override-unreadable", Severity.INFO, "machine",
                           f"a file that may set {VAR} was not read", p, "none", FixKind.NONE))
    return out
