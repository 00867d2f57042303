"""Which files the dynamic loader would map for a library, found the way glibc's ld.so finds
them, but under a ``Root`` and without running anything.

    closure = load_closure(Root("/"), Path("/usr/lib/x86_64-linux-gnu/libz.so.1"), search_dirs=[])
    [o.machine_path for o in closure.loaded]    # the library, then libc.so.6, ld-linux...

Search order for a DT_NEEDED name of object O (ld.so(8), glibc ``_dl_map_object``):
  1. a name with a slash is a path;
  2. an object already loaded under that name or SONAME is reused;
  3. DT_RPATH of O, then of the object that loaded O, and so on — only when O has no DT_RUNPATH
     (with both present, DT_RPATH is ignored);
  4. ``search_dirs``: the tree's library directories, in the place LD_LIBRARY_PATH takes;
  5. DT_RUNPATH of O (``$ORIGIN`` = the directory O was found in);
  6. the directories of ``/etc/ld.so.conf`` and its includes, under the root (standing in for
     ``/etc/ld.so.cache``, which is built from them);
  7. the default directories, unless O is linked ``-z nodefaultlib``.
A file of another ELF class or machine is skipped and the search goes on, as ld.so does.
Not modelled: LD_LIBRARY_PATH/LD_PRELOAD of a particular process, the main executable's own
DT_RPATH, ``glibc-hwcaps`` subdirectories, and a stale ``ld.so.cache``.
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.hostlib.elfdyn import DynamicError, DynamicObject, read_dynamic
from rocmrevive.rootfs import Root

# glibc's built-in system directories on x86-64 (multiarch first, as Debian/Ubuntu build it;
# lib64 as Fedora/SUSE build it; plain lib last).
DEFAULT_DIRS = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64",
                "/lib", "/usr/lib")
# $LIB and $PLATFORM as Debian's loader expands them on x86-64
_DST = {"LIB": "lib/x86_64-linux-gnu", "PLATFORM": "x86_64"}


@dataclass
class Loaded:
    """One object in the closure."""
    obj: DynamicObject
    machine_path: str            # the path it was found at, as the machine names it
    names: list[str]             # names it answers to: the needed names and its SONAME
    via: str  # "checked", "path", "rpath", "search_dirs", "runpath", "ld.so.conf", "default"
    required_by: str | None      # the first object that needed it
    loader: "Loaded | None" = None
    origin: str | None = None    # $ORIGIN for its own RPATH/RUNPATH

    @property
    def label(self) -> str:
        return self.obj.soname or os.path.basename(self.machine_path)

    def to_json(self) -> dict:
        return {"name": self.names[0] if self.names else self.label, "path": self.machine_path,
                "soname": self.obj.soname, "via": self.via, "required_by": self.required_by}


@dataclass
class Missing:
    name: str
    required_by: str
    searched: list[str]
    skipped: list[str] = field(default_factory=list)  # "PATH (why)" for files passed over
    bad_file: str | None = None  # "PATH is not an ELF file": a file the loader opened and failed on

    def to_json(self) -> dict:
        return {"name": self.name, "required_by": self.required_by, "found": False,
                "searched": self.searched, "skipped": self.skipped, "bad_file": self.bad_file}


@dataclass
class Closure:
    loaded: list[Loaded] = field(default_factory=list)   # breadth-first: the lookup scope order
    missing: list[Missing] = field(default_factory=list)
    soname_mismatch: list[tuple[str, str, str | None, str]] = field(default_factory=list)
    # (needed name, machine path, its SONAME, required_by)
    notes: list[str] = field(default_factory=list)

    def find(self, name: str) -> Loaded | None:
        for lo in self.loaded:
            if name in lo.names:
                return lo
        return None


def ld_so_conf_dirs(root: Root, conf: str = "/etc/ld.so.conf") -> list[str]:
    """The directories ``/etc/ld.so.conf`` names, includes followed (globs sorted, relative
    includes taken from the including file's directory), in order, without duplicates."""
    out: list[str] = []
    seen_files: set[str] = set()

    def read(machine_file: str) -> None:
        if machine_file in seen_files:
            return
        seen_files.add(machine_file)
        try:
            text = root.path(machine_file).read_text(errors="replace")
        except OSError:
            return
        for raw in text.splitlines():
            line = raw.split("#", 1)[0].strip()
            if not line:
                continue
            if line.startswith("include") and line[7:8] in (" ", "\t"):
                for pat in line[8:].split():
                    if not pat.startswith("/"):
                        pat = os.path.join(os.path.dirname(machine_file), pat)
                    hits = sorted(glob.glob(str(root.path(pat))))
                    for real in hits:
                        read(root.machine_path(real))
                continue
            if line.startswith("hwcap") and line[5:6] in (" ", "\t"):
                continue
            for d in line.replace(",", " ").replace(":", " ").split():
                d = d.split("=", 1)[0].rstrip("/") or "/"
                if d.startswith("/") and d not in out:
                    out.append(d)

    read(conf)
    return out


def _expand(entry: str, origin: str | None) -> str | None:
    """Expand $ORIGIN/$LIB/$PLATFORM (with or without braces); None when $ORIGIN is unknown."""
    out = entry
    for key, val in (("ORIGIN", origin),) + tuple(_DST.items()):
        for token in ("${%s}" % key, "$" + key):
            if token in out:
                if val is None:
                    return None
                out = out.replace(token, val)
    return os.path.normpath(out) if out.startswith("/") else None


class _Unloadable(Exception):
    """A file with the right name that the loader opens and fails on: it does not search on."""


class _Search:
    def __init__(self, root: Root, search_dirs: list[str], abi: tuple[int, str]):
        self.root = root
        self.search_dirs = [d.rstrip("/") or "/" for d in search_dirs]
        self.conf_dirs = ld_so_conf_dirs(root)
        self.abi = abi
        self.raw_abi: tuple[int, int] | None = None
        self.by_inode: dict[tuple[int, int], Loaded] = {}

    def dirs_for(self, lo: Loaded, notes: list[str]) -> list[tuple[str, str]]:
        dirs: list[tuple[str, str]] = []

        def add(via: str, entries, origin_of: Loaded) -> None:
            for e in entries:
                if not e:
                    continue
                d = _expand(e, origin_of.origin)
                if d is None:
                    why = "$ORIGIN unknown" if "$" in e else "relative to the working directory"
                    notes.append(f"{origin_of.label}: search path entry {e!r} not followed ({why})")
                    continue
                dirs.append((via, d))

        if not lo.obj.runpath:
            chain: Loaded | None = lo
            while chain is not None:
                add("rpath", chain.obj.rpath, chain)
                chain = chain.loader
        dirs += [("search_dirs", d) for d in self.search_dirs]
        add("runpath", lo.obj.runpath, lo)
        dirs += [("ld.so.conf", d) for d in self.conf_dirs]
        if not lo.obj.nodeflib:
            dirs += [("default", d) for d in DEFAULT_DIRS]
        seen: set[str] = set()
        out = []
        for via, d in dirs:
            if d not in seen:
                seen.add(d)
                out.append((via, d))
        return out

    def candidate(self, machine_path: str, skipped: list[str]):
        """(real path, DynamicObject) when the loader would take this file, else None."""
        try:
            real = self.root.resolve(machine_path)
        except ValueError as exc:
            skipped.append(f"{machine_path} ({exc})")
            return None
        if not real.is_file():
            return None
        try:
            st = real.stat()
        except OSError:
            return None
        key = (st.st_dev, st.st_ino)
        if key in self.by_inode:
            return real, self.by_inode[key]
        if _elf_class_machine(real) not in (None, self.raw_abi):
            skipped.append(f"{machine_path} (another ELF class or machine)")
            return None  # ld.so passes over a file built for another class or machine
        try:
            obj = read_dynamic(real)
        except DynamicError as exc:
            raise _Unloadable(str(exc).replace(str(real), machine_path)) from None
        if obj.abi != self.abi:
            skipped.append(f"{machine_path} (ELFCLASS{obj.elf_class} {obj.machine})")
            return None
        return real, obj


def _elf_class_machine(real: Path) -> tuple[int, int] | None:
    """(EI_CLASS, e_machine) from the first 20 bytes; None when not an ELF file."""
    try:
        with open(real, "rb") as f:
            head = f.read(20)
    except OSError:
        return None
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return None
    return head[4], int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")


def load_closure(root: Root, lib_real: Path, *, machine_path: str, origin: str | None,
                 search_dirs: list[str]) -> Closure:
    """Breadth-first closure of ``lib_real`` (already known to be a dynamic ELF object)."""
    first = read_dynamic(lib_real)
    top = Loaded(first, machine_path, [n for n in (first.soname, os.path.basename(machine_path)) if n],
                 "checked", None, None, origin)
    out = Closure([top])
    search = _Search(root, search_dirs, first.abi)
    search.raw_abi = _elf_class_machine(lib_real)
    try:
        st = lib_real.stat()
        search.by_inode[(st.st_dev, st.st_ino)] = top
    except OSError:
        pass
    i = 0
    while i < len(out.loaded):
        lo = out.loaded[i]
        i += 1
        for name in lo.obj.needed:
            if out.find(name) is not None:
                continue
            skipped: list[str] = []
            found = None
            searched: list[str] = []
            bad = None
            if "/" in name:
                places = [("path", name if name.startswith("/") else "/" + name)]
            else:
                places = [(via, f"{d.rstrip('/')}/{name}") for via, d in search.dirs_for(lo, out.notes)]
            for via, mp in places:
                searched.append(os.path.dirname(mp) if via != "path" else mp)
                try:
                    hit = search.candidate(mp, skipped)
                except _Unloadable as exc:
                    bad = str(exc)
                    break
                if hit:
                    found = (via, mp, hit)
                    break
            if found is None:
                out.missing.append(Missing(name, lo.label, searched, skipped, bad))
                continue
            via, mp, (real, obj_or_loaded) = found
            if isinstance(obj_or_loaded, Loaded):  # the same file under another name
                obj_or_loaded.names.append(name)
                continue
            obj = obj_or_loaded
            new = Loaded(obj, mp, [name] + ([obj.soname] if obj.soname and obj.soname != name else []),
                         via, lo.label, lo, os.path.dirname(mp))
            if obj.soname is not None and obj.soname != name and "/" not in name:
                out.soname_mismatch.append((name, mp, obj.soname, lo.label))
            st = real.stat()
            search.by_inode[(st.st_dev, st.st_ino)] = new
            out.loaded.append(new)
    return out
