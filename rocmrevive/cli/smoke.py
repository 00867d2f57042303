"""``rocmrevive smoke``: run PyTorch and llama.cpp on every GPU, check the results, report speed.

Exit 0: everything that ran passed. 10 (SMOKE_FAILED): a check failed, a step hung, a new
uncorrectable RAS/AER error appeared, or a part asked for with --torch/--llama could not run while
the other did. 12 (SMOKE_SLOW): results right, but a shape class several times slower than the
card's last pass or its floor. 3 (NOTHING_SUPPORTED): nothing could run (no GPU devices, no
PyTorch, no llama.cpp). The outcome is also written to /var/lib/rocmrevive/smoke/last.json for
`rocmrevive status`, and a pass's per-shape times to /var/lib/rocmrevive/smoke/perf/.
"""
from __future__ import annotations

import re

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome
from rocmrevive.errors import RevError


# writes nothing of the machine's, but its results would measure a half-changed tree: refuses
@policy(writes=False, on_pending=OnPending.REFUSE)
@click.command()
@click.option("--torch", "want_torch", is_flag=True, help="Run the PyTorch probe (default: both parts).")
@click.option("--llama", "want_llama", is_flag=True, help="Run llama.cpp (default: both parts).")
@click.option("--python", "python", metavar="PATH",
              help="Interpreter with the PyTorch to test. Default: the first found with torch "
                   "(ROCm builds first).")
@click.option("--llama-bin", "llama_bin", metavar="DIR", type=click.Path(file_okay=False),
              help="Folder with llama-bench (or llama-completion/llama-cli). Default: PATH.")
@click.option("--cpu-test-mode", is_flag=True,
              help="Use the CPU as the compute device: tests the checking itself, not a GPU.")
@click.option("--timeout", type=click.FloatRange(min=1), default=180.0, show_default=True,
              metavar="S", help="Seconds each step may take before it counts as a hang.")
@click.option("--cpu-devices", type=click.IntRange(1, 8), default=2, hidden=True,
              help="Logical devices in --cpu-test-mode (2 exercises copies and all-reduce).")
@click.option("--compare/--no-compare", default=True, show_default=True,
              help="Hold each shape class to this device's last pass on the same software stack.")
@click.option("--soak", "soak", metavar="DURATION", default=None,
              help="After the checks, repeat the checked products on every GPU for DURATION "
                   "(60s, 10m, 1h): first failure, errors per hour, temperature/clock ranges.")
