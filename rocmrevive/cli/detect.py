"""``rocmrevive detect``: the machine as it is — AMD GPUs, their PCIe topology, ROCm installs
and every rocBLAS copy. Reads files only (sysfs, /dev, /opt, site-packages) under ``--root``.

Exit codes: 0 when at least one gfx906 GPU is present; 3 (NOTHING_SUPPORTED) when there is no
AMD GPU or none is gfx906 — the JSON document is printed either way. The JSON schema is
documented in docs/detect.md.
"""
from __future__ import annotations

from pathlib import Path

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.shown import Lines, stacked
from rocmrevive.cli.ui import UI, Outcome, text_file_option
from rocmrevive.hardware.rocminfo import parse_rocminfo

SHARED_OPTIONS = [
    click.option("--python", "pythons", multiple=True, metavar="PATH",
                 help="A Python interpreter, venv or site-packages to look in for ROCm wheels (repeatable)."),
    click.option("--tree", "trees", multiple=True, metavar="PATH",
                 help="An extra rocBLAS library folder to include (repeatable)."),
    click.option("--rocminfo", "rocminfo_file", type=click.Path(exists=True, dir_okay=False),
                 callback=text_file_option(lambda t: bool(parse_rocminfo(t)), "rocminfo output (no agent in it)"),
                 help="rocminfo output saved to a file: parsed and cross-checked against sysfs."),
    click.option("--deep", is_flag=True,
                 help="Read every code object in each rocBLAS folder for its exact targets (slower)."),
    click.option("--no-search", is_flag=True,
                 help="Do not search common places for Python environments; only --python."),
]


def shared_options(fn):
    for opt in reversed(SHARED_OPTIONS):
        fn = opt(fn)
    return fn


def run_survey(ui: UI, pythons, trees, rocminfo_file, deep, no_search):
    from rocmrevive.trees.select import given_trees
    from rocmrevive.trees.survey import survey

    # each --tree resolved once (trees.select, the one resolver: a typo is exit 2, TheRock's
    # /opt/rocm is its core-X.Y prefix); the survey lists the copies selected in them
    trees = given_trees(ui.root, trees or ())

    text = Path(rocminfo_file).read_text(errors="replace") if rocminfo_file else None
    if deep:
        with ui.progress("reading code objects", None, unit="files") as advance:
            return survey(ui.root, pythons=pythons, trees=trees, rocminfo_text=text, deep=True,
                          common_envs=not no_search, progress=advance)
    return survey(ui.root, pythons=pythons, trees=trees, rocminfo_text=text, common_envs=not no_search)


def nothing_message(s) -> str | None:
    hw = s.hardware
    where = "/" if s.root.is_host else str(s.root.base)
    if not hw.gpus:
        return (f"no AMD GPU found under {where} (no KFD GPU node, no AMD display device on the PCI bus); "
                "nothing to do here")
    if not hw.gfx906:
        found = ", ".join(f"{g.label} {g.processor or '?'} ({g.model.name})" for g in hw.gpus)
        return f"no gfx906 GPU under {where}: found {found}; rocmrevive has nothing to do"
    return None


# ---- human output ------------------------------------------------------------------------

def _gib(n) -> str:
    from rocmrevive.units import format_bytes

    return format_bytes(n) if n else "?"


def _link(lj: dict | None) -> str:
    if not lj or lj.get("speed") is None and lj.get("width") is None:
        return "?"
    cur = f"{lj['speed']:g}GT/s x{lj['width']}" if lj.get("speed") else f"x{lj.get('width')}"
    if lj.get("max_width") and lj.get("width") and lj["width"] < lj["max_width"]:
        cur += f" (of x{lj['max_width']})"
    return cur


def _plain(console):
    """Print strings literally: paths, ids and "[chipset]" are not rich markup."""
    return lambda obj: console.print(obj, markup=False, highlight=False)


def _cells(*values) -> list:
    from rich.text import Text

    return [v if isinstance(v, Lines) else Text(str(v)) for v in values]


