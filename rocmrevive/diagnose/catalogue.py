"""The catalogue of messages a gfx906 owner can meet (``data/messages.toml``), read from the code of the
runtimes that print them: rocBLAS/Tensile, hipBLASLt, HIP (CLR), ROCr, MIOpen, RCCL, PyTorch, llama.cpp,
Ollama, vLLM, Triton and the amdgpu/KFD kernel driver. Each entry is the source's format string with its
conversions named; the line pattern is built from it (literal text escaped, each named part matched by its
kind), so a message is recognised by construction, whatever path, version or GPU it carries.

    entry = by_id()["hsa-incompatible-kernel"]
    entry.filled()            # the format with its example values: a line the runtime could print
    match_entry("HSA Error:  Incompatible kernel and userspace, Vega 20 disabled. Upgrade amdgpu.", Context())

An entry with ``rule`` is answered by that rule of ``diagnose/explain.py`` (its answer needs code: paths,
the GPU target, which processors rocmrevive has files for); the others are answered from their data.
"""
from __future__ import annotations

import re
import string
import sys
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources

from rocmrevive.diagnose.diagnosis import Context, Diagnosis, Severity, arch_of
from rocmrevive.diagnose.families import check_command

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

# what each named part of a format matches (by the part's name); any other name: any text
FIELD_KINDS: dict[str, str] = {
    "path": r"\S+?", "file": r"\S+?", "glob": r"\S+?", "url": r"\S+",
    "arch": r"(?:amdgcn-amd-amdhsa-[a-z]*-)?gfx[0-9a-f]+(?::[a-z]+[+-])*", "isa": r"\S+", "isas": r".*",
    "code": r"-?[0-9]+", "node": r"[0-9]+", "line": r"[0-9]+", "dev": r"[0-9]+", "gpu": r"\S+", "ts": r"[0-9]+",
    "err": r".+?", "ver": r"[0-9][0-9.]*", "pci": r"[0-9a-fA-F:.]+", "pci_id": r"[0-9a-f]{4}:[0-9a-f]{4}",
    "addr": r"\S+?", "handle": r"\S+?", "queue": r"\S+", "hexcode": r"(?:0x)?[0-9a-fA-F]+",
    "op": r"[A-Z][A-Z0-9_]*", "kernel": r"\S+", "mib": r"[0-9.]+", "size": r"[0-9.]+ [KMGT]?i?B",
    "func": r"\S+", "symbol": r"[^'`@]+", "status": r"HSA_STATUS_[A-Z_]+", "ring": r"\S+",
}
_ANY = r".+?"
_LAYERS = range(6)
EPILOGUE = 5  # the layer of lines that only follow an error (an abort, a note, where it happened)
SEVERITIES = {s.value for s in Severity}


@dataclass(frozen=True)
class Entry:
    id: str
    component: str
    versions: str
    source: str
    format: str
    example: dict
    severity: Severity
    layer: int
    meaning: str
    action: str
    fixable: bool
    why_not: str | None = None
    rule: str | None = None
    explains: tuple[str, ...] = ()
    when: tuple[dict, ...] = ()
    pattern_text: str | None = None
    covers: int = 1                # how many of the source's formats this entry's pattern recognises
    check_path: bool = False       # the action starts with the command that checks the file the line names
    causes: tuple[dict, ...] = ()  # where the sources give the message several causes: each with the check that tells it
    needs: str | None = None       # a pattern the paste must hold elsewhere: the line alone names no program (a bare stoi)
    needs_example: str | None = None  # a line of the paste that shows it, for the entry's tests
    alone: bool = True             # false: names no failure by itself (the shell's abort): a paste holding only it is unanswered
    pattern: re.Pattern = field(default=re.compile(""), compare=False)

    @property
    def answer_rule(self) -> str:
        """The rule id of the diagnosis that answers this message."""
        return self.rule or self.id

    @property
    def source_repo(self) -> str | None:
        return self.source.split(":", 1)[0] if not self.source.startswith("closed:") else None

    def filled(self) -> str:
        """The format with its example values: a line the component can print."""
        return self.format.format(**self.example)


