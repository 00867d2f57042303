"""Will this host library load here, and does it carry device code for these GPUs? The question
``ldd -r`` answers, from the ELF files alone (nothing is run), plus the device-code coverage.

    v = check_library(Root("/"), Path("/tmp/stage/librocsolver.so.0"),
                      search_dirs=["/opt/rocm-6.4.3/lib"], origin="/opt/rocm-6.4.3/lib",
                      targets=[TargetId.parse("gfx906:sramecc+:xnack-")], rocm_version="6.4.3")
    v.ok, v.lines      # False, ['needs GLIBC_2.38 (libc.so.6), this host has up to GLIBC_2.36']

The checks, each over the whole closure of needed libraries (breadth-first, as the loader maps it):
  * every DT_NEEDED name resolves (``loader.py``) to a file whose SONAME is that name;
  * every required symbol version (``.gnu.version_r``) is defined (``.gnu.version_d``) by the
    library it is required from — the loader refuses to start otherwise;
  * every non-weak undefined dynamic symbol is exported, with a matching version, by an object in
    the lookup scope (glibc ``dl-lookup.c`` matching rules);
  * the device code covers each detected target (``codeobj.inspect``), generic targets included;
    code object v6 (which generic targets need) needs a ROCm >= 6.3 runtime (docs/formats.md §8).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rocmrevive.codeobj.targetid import TargetId
from rocmrevive.hostlib.elfdyn import DynamicError, UndefinedSymbol
from rocmrevive.hostlib.loader import Closure, load_closure
from rocmrevive.rootfs import Root

# Code object v6 (and so every generic target) loads from ROCm 6.3 on (llvm PR #130963;
# docs/formats.md §8.3).
COV6_MIN_ROCM = "6.3"
MAX_SYMBOL_LINES = 6  # undefined-symbol lines per verdict; the JSON details hold all


@dataclass
class AbiVerdict:
    """The answer: ``ok``, short ``lines`` saying why not (empty when ok), ``warnings`` that do
    not stop loading, and ``details`` for JSON."""
    library: str
    soname: str | None
    ok: bool
    lines: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    details: dict = field(default_factory=dict)

    @property
    def summary(self) -> str:
        name = self.soname or os.path.basename(self.library)
        if not self.ok:
            return f"{name}: refused — " + "; ".join(self.lines[:3]) + \
                (f" (+{len(self.lines) - 3} more)" if len(self.lines) > 3 else "")
        d = self.details
        cov = d.get("coverage") or {}
        tail = ""
        if cov.get("targets"):
            tail = "; " + ", ".join(f"{c['target']} via {', '.join(c['by'])}" for c in cov["targets"])
        return (f"{name}: loads ({len(d.get('needed', []))} libraries, "
                f"{d.get('symbols_resolved', 0)} symbols resolved{tail})")

    def to_json(self) -> dict:
        return {"library": self.library, "soname": self.soname, "ok": self.ok,
                "lines": self.lines, "warnings": self.warnings, **self.details}


def check_library(root: Root, lib_path: Path, *, search_dirs: list[str],
                  targets: list[TargetId] | None = None, rocm_version: str | None = None,
                  origin: str | None = None) -> AbiVerdict:
    """Check ``lib_path`` (a real path: inside the root, or a staged copy outside it) as if it
    were loaded on the machine under ``root``. ``search_dirs`` are the tree's library
    directories (machine paths). ``origin`` is the machine directory the library will live in
    (its ``$ORIGIN``); by default the directory it is in when that is inside the root.
    ``targets``: the detected GPUs; ``rocm_version``: the tree's, for what its runtime loads."""
    lib_real = Path(lib_path)
    inside = root.is_host or str(lib_real.absolute()).startswith(str(root.base) + os.sep)
    if not inside and not lib_real.exists() and root.path(lib_real).exists():
        lib_real, inside = root.path(lib_real), True  # a machine path was given
    machine = root.machine_path(lib_real) if inside else str(lib_real)
    if origin is None and inside:
        origin = os.path.dirname(machine)
    host = "this host" if root.is_host else "this root"

    try:
        closure = load_closure(root, lib_real, machine_path=machine, origin=origin,
                               search_dirs=list(search_dirs))
    except DynamicError as exc:
        return AbiVerdict(machine, None, False, [str(exc).replace(str(lib_real), machine)],
                          details={"error": "not-loadable"})
    top = closure.loaded[0]
    v = AbiVerdict(machine, top.obj.soname, True)
    if origin is None and any("$ORIGIN" in e or "${ORIGIN}" in e for e in top.obj.runpath + top.obj.rpath):
        v.warnings.append(f"{top.label} uses $ORIGIN but lies outside the root; pass origin= "
                          f"(the directory it will be installed in)")
    v.warnings.extend(closure.notes)

    _needed_lines(v, closure)
    missing_versions = _version_lines(v, closure, host)
    undefined, resolved = _symbol_lines(v, closure, missing_versions)

    v.details.update({
        "bind_now": top.obj.bind_now,
        "needed": [lo.to_json() for lo in closure.loaded[1:]] + [m.to_json() for m in closure.missing],
        "soname_mismatch": [{"name": n, "path": p, "soname": s, "required_by": r}
                            for n, p, s, r in closure.soname_mismatch],
        "versions_missing": missing_versions,
        "undefined_symbols": undefined,
        "symbols_resolved": resolved,
    })
    if targets is not None:
        v.details["coverage"] = _coverage(v, lib_real, targets, rocm_version)
    v.ok = not v.lines
    return v