def render_gpus(console, doc: dict) -> None:
    from rich.table import Table

    say = _plain(console)
    gpus = doc["gpus"]
    if not gpus:
        say("No AMD GPU found.")
        return
    # one fact a cell under one header row (a pipe reads it as it reads any table, and two GPUs fit
    # 80 columns, every id whole); the other facts of each GPU on a labelled line below it
    t = Table(title="GPUs", title_justify="left", show_edge=False, pad_edge=False)
    for col in ("GPU", "BDF", "target", "model", "VRAM"):
        t.add_column(col)
    more = []
    for g in gpus:
        p = g["pcie"] or {}
        bar = next((b for b in p.get("bars", []) if b["prefetchable"] and not b["rom"]), None)
        large = p.get("large_bar")
        bar_txt = "?" if bar is None else _gib(bar["size"]) + ("" if large else " (small)" if large is False else "")
        model = g["model"] + ("" if g["model_certain"] else "?")
        t.add_row(*_cells(f"GPU{g['index']}", g["bdf"] or "?", g["target"] or "?", model, _gib(g["vram_bytes"])))
        more.append(f"  GPU{g['index']}: KFD node {g['node'] if g['node'] is not None else '-'}, "
                    f"{(g['render_node'] or 'no render node').rsplit('/', 1)[-1]}, BAR {bar_txt}, "
                    f"link {_link(p.get('slot_link') or p.get('link'))}, "
                    f"NUMA node {g['numa_node'] if g['numa_node'] is not None else '?'}")
    console.print(t)
    for line in more:
        say(line)
    for g in gpus:
        for problem in g["problems"]:
            say(f"  GPU{g['index']}: {problem}")
        if not g["model_certain"] and g["model_reason"]:
            say(f"  GPU{g['index']} model? {g['model_reason']}")


def render_topology(console, doc: dict) -> None:
    from rich.text import Text
    from rich.tree import Tree

    gpus = [g for g in doc["gpus"] if g["pcie"]]
    if not gpus:
        return
    tree = Tree(Text("PCIe"))
    nodes: dict[str, Tree] = {}
    for g in sorted(gpus, key=lambda g: (g["pcie"]["root_complex"] or "", g["pcie"]["chain"])):
        p = g["pcie"]
        rc = p["root_complex"] or "?"
        key = rc
        if key not in nodes:
            hb = p.get("host_bridge") or {}
            nodes[key] = tree.add(Text(f"root complex {rc}" + (f" (host bridge {hb['pci_id']})" if hb.get("pci_id") else "")))
        parent = nodes[key]
        for br in p["bridges"]:
            if br["role"] == "card-internal":
                continue
            key += "/" + br["bdf"]
            if key not in nodes:
                label = {"root-port": "root port", "upstream": "switch up", "downstream": "switch down"}[br["role"]]
                extra = " [chipset]" if br["chipset"] else ""
                nodes[key] = parent.add(Text(f"{label} {br['bdf']} ({br['pci_id']}){extra}"))
            parent = nodes[key]
        internal = [b["pci_id"] for b in p["bridges"] if b["role"] == "card-internal"]
        parent.add(Text(f"GPU{g['index']} {g['bdf']} {g['model']} {_link(p.get('slot_link') or p.get('link'))}"
                        + (f"  [on-card bridges {', '.join(internal)}]" if internal else "")))
    console.print(tree)


def render_pairs(console, doc: dict) -> None:
    from rich.table import Table

    pairs = doc["pairs"]
    if not pairs:
        return
    idx = [g["index"] for g in doc["gpus"]]
    cell = {}
    for p in pairs:
        mark = {True: "P2P", False: "no P2P", None: "P2P?"}[p["p2p_possible"]]
        cell[(p["a"], p["b"])] = cell[(p["b"], p["a"])] = f"{p['relation']} {mark}"
    t = Table(title="GPU pairs (PIX one switch, PXB switches, PHB host bridge, NODE root complexes, SYS sockets)",
              title_justify="left")
    t.add_column("")
    for i in idx:
        t.add_column(f"GPU{i}")
    for i in idx:
        t.add_row(*_cells(f"GPU{i}", *["X" if i == j else cell.get((i, j), "") for j in idx]))
    console.print(t)
    say = _plain(console)
    for p in pairs:
        for b in p["blockers"]:
            say(f"  GPU{p['a']}-GPU{p['b']}: {b}")