def fields_of(fmt: str) -> list[str]:
    return [name for _, name, _, _ in string.Formatter().parse(fmt) if name is not None]


def pattern_of(fmt: str) -> str:
    """The regular expression of a format: its literal text (runs of blanks as ``\\s+``), each named
    part by its kind (FIELD_KINDS), the last part greedy."""
    parts = list(string.Formatter().parse(fmt))
    out, seen = [], set()
    for i, (literal, name, _, _) in enumerate(parts):
        out.append(r"\s+".join(re.escape(w) for w in re.split(r"\s+", literal)) if literal.strip() else
                   (r"\s*" if literal else ""))
        if name is None:
            continue
        kind = FIELD_KINDS.get(name, _ANY)
        last = i == len(parts) - 1 or all(not lit.strip() and n is None for lit, n, _, _ in parts[i + 1:])
        if last and kind.endswith("+?"):
            kind = kind[:-1]
        out.append(f"(?P<{name}>{kind})" if name not in seen else f"(?P={name})")
        seen.add(name)
    return "".join(out).strip() or re.escape(fmt)


def _entry(raw: dict) -> Entry:
    pat = raw.get("pattern")
    e = Entry(
        id=raw["id"], component=raw["component"], versions=raw["versions"], source=raw["source"],
        format=raw["format"], example=dict(raw.get("example", {})), severity=Severity(raw["severity"]),
        layer=int(raw["layer"]), meaning=raw["meaning"], action=raw["action"], fixable=bool(raw["fixable"]),
        why_not=raw.get("why_not"), rule=raw.get("rule"), explains=tuple(raw.get("explains", ())),
        when=tuple(raw.get("when", ())), pattern_text=pat, covers=int(raw.get("covers", 1)),
        check_path=bool(raw.get("check_path", False)),
        causes=tuple(dict(c) for c in raw.get("causes", ())), needs=raw.get("needs"),
        needs_example=raw.get("needs_example"), alone=bool(raw.get("alone", True)))
    object.__setattr__(e, "pattern", re.compile(pat if pat else pattern_of(e.format)))
    return e


