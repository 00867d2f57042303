"""What Tensile's deserialisers demand of a library tree, checked before rocBLAS would load it.

A Tensile ``.dat`` is ``{solutions: [...], library: <node>}``. Tensile builds the node tree with
one deserialiser per node ``type`` and fails the whole load on a type it does not know ("Unknown
subclass"), on a missing required field, and on a solution index that is not in the file's own
solution list ("Invalid solution index": ``SingleSolutionLibrary``, the matching tables, the
decision trees). rocBLAS then has no library for the problem type (a placeholder) or for the GPU
(a master library). ``tree_problems`` finds those; ``select_rows`` picks the ``Hardware`` rows a
processor reaches, as Tensile's ``HardwareSelectionLibrary`` does.

    probs = tree_problems(doc["library"], {s.index for s in sols}); probs[:3]
    rows, generic_only = select_rows(doc["library"], "gfx906")
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

from rocmrevive.tensile.dat import Solution, TensileFormatError, _read_bytes, _top_level

# Node and predicate type names Tensile's serialisation knows (Tensile/Source/lib/include/Tensile:
# each class's Type()), with "Experimental", seen in Debian's rocBLAS 5.2 libraries.
LIBRARY_TYPES = frozenset({
    "Hardware", "Problem", "ProblemMap", "Matching", "Single", "Placeholder", "DecisionTree",
    "GranularitySelection", "Master"})
PREDICATE_TYPES = frozenset({
    "AIGreaterThanEqual", "AILessThanEqual", "AMDGPU", "AStride", "AlphaValue", "And",
    "ArithmeticUnitCompatible", "BStride", "BatchSize", "BatchSizeEqual", "BatchSizeMultiple",
    "BetaOne", "BetaValue", "BetaZero", "BoundSize", "BoundSizeMultiple",
    "BufferLoadOffsetLimitCheck", "BufferStoreOffsetLimitCheck", "CDStridesEqual", "CEqualsD",
    "CStride", "CUCount", "CUEfficiency", "CUGranularity", "Contraction", "DStride",
    "DeterministicMode", "EqualityMatching", "Experimental", "ExperimentalDTree",
    "ExperimentalGrid", "F32XdlMathOp", "FalsePred", "Fp16AltImpl", "Fp16AltImplRound",
    "Free0SizeMultiple", "Free1SizeMultiple", "FreeSizeA", "FreeSizeB", "GlobalSplitUCheckMinK",
    "HighPrecisionAccumulate", "IsAPU", "KernelLanguageCompatible", "LDCEqualsLDD",
    "LeadingFree0SizesGreaterOrEqual", "LeadingFree1SizesGreaterOrEqual",
    "MaxProblemSizeGreaterThan", "Not", "OperationIdentifier", "OperationIdentifierEqual", "Or",
    "PersistentKernelCheck", "ProblemScaleMeasure", "ProblemSizeEqual", "Processor",
    "SizeEqual", "SizeGreaterThan", "SizeInRange", "SizeLessThan", "SizeMultiple",
    "StochasticRounding", "StrideAEqual", "StrideBEqual", "StrideCEqual", "StrideDEqual",
    "StridedBatched", "TargetProcessor", "Tile0Granularity", "Tile1Granularity", "TruePred",
    "TypesEqual", "WavesPerSIMD", "WorkspaceCheck"})
DISTANCES = frozenset({"Euclidean", "Equality", "JSD", "Manhattan", "Ratio", "Random", "GridBased"})
_WITH_OPERANDS = frozenset({"And", "Or"})
_WITH_OPERAND = frozenset({"Not", "AMDGPU"})
MAX_PROBLEMS = 20  # a damaged tree is reported by its first problems, not all of them


@dataclass(frozen=True)
class TreeWalk:
    """What a library node leads to: placeholder names, solution indices, and what is wrong."""

    placeholders: tuple[str, ...]
    indices: frozenset[int]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class TensileDat:
    """A whole Tensile ``.dat``: its solutions (as ``Solution``) and its library node tree."""

    solutions: tuple[Solution, ...]
    library: Any

    @property
    def indices(self) -> set[int]:
        return {s.index for s in self.solutions}


# A master library built without lazy loading holds every architecture's solutions: Debian's
# rocBLAS 2.47 TensileLibrary.dat is 117 MB, past dat.MAX_DAT (placeholders stay under it).
MAX_MASTER = 192 << 20


def read_dat(path: Path, data: bytes | None = None, max_size: int | None = None) -> TensileDat:
    """Both halves of a ``.dat``, solutions streamed one at a time (2.47's single
    ``TensileLibrary.dat`` holds 56,980). Raises FileNotFoundError, or TensileFormatError for a
    damaged or foreign file."""
    if data is None:
        data = _read_bytes(path) if max_size is None else _read_bytes(path, max_size)
    solutions: list[Solution] | None = None
    library: Any = None
    for key, u in _top_level(path, data):
        try:
            if key == "solutions" and solutions is None:
                solutions = [Solution.from_msgpack(u.unpack()) for _ in range(u.read_array_header())]
            elif key == "library" and library is None:
                library = u.unpack()
            else:
                u.skip()
        except Exception as exc:  # msgpack raises several types; a bad solution ValueError
            raise TensileFormatError(f"{path} is truncated or damaged (in {key!r}: {exc})") from exc
    if solutions is None:
        raise TensileFormatError(f"{path} has no 'solutions' list: not a Tensile library")
    if not isinstance(library, dict):
        raise TensileFormatError(f"{path} has no 'library' map: not a Tensile library")
    return TensileDat(tuple(solutions), library)


def tree_problems(library: Any, solutions: set[int] | None) -> list[str]:
    """Why Tensile cannot build ``library`` (first problems first; [] when it can). With
    ``solutions`` (the file's solution indices), every index a node names must be one of them."""
    return list(walk_tree(library, solutions).problems)


def walk_tree(library: Any, solutions: set[int] | None = None) -> TreeWalk:
    """The placeholders and solution indices under ``library``, and its problems."""
    w = _Walker(solutions)
    w.library(library, "library")
    return TreeWalk(tuple(dict.fromkeys(w.placeholders)), frozenset(w.indices), tuple(w.problems))


def predicate_processors(pred: Any) -> set[str]:
    """The ``Processor`` values a hardware predicate names (``AMDGPU`` → ``And`` → ``Processor``)."""
    out: set[str] = set()
    stack = [pred]
    while stack:
        x = stack.pop()
        if isinstance(x, dict):
            if x.get("type") == "Processor" and isinstance(x.get("value"), str):
                out.add(x["value"])
            else:
                stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return out


def select_rows(library: Any, processor: str) -> tuple[list[dict], bool]:
    """The rows of a ``Hardware`` root that ``processor`` reaches: Tensile tries every row whose
    predicate holds, in order, until one yields a solution (ExactLogicLibrary), so those naming
    the processor and those naming none (``TruePred``: the generic fallback) both count. The flag
    says no row names the processor: only the generic fallback serves it. A root that is not
    ``Hardware`` is one row for every GPU."""
    if not isinstance(library, dict) or library.get("type") != "Hardware":
        return [{"predicate": {"type": "TruePred"}, "library": library}], False
    rows = [r for r in library.get("rows") or [] if isinstance(r, dict)]
    named = [processor in predicate_processors(r.get("predicate")) for r in rows]
    reached = [r for r, n in zip(rows, named) if n or not predicate_processors(r.get("predicate"))]
    return reached, bool(reached) and not any(named)


def solution_index(obj: Any) -> int | None:
    """A solution's ``index`` (what the nodes refer to), or None when it has none."""
    idx = obj.get("index") if isinstance(obj, dict) else None
    return idx if isinstance(idx, int) and not isinstance(idx, bool) else None


class _Walker:
    def __init__(self, solutions: set[int] | None):
        self.solutions = solutions
        self.placeholders: list[str] = []
        self.indices: set[int] = set()
        self.problems: list[str] = []

    def bad(self, where: str, what: str) -> None:
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(f"{where}: {what}")

    def index(self, where: str, value: Any) -> None:
        if not isinstance(value, int) or isinstance(value, bool):
            self.bad(where, f"solution index {value!r} is not a number")
            return
        self.indices.add(value)
        if self.solutions is not None and value not in self.solutions:
            self.bad(where, f"names solution {value}, which is not in the file's solution list "
                            "(Tensile: 'Invalid solution index')")

    def library(self, node: Any, where: str) -> None:
        stack = [(node, where)]
        while stack:
            n, at = stack.pop()
            for child in self._node(n, at):
                stack.append(child)

    def _node(self, n: Any, at: str) -> Iterator[tuple[Any, str]]:
        kind = n.get("type") if isinstance(n, dict) else None
        if not isinstance(kind, str):
            self.bad(at, "a library node without a type")
            return
        if kind not in LIBRARY_TYPES:
            self.bad(at, f"library node type {kind!r} is not one Tensile knows (Tensile: 'Unknown subclass')")
            return
        if kind in ("Hardware", "Problem"):
            yield from self._rows(n, f"{at}/{kind}")
        elif kind == "ProblemMap":
            self.predicate(n.get("property"), f"{at}/ProblemMap.property")
            table = n.get("map")
            if not isinstance(table, dict):
                self.bad(at, "a ProblemMap without its map")
                return
            yield from ((v, f"{at}/ProblemMap[{k}]") for k, v in table.items())
        elif kind == "Matching":
            self._matching(n, f"{at}/Matching")
        elif kind == "Single":
            self.index(f"{at}/Single", n.get("index"))
        elif kind == "Placeholder":
            if not isinstance(n.get("value"), str) or not n["value"]:
                self.bad(at, "a Placeholder without a file name")
            else:
                self.placeholders.append(n["value"])
        elif kind == "DecisionTree":
            yield from self._trees(n, f"{at}/DecisionTree")

    def _rows(self, n: dict, at: str) -> Iterator[tuple[Any, str]]:
        rows = n.get("rows")
        if not isinstance(rows, list):
            self.bad(at, "no rows")
            return
        for i, row in enumerate(rows):
            if not isinstance(row, dict) or "predicate" not in row or "library" not in row:
                self.bad(f"{at}.rows[{i}]", "a row without its predicate and library")
                continue
            self.predicate(row["predicate"], f"{at}.rows[{i}].predicate")
            yield row["library"], f"{at}.rows[{i}]"

    def _matching(self, n: dict, at: str) -> None:
        props, table = n.get("properties"), n.get("table")
        if not isinstance(props, list) or not props:
            self.bad(at, "a matching table without properties (Tensile: 'at least one property')")
        else:
            for i, p in enumerate(props):
                self.predicate(p, f"{at}.properties[{i}]")
        if n.get("distance") not in DISTANCES:
            self.bad(at, f"distance {n.get('distance')!r} is not one Tensile knows")
        if not isinstance(table, list):
            self.bad(at, "no table")
            return
        width = len(props) if isinstance(props, list) else None
        # tables hold thousands of entries: checked in bulk, the first offender reported
        bad = next((i for i, e in enumerate(table) if not isinstance(e, dict) or not isinstance(e.get("key"), list)
                    or (width and len(e["key"]) != width)), None)
        if bad is not None:
            self.bad(f"{at}.table[{bad}]", "an entry whose key does not match the properties")
            return
        values = [e.get("index", e.get("value")) for e in table]
        numbers = {v for v in values if type(v) is int}  # bool is not an index
        odd = next((v for v in values if type(v) is not int), None)
        if odd is not None or (values and None in values):
            self.index(f"{at}.table", odd)
        self.indices |= numbers
        if self.solutions is not None and not numbers <= self.solutions:
            first = next(i for i, v in enumerate(values) if v not in self.solutions)
            self.index(f"{at}.table[{first}]", values[first])

    def _trees(self, n: dict, at: str) -> Iterator[tuple[Any, str]]:
        trees = n.get("trees")
        if not isinstance(n.get("features"), list) or not isinstance(trees, list):
            self.bad(at, "a decision tree without features or trees")
            return
        for i, t in enumerate(trees):
            if not isinstance(t, dict) or not isinstance(t.get("tree"), list) or "value" not in t:
                self.bad(f"{at}.trees[{i}]", "a tree without its nodes and value")
                continue
            yield t["value"], f"{at}.trees[{i}]"
        if "nullValue" in n:
            yield n["nullValue"], f"{at}.nullValue"

    def predicate(self, p: Any, at: str) -> None:
        stack = [(p, at)]
        while stack:
            x, where = stack.pop()
            kind = x.get("type") if isinstance(x, dict) else None
            if not isinstance(kind, str):
                self.bad(where, "a predicate without a type")
                continue
            if kind not in PREDICATE_TYPES:
                self.bad(where, f"predicate type {kind!r} is not one Tensile knows (Tensile: 'Unknown subclass')")
            elif kind in _WITH_OPERANDS:
                ops = x.get("value")
                if not isinstance(ops, list):
                    self.bad(where, f"an {kind} predicate without operands")
                    continue
                stack.extend((o, f"{where}.{kind}[{i}]") for i, o in enumerate(ops))
            elif kind in _WITH_OPERAND:
                stack.append((x.get("value"), f"{where}.{kind}"))
            elif kind == "Processor" and not isinstance(x.get("value"), str):
                self.bad(where, "a Processor predicate without a processor")
