"""A plan: which files of one tree to create, replace or delete, with what bytes, from where.

Paths are machine paths (under the Root); staged files are real paths of verified content.
A plan is data only: ``transaction.apply_plan`` checks it against the tree and applies it.

    plan = Plan("/opt/rocm-6.4.3", [FileChange("/opt/rocm-6.4.3/lib/rocblas/library/X.co",
                staged=Path("/var/cache/rocmrevive/stage/X.co"), sha256=sha, size=n, op=Op.CREATE,
                source="deb:librocblas4_6.4.4-4_amd64.deb")], meta={"manifest": "rocblas-4.4.1-gfx906"})
    plan.summary()  # {"files": 1, "create": 1, "replace": 0, "delete": 0, "bytes": n, "sources": [...]}
"""
from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from rocmrevive.errors import RevError
from rocmrevive.strenum import StrEnum
from rocmrevive.txn.fsutil import sha256_file


class Op(StrEnum):
    """What a transaction does to one path: the ``op`` of a plan's change, of the journal's
    ``begin`` files and ``intent``/``done`` records, and of a ``TxResult`` action. A journal read
    back holds plain strings, which compare equal to these."""

    CREATE = "create"        # a file where none was
    REPLACE = "replace"      # other bytes in place of a file
    DELETE = "delete"        # a file removed
    MKDIR = "mkdir"          # a folder the apply made (intent/done records, apply actions)
    UNCHANGED = "unchanged"  # (apply action) the file already has the planned bytes
    RESTORE = "restore"      # (undo action) a file put back from its backup
    REMOVE = "remove"        # (undo action) a file the transaction created, removed
    KEEP = "keep"            # (undo action) the file is already as before
    RMDIR = "rmdir"          # (undo action) a folder the transaction made, removed


OPS = (Op.CREATE, Op.REPLACE, Op.DELETE)  # a plan's file changes, in the order its summary counts them


@dataclass(frozen=True)
class FileChange:
    """One file of a plan. ``before_sha256`` pins what the planner saw for a replace/delete
    (None: not pinned); a create always expects no file."""

    dest: str
    staged: Path | None
    sha256: str | None
    size: int | None
    op: Op
    source: str = ""
    before_sha256: str | None = None

    def __post_init__(self):
        if self.op not in OPS:
            raise ValueError(f"FileChange.op must be one of {tuple(map(str, OPS))}, not {self.op!r}")
        object.__setattr__(self, "op", Op(self.op))  # a plain word (JSON, a caller) becomes its member
        if not str(self.dest).startswith("/"):
            raise ValueError(f"FileChange.dest must be an absolute machine path: {self.dest!r}")
        if self.op == Op.DELETE:
            if self.staged is not None or self.sha256 is not None:
                raise ValueError(f"a delete carries no content: {self.dest}")
        elif self.staged is None or self.sha256 is None or self.size is None:
            raise ValueError(f"a {self.op} needs staged, sha256 and size: {self.dest}")
        if self.op == Op.CREATE and self.before_sha256 is not None:
            raise ValueError(f"a create expects no file before: {self.dest}")

    def to_json(self) -> dict:
        return {"dest": self.dest, "staged": None if self.staged is None else str(self.staged),
                "sha256": self.sha256, "size": self.size, "op": self.op, "source": self.source,
                "before_sha256": self.before_sha256}

    @classmethod
    def from_json(cls, d: Mapping) -> "FileChange":
        return cls(dest=d["dest"], staged=None if d.get("staged") is None else Path(d["staged"]),
                   sha256=d.get("sha256"), size=d.get("size"), op=d["op"], source=d.get("source", ""),
                   before_sha256=d.get("before_sha256"))


@dataclass
class Plan:
    """Changes to one tree (e.g. ``/opt/rocm-6.4.3``); ``meta`` carries manifest id, source
    provenance, GPUs and ROCm version into the journal."""

    tree: str
    changes: list[FileChange]
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        tree = posixpath.normpath(self.tree)
        if not tree.startswith("/"):
            raise ValueError(f"Plan.tree must be an absolute machine path: {self.tree!r}")
        seen = set()
        for c in self.changes:
            d = posixpath.normpath(c.dest)
            if not d.startswith(tree.rstrip("/") + "/"):
                raise ValueError(f"{c.dest} is not inside the tree {self.tree}")
            if d in seen:
                raise ValueError(f"{c.dest} appears twice in the plan")
            seen.add(d)

    def summary(self) -> dict:
        """Counts of what applying the plan changes: a replace by identical bytes is ``unchanged``."""
        same = [c for c in self.changes if c.op == Op.REPLACE and c.before_sha256 == c.sha256]
        moving = [c for c in self.changes if not (c.op == Op.REPLACE and c.before_sha256 == c.sha256)]
        counts = {op: sum(1 for c in moving if c.op == op) for op in OPS}
        return {"tree": self.tree, "files": len(self.changes), **counts, Op.UNCHANGED: len(same),
                "bytes": sum(c.size or 0 for c in moving if c.op != Op.DELETE),
                "sources": sorted({c.source for c in self.changes if c.source})}

    def diff(self) -> dict:
        """{"before": {path: sha|None}, "after": {path: sha|None}} as the planner saw it."""
        return {"before": {c.dest: c.before_sha256 for c in self.changes},
                "after": {c.dest: c.sha256 for c in self.changes}}

    def to_json(self) -> dict:
        return {"tree": self.tree, "meta": self.meta, "changes": [c.to_json() for c in self.changes]}

    @classmethod
    def from_json(cls, d: Mapping) -> "Plan":
        return cls(tree=d["tree"], changes=[FileChange.from_json(c) for c in d["changes"]],
                   meta=dict(d.get("meta") or {}))


def plan_from_staged(root, tree: str, files: Mapping[str, str | os.PathLike], *, source: str = "",
                     meta: dict | None = None, deletes: tuple[str, ...] = (),
                     known: Mapping[str, tuple[str, int]] | None = None) -> Plan:
    """A plan putting each staged file (machine dest -> real staged path) into ``tree``: a create
    where no file is, a replace (pinned to the current hash) where one is. ``known`` (dest ->
    (sha256, size)) is what the step that wrote a staged file recorded: taken instead of hashing
    it again, since the apply copies only bytes with that hash.

        plan_from_staged(root, "/opt/rocm-6.4.3", {"/opt/rocm-6.4.3/lib/rocblas/library/X.co": stage / "X.co"})
    """
    known = known or {}
    changes = []
    for dest, staged in sorted(files.items()):
        sha, size = known[dest] if dest in known else sha256_file(staged)
        cur = _current_sha(root, dest)
        if cur is None:
            changes.append(FileChange(dest, Path(staged), sha, size, Op.CREATE, source))
        else:
            changes.append(FileChange(dest, Path(staged), sha, size, Op.REPLACE, source, before_sha256=cur))
    for dest in deletes:
        changes.append(FileChange(dest, None, None, None, Op.DELETE, source, before_sha256=_current_sha(root, dest)))
    return Plan(tree, changes, dict(meta or {}))


def _current_sha(root, dest: str) -> str | None:
    real = root.resolve(dest)
    if not os.path.lexists(real):
        return None
    if not os.path.isfile(real) or os.path.islink(real):
        raise RevError("VERIFY_FAILED", f"{dest} exists and is not a regular file; rocmrevive replaces only regular files")
    return sha256_file(real)[0]