# ----------------------------------------------------------------------------------------
# needed libraries

def _needed_lines(v: AbiVerdict, closure: Closure) -> None:
    for m in closure.missing:
        if m.bad_file:
            by = "" if m.required_by == closure.loaded[0].label else f" (for {m.required_by})"
            v.lines.append(f"needs {m.name}{by}, but {m.bad_file} (the loader stops at it)")
            continue
        shown = m.searched[:6]
        more = f", … ({len(m.searched) - 6} more)" if len(m.searched) > 6 else ""
        by = "" if m.required_by == closure.loaded[0].label else f" (for {m.required_by})"
        skipped = f"; passed over {', '.join(m.skipped)}" if m.skipped else ""
        v.lines.append(f"needs {m.name}{by}, not found in {', '.join(shown)}{more}{skipped}")
    for name, path, soname, by in closure.soname_mismatch:
        who = "" if by == closure.loaded[0].label else f" (for {by})"
        v.lines.append(f"needs {name}{who}, but {path} is {soname} (its SONAME): a renamed link, "
                       f"not that library")


# ----------------------------------------------------------------------------------------
# symbol versions

def _version_key(name: str) -> tuple[str, tuple[int, ...]] | None:
    """``GLIBC_2.38`` -> ("GLIBC_", (2, 38)); None for names without a numeric tail."""
    m = re.match(r"^(.*?_)(\d+(?:\.\d+)*)$", name)
    if not m:
        return None
    return m.group(1), tuple(int(x) for x in m.group(2).split("."))


