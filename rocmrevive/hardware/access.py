"""Can a user open the GPU device nodes? ``/dev/kfd`` and ``/dev/dri/renderD*`` are normally
``root:render 0660`` through udev (older setups: ``video``); the user needs that group
(ECOSYSTEM §4.4). Users and groups are read from the machine's ``/etc/passwd`` and ``/etc/group``.

In a captured machine the nodes are plain files, so their owner says nothing: the udev default
(group ``render``) is assumed and the result says so.

    check_access(Root("/"), "alice", ["/dev/kfd", "/dev/dri/renderD128"])
"""
from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from rocmrevive.hardware.sysfs import read_text
from rocmrevive.rootfs import Root

UDEV_GROUP = "render"


@dataclass
class NodeAccess:
    path: str
    exists: bool
    group: str | None = None
    mode: str | None = None
    assumed: bool = False      # not a character device: ownership taken from the udev default
    user_ok: bool | None = None

    def to_json(self) -> dict:
        return {"path": self.path, "exists": self.exists, "group": self.group, "mode": self.mode,
                "assumed": self.assumed, "user_ok": self.user_ok}


@dataclass
class AccessReport:
    user: str | None
    uid: int | None
    groups: list[str] = field(default_factory=list)
    nodes: list[NodeAccess] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def missing_groups(self) -> list[str]:
        need = {n.group for n in self.nodes if n.exists and n.user_ok is False and n.group}
        return sorted(need)

    def to_json(self) -> dict:
        return {"user": self.user, "uid": self.uid, "groups": self.groups,
                "nodes": [n.to_json() for n in self.nodes], "missing_groups": self.missing_groups,
                "problems": self.problems}


def _table(root: Root, path: str) -> list[list[str]]:
    text, _ = read_text(root.path(path), limit=16 << 20)
    return [line.split(":") for line in (text or "").splitlines() if line and not line.startswith("#")]


def check_access(root: Root, user: str, nodes: list[str]) -> AccessReport:
    passwd = {row[0]: row for row in _table(root, "/etc/passwd") if len(row) >= 4}
    groups = _table(root, "/etc/group")
    rep = AccessReport(user, None)
    row = passwd.get(user)
    primary_gid = None
    if row is None:
        rep.problems.append(f"user {user!r} is not in {root.machine_path(root.path('/etc/passwd'))}")
    else:
        rep.uid = int(row[2]) if row[2].isdigit() else None
        primary_gid = row[3]
    gid_names = {g[2]: g[0] for g in groups if len(g) >= 3}
    for g in groups:
        if len(g) >= 4 and (user in g[3].split(",") or g[2] == primary_gid):
            rep.groups.append(g[0])
    for node in nodes:
        real = root.path(node)
        try:
            st = os.stat(real)
        except OSError:
            rep.nodes.append(NodeAccess(node, False))
            continue
        na = NodeAccess(node, True)
        if stat.S_ISCHR(st.st_mode):
            na.group = gid_names.get(str(st.st_gid), str(st.st_gid))
            na.mode = oct(st.st_mode & 0o777)
            other_ok = bool(st.st_mode & 0o006 == 0o006)
            group_ok = bool(st.st_mode & 0o060 == 0o060) and na.group in rep.groups
            owner_ok = rep.uid is not None and rep.uid == st.st_uid
            na.user_ok = (rep.uid == 0) or other_ok or group_ok or owner_ok
        else:
            na.group, na.mode, na.assumed = UDEV_GROUP, "0o660", True
            na.user_ok = (rep.uid == 0) or UDEV_GROUP in rep.groups
        if row is None:
            na.user_ok = None
        rep.nodes.append(na)
    return rep
