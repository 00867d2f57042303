"""Tensile ``.dat`` files: msgpack maps ``{solutions: [...], library: {...}}`` (docs/formats.md §5.3).

Two kinds matter to rocBLAS's lazy loading:

* the lazy index ``TensileLibrary_lazy_<arch>.dat``: no solutions, and a ``Hardware`` library
  whose leaves are ``Placeholder`` nodes naming per-problem-type files;
* a placeholder ``<name>.dat``: the solutions (kernel name, index, ``sizeMapping.sourceKernel``).

No file names of code objects are stored: ``code_object_name`` derives them the way Tensile's
``PlaceholderLibrary::getCodeObjectFileName`` does.

    index = LazyIndex.read(Path("TensileLibrary_lazy_gfx906.dat")); index.placeholders[:2]
    sols = read_solutions(Path(index.placeholders[0] + ".dat"))
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import msgpack

from rocmrevive.codeobj.msgstream import DAMAGED, MsgStream, TooLarge
from rocmrevive.errors import RevError
from rocmrevive.fs import read_regular

# Every Tensile msgpack library starts with a 2-key map whose first key is "solutions".
DAT_MAGIC = b"\x82\xa9solutions"
LAZY_PREFIX = "TensileLibrary_lazy_"
HELPER_PREFIX = "Kernels.so-000-"

_LAZY_RE = re.compile(r"^TensileLibrary_lazy_(?P<arch>[A-Za-z0-9:+\-]+)\.dat$")


class TensileFormatError(ValueError):
    """A file that is not a Tensile msgpack library, or is damaged (one line: what and where)."""


def is_tensile_dat(head: bytes) -> bool:
    """True when ``head`` (the first bytes of a file) starts like a Tensile msgpack library.

    Tensile always writes ``solutions`` first; a library written by another tool might not,
    so readers below do not rely on the order, only this quick classifier does."""
    return head.startswith(DAT_MAGIC)


def lazy_index_name(arch: str) -> str:
    """``gfx906`` -> ``TensileLibrary_lazy_gfx906.dat``."""
    return f"{LAZY_PREFIX}{arch}.dat"


def arch_of_lazy_index(filename: str) -> str | None:
    """``TensileLibrary_lazy_gfx90a.dat`` -> ``gfx90a``; None for any other name."""
    m = _LAZY_RE.match(filename)
    return m.group("arch") if m else None


def is_fallback_placeholder(placeholder: str) -> bool:
    # Tensile's own test is a substring search for "fallback" in the placeholder name.
    return "fallback" in placeholder


def code_object_name(placeholder: str, source_kernel: bool, arch: str) -> str:
    """The code object file a solution of ``placeholder`` is loaded from (docs/formats.md §5.3):
    ``<p>.co`` for assembly kernels, ``<p>.hsaco`` for source kernels, and
    ``<p>_<arch>.hsaco`` for source kernels of an arch-neutral fallback placeholder, where
    ``arch`` loses any ``:xnack``/``:sramecc`` part."""
    if not source_kernel:
        return placeholder + ".co"
    if is_fallback_placeholder(placeholder):
        return f"{placeholder}_{arch.split(':', 1)[0]}.hsaco"
    return placeholder + ".hsaco"


# ------------------------------------------------------------------------------------------
# reading: a library may be a user's (a venv's torch/lib/rocblas/library), so it is read as
# hostile input: never through a link at its name, never a FIFO or device, size-capped, and
# decoded within limits; anything wrong is a TensileFormatError (one line), nothing else.

# The largest .dat in Debian's rocBLAS 4.4.1 and 5 is 12.7 MB (an ExperimentalGrid placeholder,
# 2,294 solutions); a file 5 times that is not a Tensile library rocBLAS would parse.
MAX_DAT = 64 << 20
MAX_SOLUTIONS = 1 << 16
MAX_SOLUTION = 1 << 20    # bytes of one solution (rocBLAS 4.4.1's: ~5 KB)
# A lazy index is decoded whole (its library tree is walked generically): the largest of
# rocBLAS 4.4.1 is 59 KB; 4 MiB and a quarter-million maps and arrays bound what it can cost.
MAX_LAZY_INDEX = 4 << 20
MAX_CONTAINERS = 1 << 18
MAX_VALUES = 1 << 24      # values looked at in one placeholder (~100 keys per solution)


def _read_bytes(path: Path, max_size: int = MAX_DAT) -> bytes:
    try:
        return read_regular(path, max_size=max_size)
    except FileNotFoundError:
        raise
    except RevError as exc:
        raise TensileFormatError(exc.message) from None


def _unpacker(data: bytes, budget: "_Budget | None" = None) -> msgpack.Unpacker:
    hooks = {} if budget is None else {"object_hook": budget.map, "list_hook": budget.array}
    u = msgpack.Unpacker(raw=False, strict_map_key=False, max_buffer_size=max(len(data), 1 << 20), **hooks)
    u.feed(data)
    return u


class _Budget:
    """Counts the maps and arrays msgpack builds (its hooks); past ``MAX_CONTAINERS`` the
    decoding stops (TensileFormatError through the caller's except)."""

    def __init__(self) -> None:
        self.n = 0

    def _one(self, x):
        self.n += 1
        if self.n > MAX_CONTAINERS:
            raise ValueError(f"more than the {MAX_CONTAINERS:,} maps and lists a lazy index may have")
        return x

    map = array = _one


def _top_level(path: Path, data: bytes, budget: "_Budget | None" = None) -> Iterator[tuple[str, msgpack.Unpacker]]:
    """Yield ``(key, unpacker)`` for each top-level key; the caller unpacks or skips the value."""
    if not data:
        raise TensileFormatError(f"{path} is empty")
    u = _unpacker(data, budget)
    try:
        n = u.read_map_header()
    except Exception as exc:  # msgpack raises several types (OutOfData, StackError, ValueError)
        raise TensileFormatError(f"{path} is not a Tensile library (no msgpack map at the start)") from exc
    for _ in range(n):
        try:
            key = u.unpack()
        except Exception as exc:
            raise TensileFormatError(f"{path} is truncated or damaged (at a top-level key)") from exc
        yield str(key), u


@dataclass(frozen=True)
class Solution:
    """One Tensile solution: the kernel it launches and where that kernel's code lives."""

    name: str  # the kernel symbol name (``<name>.kd`` in the code object)
    index: int
    source_kernel: bool
    operation: str | None = None

    @classmethod
    def from_msgpack(cls, obj: Any) -> "Solution":
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            raise ValueError("a solution without a kernel name")
        mapping = obj.get("sizeMapping") or {}
        ptype = obj.get("problemType") or {}
        return cls(name=obj["name"], index=int(obj.get("index", -1)),
                   source_kernel=bool(mapping.get("sourceKernel", False)),
                   operation=ptype.get("operationIdentifier") if isinstance(ptype, dict) else None)


def read_solutions(path: Path, data: bytes | None = None) -> list[Solution]:
    """The solutions of a placeholder (or any Tensile) ``.dat``. The selection tables after them
    are walked without being built: rocBLAS parses the whole file, so a file damaged anywhere
    is damaged. Solutions are decoded one at a time and only ``Solution`` kept, so memory is
    the list returned, whatever the file holds.

    Raises FileNotFoundError, or TensileFormatError for a damaged or foreign file."""
    data = _read_bytes(path) if data is None else data
    if not data:
        raise TensileFormatError(f"{path} is empty")
    s = MsgStream(data, max_values=MAX_VALUES, max_items=max(len(data), 1))
    solutions: list[Solution] | None = None
    where = "at the start"
    try:
        n = s.map_header()
        if n is None:
            raise TensileFormatError(f"{path} is not a Tensile library (no msgpack map at the start)")
        for _ in range(n):
            where = "at a top-level key"
            key = s.scalar()
            where = f"in {key!r}"
            if key != "solutions" or solutions is not None:
                s.skip()
                continue
            where = "in its solutions"
            count = s.array_header()
            if count is None or count > MAX_SOLUTIONS:
                raise ValueError("not a list" if count is None else f"{count:,} of them, more than "
                                 f"{MAX_SOLUTIONS:,}")
            view = memoryview(data)
            solutions = [_solution(s, view) for _ in range(count)]
    except (*DAMAGED, TooLarge, AttributeError, OverflowError) as exc:   # AttributeError: from_msgpack
        raise TensileFormatError(f"{path} is truncated or damaged ({where}: {exc})") from exc
    if solutions is None:
        raise TensileFormatError(f"{path} has no 'solutions' list: not a Tensile library")
    return solutions


def _solution(s: MsgStream, view: memoryview) -> Solution:
    """The next solution: its extent found by msgpack's ``skip`` (nothing built), then decoded
    alone, so what one solution can cost is bounded by ``MAX_SOLUTION`` bytes."""
    start = s.u.tell()
    s.skip()
    end = s.u.tell()
    if end - start > MAX_SOLUTION:
        raise ValueError(f"a solution of {end - start:,} bytes, more than the {MAX_SOLUTION:,} one may have")
    return Solution.from_msgpack(msgpack.unpackb(view[start:end], raw=False, strict_map_key=False))


@dataclass
class LazyIndex:
    """``TensileLibrary_lazy_<arch>.dat``: which placeholders rocBLAS may load for ``arch``.

    ``processors`` are the ``AMDGPU``/``Processor`` predicates of its ``Hardware`` rows (the
    processor the index is really for, whatever its file name says)."""

    path: Path
    arch: str | None
    processors: list[str]
    placeholders: list[str]
    solutions: int = 0  # solutions stored in the index itself (0 in a lazy index)
    # why it is not the shape rocBLAS reads as a master library (None when it is)
    structure_problem: str | None = None

    @classmethod
    def read(cls, path: Path, data: bytes | None = None) -> "LazyIndex":
        data = _read_bytes(path, MAX_LAZY_INDEX) if data is None else data
        library = None
        n_solutions = 0
        for key, u in _top_level(path, data, _Budget()):
            try:
                value = u.unpack()
            except Exception as exc:
                raise TensileFormatError(f"{path} is truncated or damaged (in {key!r}: "
                                         f"{str(exc) or type(exc).__name__})") from exc
            if key == "library":
                library = value
            elif key == "solutions" and isinstance(value, list):
                n_solutions = len(value)
        if not isinstance(library, dict):
            raise TensileFormatError(f"{path} has no 'library' map: not a Tensile library")
        placeholders: list[str] = []
        processors: list[str] = []
        _walk(library, placeholders, processors)
        return cls(path=path, arch=arch_of_lazy_index(path.name), processors=processors,
                   placeholders=list(dict.fromkeys(placeholders)), solutions=n_solutions,
                   structure_problem=_master_structure_problem(library))


def _master_structure_problem(library: dict) -> str | None:
    """What a master (lazy) index lacks of the shape rocBLAS's MasterSolutionLibrary reads: a
    ``Hardware`` node whose rows each pair a predicate map with a typed library node."""
    if library.get("type") != "Hardware":
        return f"its library node is {library.get('type')!r}, not 'Hardware'"
    rows = library.get("rows")
    if not isinstance(rows, list) or not rows:
        return "its Hardware node has no rows"
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get("predicate"), dict):
            return f"Hardware row {i} has no predicate map"
        sub = row.get("library")
        if not isinstance(sub, dict) or not isinstance(sub.get("type"), str):
            return f"Hardware row {i} has no typed library node"
    return None


def _walk(node: Any, placeholders: list[str], processors: list[str]) -> None:
    # The library is a tree of typed nodes (Hardware, ProblemMap, Problem, Matching,
    # Placeholder...) and predicates; walking it generically keeps us independent of which
    # node kinds a Tensile version nests between the root and the placeholders.
    stack = [node]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            kind = x.get("type")
            if kind == "Placeholder" and isinstance(x.get("value"), str):
                placeholders.append(x["value"])
                continue
            if kind == "Processor" and isinstance(x.get("value"), str):
                processors.append(x["value"])
                continue
            stack.extend(reversed(list(x.values())))
        elif isinstance(x, list):
            stack.extend(reversed(x))