def _version_lines(v: AbiVerdict, closure: Closure, host: str) -> list[dict]:
    missing: list[dict] = []
    for lo in closure.loaded:
        for need in lo.obj.verneeds:
            prov = closure.find(need.file)
            if prov is None:
                if not any(m.name == need.file for m in closure.missing):
                    v.warnings.append(f"{lo.label} requires version {need.name} of {need.file}, "
                                      f"which nothing in its closure is called")
                continue
            defined = set(prov.obj.verdefs.values())
            if prov.obj.base_version:
                defined.add(prov.obj.base_version)
            if not defined:
                v.warnings.append(f"{prov.label}: no version information available "
                                  f"(required by {lo.label})")
                continue
            if need.name in defined:
                continue
            if need.weak:
                v.warnings.append(f"weak version {need.name} of {need.file} not found "
                                  f"(required by {lo.label})")
                continue
            key = _version_key(need.name)
            have = None
            if key:
                same = [(k[1], n) for n in defined if (k := _version_key(n)) and k[0] == key[0]]
                have = max(same)[1] if same else None
            missing.append({"version": need.name, "file": need.file, "path": prov.machine_path,
                            "required_by": lo.label, "required_by_path": lo.machine_path,
                            "available_max": have})
    # one line per providing library and version family; the checked library's own first
    top = closure.loaded[0].label
    groups: dict[tuple[str, str], list[dict]] = {}
    for m in missing:
        key = _version_key(m["version"])
        groups.setdefault((m["file"], key[0] if key else m["version"]), []).append(m)
    order = sorted(groups, key=lambda g: (all(m["required_by"] != top for m in groups[g]), g))
    for g in order:
        ms = groups[g]
        file = g[0]
        versions = sorted({m["version"] for m in ms},
                          key=lambda n: (_version_key(n) or ("", ()))[1])
        by = sorted({m["required_by"] for m in ms})
        who = "" if by == [top] else "; required by " + ", ".join(by)
        have = ms[0]["available_max"]
        if have is None:
            tail = f", {file} here does not define it"
        elif file == "libc.so.6":
            tail = f", {host} has up to {have}"
        else:
            tail = f", {host}'s {file} has up to {have}"
        v.lines.append(f"needs {', '.join(versions)} ({file}{who}){tail}")
    return missing


# ----------------------------------------------------------------------------------------
# undefined symbols (glibc dl-lookup.c check_match, versioned and unversioned references)

def _matches(sym: UndefinedSymbol, defs: list[tuple[str | None, bool, int]], has_versym: bool) -> bool:
    if not has_versym:
        return True
    if sym.version is not None:
        for ver, hidden, ndx in defs:
            if ver == sym.version:
                return True
            if ndx <= 1 and not hidden:  # an unversioned definition serves a versioned reference
                return True
        return False
    visible = 0
    for _ver, hidden, ndx in defs:
        if ndx < 3:  # the base or the first defined version: glibc takes it for an unversioned reference
            return True
        if not hidden:
            visible += 1
    return visible == 1


def _symbol_lines(v: AbiVerdict, closure: Closure, missing_versions: list[dict]) -> tuple[list[dict], int]:
    wanted: set[str] = set()
    for lo in closure.loaded:
        wanted.update(s.name for s in lo.obj.undefined if not s.weak and s.relocated)
    defs = [(lo, lo.obj.definitions(wanted)) for lo in closure.loaded]
    missing_v = {(m["file"], m["version"]) for m in missing_versions}
    missing_libs = {m.name for m in closure.missing}
    unresolved: list[dict] = []
    resolved = 0
    for lo in closure.loaded:
        for sym in lo.obj.undefined:
            if sym.weak or not sym.relocated:  # the loader never looks these up
                continue
            if any(sym.name in d and _matches(sym, d[sym.name], p.obj.has_versym) for p, d in defs):
                resolved += 1
                continue
            if (sym.file, sym.version) in missing_v:
                reason = "version-missing"
            elif sym.file in missing_libs or (sym.file is None and missing_libs):
                reason = "library-missing"
            else:
                reason = "not-exported"
            unresolved.append({"symbol": sym.name, "version": sym.version, "file": sym.file,
                               "required_by": lo.label, "required_by_path": lo.machine_path,
                               "reason": reason})
    shown = 0
    for u in unresolved:
        if u["reason"] == "version-missing":
            continue  # the version line says it
        if shown == MAX_SYMBOL_LINES:
            rest = sum(1 for x in unresolved if x["reason"] != "version-missing") - shown
            v.lines.append(f"… and {rest} more undefined symbols (see the JSON details)")
            break
        name = u["symbol"] + (f"@{u['version']}" if u["version"] else "")
        if u["reason"] == "library-missing":
            v.lines.append(f"undefined symbol {name} ({u['required_by']}) not exported by any library "
                           f"found (one of the missing libraries may define it)")
        else:
            v.lines.append(f"undefined symbol {name} ({u['required_by']}) not exported by any "
                           f"needed library")
        shown += 1
    return unresolved, resolved