@click.pass_obj
def smoke(ui, want_torch, want_llama, python, llama_bin, cpu_test_mode, timeout, cpu_devices, compare, soak):
    """Run PyTorch and llama.cpp on every GPU and across GPUs, checking results, not only exits.

    PyTorch (run by your interpreter, --python): per device, GEMMs in fp32/fp16/bf16 in the
    shapes workloads run (decode M=1-16, prefill, tall-skinny, deep K, batched, square;
    transposes), each timed (TFLOPS per shape) and checked whole against the rounding bound
    (C.x against A.(B.x) in float64); the card's share of its vendor peak (a card that works
    but crawls is flagged); per pair of devices a checked copy and peer access; with 2+ devices
    an all-reduce (RCCL) checked for the exact sum. llama.cpp: a tiny model written here, run
    with llama-bench on each GPU alone (-ngl 99) and then on all (tokens/s), and its greedy
    tokens on each GPU compared with the CPU's from the same binary.

    Exit 0: all that ran passed; 10: a check failed or hung (or a new uncorrectable RAS/PCIe
    error); 12 (SMOKE_SLOW): results right, but a shape class several times slower than this
    device's last pass on the same stack or its card's floor, or llama.cpp's tokens/s several
    times below its last pass with the same build and model; 3: nothing could run.
    """
    from rocmrevive.smoke.run import run_smoke

    soak_s = parse_duration(soak) if soak is not None else 0.0
    explicit = {n for n, on in (("torch", want_torch), ("llama", want_llama)) if on}
    both = not explicit

    def on_torch(rec):
        t = rec.get("type")
        if t == "device":
            ui.log(f"torch: device {rec['index']}: {rec.get('name')} ({rec.get('arch')})")
        elif t == "hint":
            ui.log(f"torch: {'set' if rec.get('applied') else 'kept user value of'} "
                   f"{rec['name']}={rec.get('value') if rec.get('applied') else rec.get('user_value')}")
        elif t == "device_summary":
            ui.log(f"torch: device {rec['device']}: GEMM checks "
                   f"{'passed' if rec.get('ok') else 'FAILED'}")
        elif t == "failure":
            ui.log(f"torch: FAILED: {rec.get('message')}")
        elif t == "soak_tick":
            ui.bars.update(f"soak, device {rec.get('device')}", int(rec.get("elapsed") or 0),
                           int(rec.get("seconds") or 0), unit="s")
        elif t == "soak":
            ui.bars.close()
            ui.log(f"torch: device {rec.get('device')}: soak of {rec.get('seconds')} s: "
                   f"{rec.get('products')} products, {rec.get('errors')} wrong")

    def on_llama(run):
        what = "tokens" if hasattr(run, "tokens") else "speed"
        ui.log(f"llama.cpp: {run.label} {what}: " + ("ok" if run.ok else f"FAILED: {run.message}"))

    def work() -> Outcome:
        if llama_bin is not None and not (want_llama or both):
            raise RevError("USAGE", "--llama-bin given without --llama")
        doc = run_smoke(ui.root, torch=want_torch or both, llama=want_llama or both,
                        explicit=explicit, python=python, llama_bin=llama_bin,
                        cpu_test_mode=cpu_test_mode, cpu_devices=cpu_devices, timeout=timeout,
                        on_torch_record=on_torch, on_llama_run=on_llama, compare=compare,
                        soak=soak_s)
        warnings: list[str] = list(doc["health"]["warnings"])
        for p in doc["parts"].values():
            warnings += p.get("warnings") or []
        if doc["record_error"]:
            warnings.append(doc["record_error"])
        data = {k: doc[k] for k in ("started_at", "finished_at", "mode", "skipped", "record", "seconds",
                                    "check_seconds", "check_share", "health", "speed", "speed_records",
                                    "soak")}
        data["ok"] = doc["code"] == "OK"
        data.update(doc["parts"])
        return Outcome(data=data, render=lambda con: render(con, doc), code=doc["code"],
                       message=doc["message"], warnings=warnings, changed=bool(doc["record"]))

    ui.run("smoke", work)


_UNITS = {"": 1, "s": 1, "m": 60, "min": 60, "h": 3600}


