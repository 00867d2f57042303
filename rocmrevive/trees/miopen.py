"""MIOpen (PyTorch's convolutions: ComfyUI, Stable Diffusion, Whisper) and its databases for a
target, per tree. MIOpen looks up, in ``<prefix>/share/miopen/db/``:

* the kernel database ``<arch>_<CUs>.kdb`` (precompiled kernels; ``gfx906_60.kdb`` for a 60-CU
  MI50): without it, every first use of a convolution compiles its kernels (minutes) and MIOpen
  warns ``Missing system database file: gfx906_60.kdb Performance may degrade``;
* the find-db ``<arch>_<CUs>.HIP.fdb.txt`` (which solver to use) and the perf-db
  ``<arch>_<CUs>.db`` / ``.db.txt`` (tuned parameters): without them MIOpen searches or falls back
  to untuned defaults.

Names only (a folder listing); nothing is opened. Debian's and Ubuntu's ``libmiopen1`` ship the
library with no database at all (``/usr/share/miopen/db`` absent); MIOpen's sources still carry
gfx906 find-dbs, a perf-db and a kdb (issue 44), but no pinned, verifiable source of built gfx906
databases is known to rocmrevive, so it installs none and says so.

    [r.to_json() for r in miopen_trees(Root("/"), installs)]
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from rocmrevive.fs import printable_name
from rocmrevive.rootfs import Root

DB = "share/miopen/db"
LIB = re.compile(r"^libMIOpen\.so(\.\d+)*$")
_KDB = re.compile(r"^(gfx[0-9a-f]+)_?(\d+)?\.kdb$")
_FDB = re.compile(r"^(gfx[0-9a-f]+)_?(\d+)?\.(?:HIP|OpenCL)\.fdb\.txt$")
_PDB = re.compile(r"^(gfx[0-9a-f]+)_?(\d+)?\.db(?:\.txt)?$")
MAX_NAMES = 5000


@dataclass(frozen=True)
class MiopenTree:
    prefix: str                      # machine path of the tree (/opt/rocm-6.4.3, /usr, a torch/ folder)
    library: str | None              # the libMIOpen.so* found, or None
    db_folder: str | None            # <prefix>/share/miopen/db when it exists
    kdb: tuple[str, ...] = ()        # the target's kernel databases
    find_db: tuple[str, ...] = ()
    perf_db: tuple[str, ...] = ()
    other_targets: tuple[str, ...] = ()   # arches that do have databases here
    target: str = "gfx906"
    problems: list[str] = field(default_factory=list)

    @property
    def has_library(self) -> bool:
        return self.library is not None

    @property
    def verdict(self) -> str:
        """``no-miopen`` | ``no-db-folder`` | ``no-gfx906-db`` | ``partial`` | ``complete``."""
        if not self.has_library:
            return "no-miopen"
        if self.db_folder is None:
            return "no-db-folder"
        got = [bool(self.kdb), bool(self.find_db), bool(self.perf_db)]
        return "complete" if all(got) else "partial" if any(got) else f"no-{self.target}-db"

    @property
    def costs(self) -> str | None:
        """What the missing databases cost, in words (None when nothing is missing)."""
        v = self.verdict
        if v in ("no-miopen", "complete"):
            return None
        missing = [w for w, have in (("kernel database (.kdb)", self.kdb), ("find-db", self.find_db),
                                     ("perf-db", self.perf_db)) if not have]
        return (f"no {self.target} {', '.join(missing)}: MIOpen warns 'Missing system database file: "
                f"{self.target}_<CUs>.kdb' and compiles each convolution's kernels on first use (minutes per new "
                f"shape, cached afterwards in ~/.cache/miopen); untuned kernels run slower")

    def to_json(self) -> dict:
        return {"prefix": self.prefix, "library": self.library, "db_folder": self.db_folder, "target": self.target,
                "kdb": list(self.kdb), "find_db": list(self.find_db), "perf_db": list(self.perf_db),
                "other_targets": list(self.other_targets), "verdict": self.verdict, "costs": self.costs,
                "problems": self.problems}


def _names(root: Root, folder: str) -> list[str] | None:
    try:
        with os.scandir(root.path(folder)) as it:
            out: list[str] = []
            for e in it:
                if len(out) >= MAX_NAMES:
                    break
                if printable_name(e.name) and not e.is_symlink():
                    out.append(e.name)
            return sorted(out)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return None


def read_tree(root: Root, prefix: str, *, libdirs=("lib", "lib64", "lib/x86_64-linux-gnu"),
              target: str = "gfx906") -> MiopenTree:
    prefix = prefix.rstrip("/") or "/"
    lib = None
    for d in libdirs:
        names = _names(root, f"{prefix}/{d}") or []
        hit = next((n for n in names if LIB.match(n)), None)
        if hit:
            lib = f"{prefix}/{d}/{hit}"
            break
    db = f"{prefix}/{DB}"
    found = _names(root, db)
    if found is None:
        return MiopenTree(prefix, lib, None, target=target)
    kdb: list[str] = []
    fdb: list[str] = []
    pdb: list[str] = []
    others: set[str] = set()
    for n in found:
        for pat, bucket in ((_KDB, kdb), (_FDB, fdb), (_PDB, pdb)):
            m = pat.match(n)
            if m:
                if m.group(1) == target:
                    bucket.append(n)
                else:
                    others.add(m.group(1))
                break
    return MiopenTree(prefix, lib, db, tuple(kdb), tuple(fdb), tuple(pdb), tuple(sorted(others)), target)


def miopen_trees(root: Root, installs=(), envs=(), target: str = "gfx906") -> list[MiopenTree]:
    """MIOpen in each ROCm install, in the distribution (/usr) and in each PyTorch wheel (torch/),
    where its library is; a tree without libMIOpen is left out."""
    out = []
    prefixes = [i.path for i in installs] + ["/usr"]
    for p in prefixes:
        t = read_tree(root, p, target=target)
        if t.has_library:
            out.append(t)
    for e in envs:
        if e.torch_version:
            t = read_tree(root, f"{e.site_packages}/torch", libdirs=("lib",), target=target)
            if t.has_library:
                out.append(t)
    return out