def render_trees(console, doc: dict) -> None:
    from rich.table import Table

    say = _plain(console)
    installs = doc["rocm_installs"]
    link = doc["rocm_link"]
    if installs or link:
        line = "ROCm installs: " + (", ".join(
            f"{i['path']} ({i['version'] or '?'}{' build ' + i['build'] if i['build'] else ''})"
            + (" <- /opt/rocm" if i["default"] else "") for i in installs) or "none")
        if link and not link["exists"]:
            line += f"; /opt/rocm -> {link['target']} is broken"
        say(line)
    for w in doc.get("device_wheels", []):
        say(w["line"])
    copies = doc["rocblas_copies"]
    if not copies:
        say("No rocBLAS copy found.")
        return
    t = Table(title="rocBLAS copies", title_justify="left")
    for col in ("path", "layout", "rocBLAS", "ROCm", "targets", "missing for"):
        t.add_column(col, overflow="fold")
    for c in copies:
        targets = " ".join(c["targets"]) or "-"
        if c["code_objects"]:
            targets = stacked(targets, "code objects: " + " ".join(c["code_objects"]["targets"]))
        missing = ", ".join(f"GPU{i}" for i in c["missing_for_gpus"]) or "-"
        t.add_row(*_cells(c["path"], c["layout"], c["rocblas_version"] or "?", c["rocm_version"] or "?",
                          targets, missing))
    console.print(t)


def render_therock(console, doc: dict) -> None:
    """TheRock trees (ROCm 7.13+ and the whole-stack gfx906 builds): per library, whether its own
    device code serves each GPU processor, and where that code is."""
    say = _plain(console)
    for t in doc.get("therock_trees", []):
        head = f"TheRock tree {t['path']}: {t['kind']}, ROCm {t['release'] or '?'}"
        if t["build"]:
            head += f", packages {t['build']}"
        say(head)
        if t["via"]:
            say("  reached through " + "; ".join(t["via"]))
        if t["device_targets"] or t["kpack_archives"]:
            say(f"  device packages for: {', '.join(t['device_targets']) or '-'}; "
                f"{len(t['kpack_archives'])} .kpack archive(s)")
        for v in t["libraries"]:
            if v["status"] == "absent":
                continue
            where = ", ".join(v["evidence"]) if v["status"] == "serves" else f"{v['file']}: {v['problem']}"
            say(f"  {v['name']:<10} {v['processor']}: {v['status']} ({v['source']}): {where}")


def render_detect(doc: dict):
    def render(console) -> None:
        say = _plain(console)
        render_gpus(console, doc)
        render_topology(console, doc)
        render_pairs(console, doc)
        io = doc["iommu"]
        if doc["gpus"]:
            say(f"IOMMU: {io['mode']}" + (f" ({', '.join(f'{k}={v}' for k, v in io['cmdline'].items())})"
                                                    if io["cmdline"] else ""))
        if doc.get("rocminfo"):
            ri = doc["rocminfo"]
            say("rocminfo: " + ("agrees with sysfs" if ri["matches"] else "; ".join(ri["problems"])))
        render_trees(console, doc)
        render_therock(console, doc)
        for p in doc["problems"]:
            say(f"problem: {p}")
    return render


@policy(writes=False, on_pending=OnPending.REPORT, reads_machine_state=True)
@click.command("detect")
@shared_options
@click.pass_obj
def detect(ui: UI, pythons, trees, rocminfo_file, deep, no_search):
    """Show AMD GPUs, PCIe topology, ROCm installs and rocBLAS copies.

    Exit code 0 when a gfx906 GPU is present, 3 when none is (JSON is printed either way).
    """
    def work() -> Outcome:
        s = run_survey(ui, pythons, trees, rocminfo_file, deep, no_search)
        doc = s.to_json()
        msg = nothing_message(s)
        return Outcome(data=doc, render=render_detect(doc), code="NOTHING_SUPPORTED" if msg else "OK",
                       message=msg, warnings=list(s.problems))

    ui.run("detect", work)