def parse_duration(text: str) -> float:
    """'60s', '10m', '1h', '90' (seconds) -> seconds; a bad one is a usage error."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*", text or "")
    if not m or float(m.group(1)) <= 0:
        raise click.BadParameter(f"{text!r} is not a duration such as 60s, 10m or 1h", param_hint="--soak")
    return float(m.group(1)) * _UNITS[m.group(2) or ""]


def _tf(v) -> str:
    return "-" if v is None else f"{v:.2f}"


def _cell(tflops: dict | None, ratio: dict | None, dtype: str) -> str:
    if not tflops or tflops.get(dtype) is None:
        return "-"
    s = f"{tflops[dtype]:.2f}"
    if ratio and ratio.get(dtype) is not None:
        s += f" ({ratio[dtype] * 100:.0f}%)"
    return s


def render(con, doc: dict) -> None:
    parts = doc["parts"]
    t = parts.get("torch")
    if t and t.get("devices"):
        _render_torch(con, t)
    l_ = parts.get("llama")
    if l_ and l_.get("runs"):
        _render_llama(con, l_)
    _render_speed(con, doc.get("speed") or [])
    _render_soak(con, doc)
    _render_health(con, doc.get("health") or {})
    for s in doc.get("skipped") or []:
        con.print(f"skipped {'PyTorch' if s['part'] == 'torch' else 'llama.cpp'}: {s['reason']}")
    if doc.get("check_share") is not None:
        con.print(f"checks: {doc['check_seconds']:.2f} s of the whole smoke's {doc['seconds']:.2f} s "
                  f"({doc['check_share'] * 100:.1f}%)")
    verdict = {"OK": "passed", "SMOKE_FAILED": "FAILED", "NOTHING_SUPPORTED": "nothing could run",
               "SMOKE_SLOW": "SLOW (results right, speed not)"}
    tail = f" (recorded in {doc['record']})" if doc.get("record") else ""
    con.print(f"smoke: {verdict.get(doc['code'], doc['code'])}{tail}")


def _gemm_result(g: dict) -> str:
    if not g:
        return "FAILED (no result)"
    if not g.get("ok"):
        return "FAILED"
    return "ok, SLOW" if g.get("slow") else "ok"


def _render_torch(con, t: dict) -> None:
    """The PyTorch part: a row per device, the copies between devices, all-reduce, hints, failures."""
    from rich.table import Table

    tab = Table(title=f"PyTorch {t.get('torch')} ({t.get('platform')}"
                      f"{' HIP ' + t['hip'] if t.get('hip') else ''}"
                      f"{' CUDA ' + t['cuda'] if t.get('cuda') else ''}) with {t.get('python')}",
                title_justify="left")
    for col in ("dev", "name", "arch", "GEMM checks", "fp32 TFLOPS", "fp16 TFLOPS",
                "bf16 TFLOPS", "result"):
        tab.add_column(col)
    for d in t["devices"]:
        g = d.get("gemm") or {}
        checks = f"{g.get('checks', 0) - g.get('failed_checks', 0)}/{g.get('checks', 0)}" if g else "-"
        name = d.get("name") or ""
        if d.get("model"):
            name += f" [{d['model']}]"
        tab.add_row(str(d["index"]), name, str(d.get("arch")), checks,
                    *(_cell(g.get("tflops"), g.get("ratio"), dt) for dt in ("fp32", "fp16", "bf16")),
                    _gemm_result(g))
    con.print(tab)
    for d in t["devices"]:
        _render_shapes(con, d)
    if t.get("check_seconds") is not None:
        share = t.get("check_share")
        con.print(f"every product checked whole (Freivalds, float64): the checks took "
                  f"{t['check_seconds']:.2f} s of the probe's {t.get('seconds') or 0:.2f} s"
                  + (f" ({share * 100:.1f}%)" if share is not None else ""))
    if t.get("peer"):
        pt = Table(title="Device-to-device copies", title_justify="left")
        for col in ("copy", "peer access", "GB/s", "result"):
            pt.add_column(col)
        for p in t["peer"]:
            acc = {True: "yes", False: "no", None: "-"}[p.get("can_access_peer")]
            pt.add_row(f"{p['src']} -> {p['dst']}", acc, _tf(p.get("gb_per_s")),
                       "ok" if p.get("ok") else f"FAILED: {p.get('message')}")
        con.print(pt)
    ar = t.get("allreduce")
    if ar:
        con.print(f"all-reduce ({ar.get('backend')}, {ar.get('world_size')} devices): "
                  + (f"ok, bus bandwidth {_tf(ar.get('busbw_gb_per_s'))} GB/s" if ar.get("ok")
                     else f"FAILED: {ar.get('message')}"))
    for h in t.get("hints") or []:
        con.print(f"hint: {h['name']}={h['value']} " +
                  ("applied" if h.get("applied") else f"not applied, you set {h.get('user_value')!r}")
                  + f" ({h.get('reason')})")
    for f in t.get("failures") or []:
        if f.get("step") in ("enumerate", "gemm", "probe") and f.get("message"):
            con.print(f"FAILED ({f['step']}): {f['message']}")


def _render_shapes(con, d: dict) -> None:
    """TFLOPS per GEMM shape on one device, beside the card's peak."""
    from rich.table import Table

    g = d.get("gemm") or {}
    if not g.get("shapes"):
        return
    peak = d.get("peak_tflops") or {}
    tab = Table(title=f"device {d['index']}: TFLOPS per shape" + (
        " (peak " + ", ".join(f"{k} {v:g}" for k, v in peak.items()) + ")" if peak else ""),
        title_justify="left")
    for col in ("class", "case", "shape (B x) M N K", "op", "fp32", "fp16", "bf16"):
        tab.add_column(col)
    for s in g["shapes"]:
        op = s.get("op") or ""
        if s.get("transposed"):
            op += " (" + " ".join(f"{m}^T" for m in s["transposed"]) + ")"
        tab.add_row(str(s.get("class")), str(s.get("case")), " ".join(map(str, s.get("shape") or [])),
                    op, *(_tf((s.get("tflops") or {}).get(dt)) for dt in ("fp32", "fp16", "bf16")))
    con.print(tab)