# ----------------------------------------------------------------------------------------
# device code

def _ver_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text)[:3])


def _coverage(v: AbiVerdict, lib_real: Path, targets: list[TargetId], rocm_version: str | None) -> dict:
    from rocmrevive.codeobj.inspect import inspect_file  # noqa: PLC0415 — the code-object core, loaded only when a library is checked

    rep = inspect_file(lib_real)
    out: dict = {"kind": rep.kind, "library_targets": rep.targets, "targets": []}
    name = v.soname or lib_real.name
    # problems reading the device code do not decide coverage (the entries found do); they are
    # shown once each, with a count
    counts: dict[str, int] = {}
    for p in rep.problems:
        counts[p] = counts.get(p, 0) + 1
    for p, n in counts.items():
        v.warnings.append(f"device code of {name}: {p}" + (f" ({n} times)" if n > 1 else ""))
    out["problems"] = rep.problems[:50]
    if rep.kind == "host-elf-no-device-code":
        out["note"] = "host-only library: carries no device code, so no target can be missing"
        return out
    if rep.kind != "host-elf":
        v.lines.append(f"{name}: not a host library with device code ({rep.kind})")
        return out
    known = _container_versions(rep.entries)
    unknown = [e for e in rep.entries if _co_version(e, known) is None
               and any(e.target.can_load_on(t) for t in targets)]
    if unknown and (rocm_version is None or _ver_tuple(rocm_version) < _ver_tuple(COV6_MIN_ROCM)):
        # only then does the code object version decide: read the compressed bundles in full
        rep = inspect_file(lib_real, deep=True)
        known = _container_versions(rep.entries)
    have = ", ".join(rep.targets) or "none"
    for t in targets:
        loads = [e for e in rep.entries if e.target.can_load_on(t)]
        by = sorted({str(e.target) for e in loads})
        cell: dict[str, Any] = {"target": str(t), "covered": False, "by": by,
                "co_versions": sorted({_co_version(e, known) or 0 for e in loads}), "min_rocm": None}
        out["targets"].append(cell)
        if not loads:
            v.lines.append(f"no device code for {t} in {name} (it has {have})")
            continue
        # the entries the runtime could use without a code object v6 loader
        versions = [_co_version(e, known) for e in loads]
        if any(x is not None and x < 6 for x in versions):
            cell["covered"] = True
            continue
        if None in versions:
            v.lines.append(f"{t}: the code object version of {name}'s device code is unreadable")
            continue
        cell["min_rocm"] = COV6_MIN_ROCM
        kinds = ", ".join(by)
        if rocm_version is None:
            v.lines.append(f"{t}: {name} has only code object v6 ({kinds}), which needs ROCm >= "
                           f"{COV6_MIN_ROCM}; the tree's ROCm version is unknown")
        elif _ver_tuple(rocm_version) < _ver_tuple(COV6_MIN_ROCM):
            v.lines.append(f"{t}: {name} has only code object v6 ({kinds}), which needs ROCm >= "
                           f"{COV6_MIN_ROCM}; this tree is {rocm_version}")
        else:
            cell["covered"] = True
    return out


def _co_version(entry, by_container: dict[str, int]) -> int | None:
    if entry.co_version is not None:
        return entry.co_version
    if entry.target.is_generic:
        return 6  # generic targets exist only from code object v6 on
    return by_container.get(entry.container)


def _container_versions(entries) -> dict[str, int]:
    """The code object version of each bundle, from the entries whose ELF header was read
    (one compile writes one version for every target; a compressed bundle's entries past its
    first 64 KiB are listed from the entry table alone)."""
    out: dict[str, int] = {}
    for e in entries:
        if e.co_version is not None:
            out.setdefault(e.container, e.co_version)
    return out
