"""Every file rocmrevive reads or writes goes through one root (``--root``, default ``/``).

A captured machine is then just a folder. ``Root.path("/opt/rocm")`` maps a machine path to the
real path under the root; ``Root.machine_path(real)`` maps back for display.

    root = Root("tests/machines/dual-mi50"); root.path("/sys/class/kfd")
"""
from __future__ import annotations

import os
from pathlib import Path


class Root:
    def __init__(self, base: str | os.PathLike = "/"):
        self.base = Path(os.path.abspath(base))

    def __repr__(self) -> str:
        return f"Root({str(self.base)!r})"

    @property
    def is_host(self) -> bool:
        return str(self.base) == "/"

    def path(self, machine_path: str | os.PathLike) -> Path:
        """The real path of a machine path (absolute or relative to the machine's /)."""
        p = str(machine_path)
        if self.is_host:
            return Path(p if p.startswith("/") else "/" + p)
        p = p.lstrip("/")
        return self.base / p if p else self.base

    def given(self, typed: str | os.PathLike) -> Path:
        """The real path of a path the user typed (``--tree``): relative to the working folder on
        the real machine, a machine path under any other root."""
        return Path(os.path.abspath(typed)) if self.is_host else self.path(typed)

    def machine_path(self, real: str | os.PathLike) -> str:
        """The machine path of a real path under the root ("/opt/rocm-6.4.3/..."); unchanged if outside."""
        real = os.path.abspath(real)
        if self.is_host:
            return real
        base = str(self.base)
        if real == base:
            return "/"
        if real.startswith(base + os.sep):
            return real[len(base):]
        return real

    def resolve(self, machine_path: str | os.PathLike, *, strict: bool = False, what: str = "path") -> Path:
        """Resolve symlinks as the machine would (chroot semantics): an absolute link target is
        read under the root, and ``..`` never climbs above it, so the result is always inside.

        ``strict``: refuse (ValueError) a link that leads outside the root in the real file
        system — a relative target climbing above it, or an absolute target missing under the
        root that the kernel would follow to a real place outside — before writing through it.
        Raises ValueError on a symlink loop.
        """
        if self.is_host:
            return Path(os.path.realpath(self.path(machine_path)))
        parts = [x for x in str(machine_path).split("/") if x]
        cur: list[str] = []
        hops = 0
        while parts:
            name = parts.pop(0)
            if name == ".":
                continue
            if name == "..":
                if cur:
                    cur.pop()
                continue
            real = self.base.joinpath(*cur, name)
            if not real.is_symlink():
                cur.append(name)
                continue
            hops += 1
            link = "/" + "/".join(cur + [name])
            if hops > 40:
                raise ValueError(f"too many symbolic links at {link} under {self.base}")
            target = os.readlink(real)
            if strict:
                self._refuse_escape(real, target, cur, f"{what} {machine_path}: {link} is a symbolic link "
                                    f"to {target}, which leads outside the root {self.base}; "
                                    f"refusing to write through it")
            if target.startswith("/"):
                cur = []
            parts = [x for x in target.split("/") if x] + parts
        return self.base.joinpath(*cur)

    def _refuse_escape(self, real: Path, target: str, cur: list[str], message: str) -> None:
        if target.startswith("/"):
            inside = self.resolve(target)
            if not os.path.lexists(inside):
                kernel = Path(os.path.realpath(real))
                if kernel.exists() and kernel != self.base and self.base not in kernel.parents:
                    raise ValueError(message)
            return
        depth = len(cur)
        for x in target.split("/"):
            if x == "..":
                depth -= 1
                if depth < 0:
                    raise ValueError(message)
            elif x and x != ".":
                depth += 1