def _render_llama(con, l_: dict) -> None:
    """The llama.cpp part: a row per run with its tokens/s."""
    from rich.table import Table

    tab = Table(title=f"llama.cpp: {l_.get('binary')} (backend {l_.get('backends')}), "
                      f"tiny model {l_['model']['bytes'] // 1024} KiB" if l_.get("model") else "llama.cpp",
                title_justify="left")
    for col in ("run", "visible", "prompt tok/s", "gen tok/s", "result"):
        tab.add_column(col)
    for r in l_["runs"]:
        vis = ", ".join(f"{k}={v}" for k, v in (r.get("env") or {}).items()) or "all"
        tab.add_row(r["label"], vis, _tf(r.get("prompt_tps")), _tf(r.get("gen_tps")),
                    "ok" if r.get("ok") else f"FAILED: {r.get('message')}")
    con.print(tab)
    out = l_.get("output") or {}
    if not out.get("compared"):
        ref = out.get("reference") or {}
        con.print(f"llama.cpp output: not compared ({out.get('reason') or ref.get('message')})")
        return
    for r in out.get("runs") or []:
        con.print(f"llama.cpp output on {r['label']}: " + (
            f"the same {out.get('tokens')} greedy tokens as the CPU" if r.get("ok") else f"FAILED: {r.get('message')}"))


def _render_speed(con, speed: list[dict]) -> None:
    """Per device: against its last pass (per shape class) and its floor."""
    for j in speed:
        line = j.get("summary")
        who = j.get("label") or f"device {j['device']}"
        con.print(f"speed, {who}: {line or 'no earlier pass of this device to compare with (this one is recorded if it passes)'}",
                  markup=False)
        rec = j.get("record") or {}
        if rec.get("classes") and j.get("label"):   # llama.cpp: one class, its two figures
            worst = rec["classes"][next(iter(rec["classes"]))]
            con.print(f"  time per token against the last pass: {worst['ratio']:.2f}x (prompt and generation)",
                      markup=False)
        elif rec.get("classes"):
            cells = ", ".join(f"{c} {v['ratio']:.2f}x" for c, v in rec["classes"].items())
            con.print(f"  time against the last pass, per shape class: {cells}", markup=False)
        fl = j.get("floor") or {}
        if fl.get("classes"):
            cells = ", ".join(f"{c} {v['ratio']:.2f}x" for c, v in fl["classes"].items())
            con.print(f"  time against the {fl.get('model')} roofline, per shape class: {cells}", markup=False)


def _render_soak(con, doc: dict) -> None:
    t = (doc.get("parts") or {}).get("torch") or {}
    cards = ((doc.get("health") or {}).get("samples") or {}).get("cards") or {}
    for s in t.get("soak") or []:
        first = (f"first failure after {s['first_failure_s']} s: {s.get('first_failure')}"
                 if s.get("first_failure_s") is not None else "no failure")
        con.print(f"soak, device {s.get('device')}: {s.get('seconds')} s, {s.get('products')} products checked, "
                  f"{s.get('errors')} wrong ({s.get('errors_per_hour')} per hour); {first}", markup=False)
    if doc.get("soak") and not cards:
        con.print("soak: no amdgpu card's sensors were readable (no temperatures, clocks or throttling to report)")


def _range(v) -> str:
    return f"{v[0]:g}" if v[0] == v[1] else f"{v[0]:g}-{v[1]:g}"


def _render_health(con, h: dict) -> None:
    cards = (h.get("samples") or {}).get("cards") or {}
    for bdf, c in cards.items():
        temps = ", ".join(f"{k} {_range(v)} C" for k, v in c.get("temps_c", {}).items()) or "no temperatures"
        clocks = ", ".join(f"{k} {_range(v)} MHz" for k, v in c.get("clocks_mhz", {}).items()) or "no clocks"
        thr = (f"THROTTLING (bits {', '.join(map(str, c['throttle_bits']))}) in {c['throttle_samples']} of "
               f"{c['samples']} readings" if c.get("throttling") else "no throttling seen")
        con.print(f"health {bdf}: {temps}; {clocks}; {thr}", markup=False)
    for f in h.get("failures") or []:
        con.print(f"FAILED (health): {f}", markup=False)