@lru_cache(maxsize=1)
def _regex_parser():
    """The standard library's regular-expression parser (re._parser since Python 3.11, sre_parse before)."""
    import importlib  # noqa: PLC0415 - once, when the catalogue loads

    for name in ("re._parser", "sre_parse"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def required_literal(pattern: re.Pattern, shortest: int = 4) -> str | None:
    """The longest run of literal characters in the pattern's top-level sequence (its groups opened): text every match holds,
    so a line without it needs no search. None where there is none that long, where the pattern ignores case,
    or where the parser is not there (every line is searched then, as before)."""
    parser = _regex_parser()
    if parser is None or pattern.flags & re.IGNORECASE:
        return None
    try:
        tree = parser.parse(pattern.pattern)
    except Exception:  # noqa: BLE001 - a pattern compile() took: no key, the search stays
        return None
    if tree.state.flags & re.IGNORECASE:
        return None
    best = run = ""
    for op, arg in _top_level(tree, parser):
        if op is parser.LITERAL:
            run += chr(arg)
        else:
            best, run = max(best, run, key=len), ""
    best = max(best, run, key=len)
    return best if len(best) >= shortest else None


def _top_level(seq, parser):
    """The top-level sequence with its groups opened: a group matched once is part of the sequence (the
    literal in ``(?P<path>.../libdrm/amdgpu\\.ids)`` is every match's too); a group that changes the flags
    stays closed."""
    for op, arg in seq:
        if op is parser.SUBPATTERN and not arg[1] and not arg[2]:
            yield from _top_level(arg[3], parser)
        else:
            yield op, arg


@lru_cache(maxsize=1)
def entries() -> tuple[Entry, ...]:
    data = tomllib.loads(resources.files("rocmrevive").joinpath("data/messages.toml").read_text())
    return tuple(_entry(raw) for raw in data["message"])


@lru_cache(maxsize=1)
def answered_from_data() -> tuple[tuple[Entry, str | None], ...]:
    """The entries answered from their data, each with no key: every line is searched (a short paste)."""
    return tuple((e, None) for e in entries() if e.rule is None)


@lru_cache(maxsize=1)
def keyed_from_data() -> tuple[tuple[Entry, str | None], ...]:
    """The same entries, each with its pattern's literal key (``required_literal``), made on the first long paste:
    reading the keys costs about 40 ms once, each saves a search in every line that lacks it."""
    return tuple((e, required_literal(e.pattern)) for e, _ in answered_from_data())


@dataclass(frozen=True)
class Source:
    """A component's source files, and how many formats they hold that concern a gfx906 owner."""

    component: str
    repo: str
    files: tuple[str, ...]
    formats: int | None      # None: searched for the catalogue's formats, not counted in full
    counted: str

    def holds(self, e: Entry) -> bool:
        """Whether entry ``e`` comes from these files."""
        if self.repo == "closed":
            return e.source.startswith("closed:")
        if self.repo == "*":
            return e.source in self.files
        repo, _, path = e.source.partition(":")
        return repo == self.repo and path in self.files

    def in_catalogue(self) -> int:
        """How many of the source's formats the catalogue recognises."""
        return sum(e.covers for e in entries() if self.holds(e))


@lru_cache(maxsize=1)
def sources() -> tuple[Source, ...]:
    data = tomllib.loads(resources.files("rocmrevive").joinpath("data/messages.toml").read_text())
    return tuple(Source(r["component"], r["repo"], tuple(r["files"]), r.get("formats"), r["counted"])
                 for r in data["source"])


def coverage_table() -> str:
    """The coverage table of docs/explain.md (Markdown), from the catalogue."""
    rows = ["| component | source | formats that concern a gfx906 owner | in the catalogue |",
            "|---|---|---:|---:|"]
    for s in sources():
        where = s.repo if s.repo not in ("*", "closed") else ("various" if s.repo == "*" else "closed source")
        counted = str(s.formats) if s.formats is not None else "not counted"
        rows.append(f"| {s.component} | {where} | {counted} | {s.in_catalogue()} |")
    total = sum(s.in_catalogue() for s in sources())
    rows.append(f"| **all** | | | **{total}** ({len(entries())} entries) |")
    return "\n".join(rows)


def problems() -> list[str]:
    """What is wrong with the catalogue's data: an entry without a source (or one no [[source]] row
    holds), an example that does not fill its format, unknown ids in ``explains``, bad layers."""
    out = []
    ids = [e.id for e in entries()]
    out += [f"{i}: id used twice" for i in sorted({i for i in ids if ids.count(i) > 1})]
    for e in entries():
        if not re.fullmatch(r"[\w.-]+/[\w.-]+:\S+|closed:.+", e.source or ""):
            out.append(f"{e.id}: no source (owner/repo:path or closed:<product>)")
        elif not any(s.holds(e) for s in sources()):
            out.append(f"{e.id}: source {e.source} is in no [[source]] row")
        if sorted(set(fields_of(e.format))) != sorted(e.example):
            out.append(f"{e.id}: example {sorted(e.example)} does not fill format fields {fields_of(e.format)}")
        out += [f"{e.id}: explains unknown {t}" for t in e.explains if t not in ids]
        if e.layer not in _LAYERS:
            out.append(f"{e.id}: layer {e.layer} outside 0-5")
        if not e.fixable and not e.why_not and e.rule is None:
            out.append(f"{e.id}: neither fixable nor a why_not")
        for c in e.causes:
            if not {"id", "cause", "check"} <= set(c) <= {"id", "cause", "check", "from"} or \
                    not all(isinstance(v, str) and v for v in c.values()) or c.get("from", "queue") not in ("queue", "call"):
                out.append(f"{e.id}: a cause needs an id, a cause and the check that tells it apart (and 'from' "
                           "queue or call, where only one of them gives it)")
        if e.needs and not (e.needs_example and re.search(e.needs, e.needs_example)):
            out.append(f"{e.id}: needs a paste line (needs_example) that its 'needs' pattern finds")
        if len(e.causes) == 1:
            out.append(f"{e.id}: one cause is no list of causes (write it in meaning)")
        if e.severity == Severity.HARMLESS and not e.action.startswith("nothing"):
            out.append(f"{e.id}: harmless, but its action does not start with 'nothing'")
    return out


@lru_cache(maxsize=1)
def by_id() -> dict[str, Entry]:
    return {e.id: e for e in entries()}


@lru_cache(maxsize=1)
def by_rule() -> dict[str, Entry]:
    """The first entry of each answering rule id (its layer and the lines it explains)."""
    out: dict[str, Entry] = {}
    for e in entries():
        out.setdefault(e.answer_rule, e)
    return out


@lru_cache(maxsize=1)
def explained_by() -> dict[str, frozenset[str]]:
    """Rule id -> the rule ids whose presence in a paste explains it (its root causes)."""
    out: dict[str, set[str]] = {}
    for e in entries():
        for target in e.explains:
            t = by_id()[target].answer_rule if target in by_id() else target
            out.setdefault(t, set()).add(e.answer_rule)
    return {k: frozenset(v) for k, v in out.items()}


def layer_of(rule: str) -> int:
    e = by_rule().get(rule)
    return e.layer if e else 3  # a family answer: a library or application failure


def match_entry(line: str, ctx: Context) -> Diagnosis | None:
    """The diagnosis of a line by a catalogue entry answered from its data, or None."""
    for e, key in keyed_from_data() if ctx.long else answered_from_data():
        if (key is not None and key not in line) or (e.needs and not ctx.holds(e.needs)):
            continue
        m = e.pattern.search(line)
        if m:
            return diagnosis(e, m, ctx)
    return None


def diagnosis(e: Entry, m: re.Match, ctx: Context) -> Diagnosis:
    details = {k: v for k, v in m.groupdict().items() if v and k not in ("arch",)}
    action = e.action
    check = check_command(details.get("path")) if e.check_path else None
    if check:
        action = f"{check} (what it carries, for which GPU); {action}"
    if e.causes:
        details["causes"] = causes_for(e.causes, ctx)
    return Diagnosis(e.id, e.severity, e.component, arch_of(m, ctx), e.meaning, action, e.fixable,
                     e.why_not, details)


def causes_for(causes: tuple[dict, ...], ctx: Context) -> list[dict]:
    """An entry's causes as a diagnosis lists them: where the paste shows a queue's asynchronous error,
    the causes only an API call's status has (``from = "call"``) come last, marked as not this paste's."""
    out = [dict(c) for c in causes]
    if ctx.queue_error:
        for c in out:
            if c.get("from") == "call":
                c["cause"] += " (not this paste's: it shows a GPU queue's asynchronous error, which no API call returns)"
        out.sort(key=lambda c: c.get("from") == "call")
    return out


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"[0-9]+", text)[:3])


def sharpen(d: Diagnosis, ctx: Context) -> Diagnosis:
    """What the paste's context words (the application, the ROCm version) add to a diagnosis: an entry's
    ``when`` rows whose condition holds replace the action or add a note to the cause."""
    e = by_rule().get(d.rule)
    if e is None:
        return d
    for row in e.when:
        if "windows" in row and bool(ctx.windows) != row["windows"]:
            continue
        if "app" in row and row["app"] != ctx.app:
            continue
        if "rocm_from" in row and not (ctx.rocm and _version(ctx.rocm) >= _version(row["rocm_from"])):
            continue
        if "rocm_below" in row and not (ctx.rocm and _version(ctx.rocm) < _version(row["rocm_below"])):
            continue
        if "action" in row:
            d.fix = row["action"]
        if "note" in row:
            d.cause = f"{d.cause}; {row['note']}"
    return d
