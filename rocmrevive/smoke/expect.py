"""What each card should do, and whether it did: per-shape speed records and floors.

Two expectations per device, each judged per *shape class* (classic, decode, prefill, tall,
batched, square, and the device copy):

- **the record**: the last passing smoke of the same device (its unique id: torch's uuid, else its
  PCI address; ``cpu-test:HOST:INDEX`` in CPU test mode) on the same software stack (the probe's
  fingerprint: torch, HIP/CUDA, the BLAS libraries it mapped, rocBLAS's Tensile folder listing).
  A class whose products take ``SLOW_FACTOR`` times their recorded time or more (geometric mean
  over the class's products in every dtype) is *slow*. On another stack the last record of the
  device is compared for information only ("the graft made it slower" is then one command).
- **the floor** (known cards only: ``rocmrevive/data/cards.toml``, each figure with its source):
  per product the roofline time, ``max(flops / peak, bytes / bandwidth)``; a class whose products
  take ``FLOOR_FACTOR`` times their roofline or more (only products whose roofline is at least
  ``FLOOR_MIN_S``: below that the launch dominates) is slow.

Records live in ``/var/lib/rocmrevive/smoke/perf/DEVICE.json`` (one file per device, the last
``KEEP_STACKS`` stacks in each), written only after a smoke that passed and was not slow; per
stack the last ``KEEP_PASSES`` passes are kept and the expectation is their per-product median.

    judged = judge(devices, records, stack, previous, floors=load_cards())
    write_records(root, judged, stack, when)

Threshold: ``SLOW_FACTOR`` is 2.0, from measured run-to-run spread (bench/smoke_spread.py): 20
clean CPU-test-mode smokes in a row on a 2-core machine shared by 8 busy sessions, each against
the record, all exit 0, class ratios 0.47-1.45 (the device copy; the GEMM classes 0.60-1.20).
2.0 is 1.38x above the worst seen and below the 3x a decode-only slowdown costs; a GPU is quieter.
"""
from __future__ import annotations

import hashlib
import json
import math
import re
import sys
from importlib import resources

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir
from rocmrevive.rootfs import Root

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

PERF_DIR = "/var/lib/rocmrevive/smoke/perf"
PERF_SCHEMA = 1
SLOW_FACTOR = 2.0      # against the record: a class this many times slower fails (module doc)
FLOOR_FACTOR = 8.0     # against the roofline: a class this many times slower fails
FLOOR_MIN_S = 100e-6   # products with a shorter roofline time are not held to the floor
KEEP_STACKS = 4
KEEP_PASSES = 5        # per stack: the expectation is the median of this many last passes
ELEMENT_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}
COPY = "copy"          # the device copy's class name


def load_cards() -> dict[str, dict]:
    """The sourced table: model -> {fp32, fp16, bf16, fp64, hbm_gb_s, source}."""
    text = resources.files("rocmrevive").joinpath("data/cards.toml").read_text()
    return dict(tomllib.loads(text)["cards"])


# --- identity ---------------------------------------------------------------------------------
def device_key(dev: dict, mode: str, host: str) -> str:
    """The device's key in the records: its uuid, else its PCI address, else its index+name."""
    if mode == "cpu-test":
        return f"cpu-test:{host}:{dev.get('index')}"
    if dev.get("uuid"):
        return f"uuid:{dev['uuid']}"
    if dev.get("pci_bus_id"):
        return f"pci:{dev['pci_bus_id']}"
    return f"index:{dev.get('index')}:{dev.get('name')}"


def stack_id(stack: dict | None) -> str | None:
    """A short digest of the probe's stack fingerprint (None without one)."""
    if not stack:
        return None
    libs = stack.get("libs") or {}
    core = {"torch": stack.get("torch"), "hip": stack.get("hip"), "cuda": stack.get("cuda"),
            "libs": {k: [v.get("path"), v.get("size"), v.get("mtime")] for k, v in sorted(libs.items())
                     if isinstance(v, dict)},
            "tensile": (stack.get("tensile") or {}).get("digest")}
    return hashlib.sha256(json.dumps(core, sort_keys=True).encode()).hexdigest()[:12]


def stack_summary(stack: dict | None) -> dict:
    """What a human reads of the stack: torch, HIP/CUDA, rocBLAS's size, the Tensile digest."""
    stack = stack or {}
    libs = stack.get("libs") or {}
    blas = next((k for k in libs if k.startswith(("librocblas", "libcublas"))), None)
    tensile = stack.get("tensile") or {}
    return {"id": stack_id(stack), "torch": stack.get("torch"), "hip": stack.get("hip"),
            "cuda": stack.get("cuda"), "blas": blas,
            "blas_size": (libs.get(blas) or {}).get("size") if blas else None,
            "tensile_files": tensile.get("files"), "tensile_digest": tensile.get("digest")}


# --- measurements -----------------------------------------------------------------------------
def products_of(records: list[dict], index: int) -> dict[str, dict]:
    """'dtype/case' -> {class, seconds, shape} for one device's checked products that passed,
    plus the device copy as 'copy'. The seconds are the probe's best group (``best_seconds``:
    other work on the machine only adds time), else its mean."""
    out: dict[str, dict] = {}
    for r in records:
        secs = r.get("best_seconds") or r.get("seconds")
        if r.get("device") != index or not r.get("ok") or not secs:
            continue
        if r.get("type") in ("gemm", "perf"):
            out[f"{r.get('dtype')}/{r.get('case')}"] = {
                "class": r.get("class"), "seconds": float(secs), "shape": r.get("shape"),
                "dtype": r.get("dtype")}
        elif r.get("type") == "bandwidth":
            out[COPY] = {"class": COPY, "seconds": float(secs), "bytes": r.get("bytes"),
                         "gb_per_s": r.get("gb_per_s")}
    return out


def roofline_s(p: dict, card: dict) -> float | None:
    """The least time the card can take for one product or copy (its peak or its bandwidth)."""
    bw = card.get("hbm_gb_s")
    if p["class"] == COPY:
        return 2 * p["bytes"] / (bw * 1e9) if bw and p.get("bytes") else None
    shape, dt = p.get("shape") or [], str(p.get("dtype") or "")
    peak = card.get(dt)
    if len(shape) == 4:
        batch, m, n, k = shape
    elif len(shape) == 3:
        batch, (m, n, k) = 1, shape
    else:
        return None
    if not peak or not bw:
        return None
    flops = 2.0 * batch * m * n * k
    nbytes = ELEMENT_BYTES[dt] * batch * (m * k + k * n + m * n)
    return max(flops / (peak * 1e12), nbytes / (bw * 1e9))


def _gmean(xs: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def overall(classes: dict[str, dict]) -> float | None:
    """The geometric mean of the classes' ratios (None: no class compared)."""
    return round(_gmean([c["ratio"] for c in classes.values()]), 3) if classes else None


def _classes(ratios: dict[str, tuple[str, float, float, float]]) -> dict[str, dict]:
    """Per class from {product: (class, ratio, now_s, expected_s)}: the geometric mean and the
    worst product with its figure and expectation."""
    by: dict[str, list] = {}
    for prod, (cls, ratio, now, want) in ratios.items():
        by.setdefault(cls, []).append((prod, ratio, now, want))
    out = {}
    for cls, rows in sorted(by.items()):
        worst = max(rows, key=lambda r: r[1])
        out[cls] = {"ratio": round(_gmean([r[1] for r in rows]), 3), "products": len(rows),
                    "worst": {"product": worst[0], "ratio": round(worst[1], 3),
                              "seconds": worst[2], "expected_seconds": worst[3]}}
    return out


def against_record(now: dict[str, dict], rec: dict[str, float]) -> dict[str, dict]:
    ratios = {p: (v["class"], v["seconds"] / rec[p], v["seconds"], rec[p])
              for p, v in now.items() if rec.get(p)}
    return _classes(ratios)


def against_floor(now: dict[str, dict], card: dict) -> dict[str, dict]:
    ratios = {}
    for p, v in now.items():
        floor = roofline_s(v, card)
        if floor and floor >= FLOOR_MIN_S:
            ratios[p] = (v["class"], v["seconds"] / floor, v["seconds"], floor)
    return _classes(ratios)


# --- records ----------------------------------------------------------------------------------
def _file_name(key: str) -> str:
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", key)[:60]
    return f"{safe}-{hashlib.sha256(key.encode()).hexdigest()[:8]}.json"


def read_device(root: Root, key: str) -> dict | None:
    """The device's record file, or None (missing, unreadable, not ours)."""
    try:
        with Dir.open(root.path(PERF_DIR), what="smoke records folder") as d:
            data = json.loads(d.read_bytes(_file_name(key), max_size=4 << 20))
    except (RevError, OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(data.get("stacks"), dict):
        return None
    return data


def write_device(root: Root, key: str, dev: dict, sid: str, entry: dict) -> str:
    """Keep ``entry`` as the device's pass on stack ``sid`` (the last KEEP_STACKS stacks kept).
    Raises OSError when the state folder cannot be written."""
    data = read_device(root, key) or {"key": key, "stacks": {}}
    data.update(schema=PERF_SCHEMA, key=key, name=dev.get("name"), model=dev.get("model"),
                uuid=dev.get("uuid"), pci_bus_id=dev.get("pci_bus_id"))
    stacks = {k: v for k, v in data["stacks"].items() if k != sid and isinstance(v, dict)}
    old = data["stacks"].get(sid)
    prev = old.get("passes") if isinstance(old, dict) else None
    passes: list = [p for p in (prev if isinstance(prev, list) else []) if isinstance(p, dict)]
    passes = passes[-(KEEP_PASSES - 1):] + [entry["products"]]
    stacks[sid] = dict(entry, passes=passes, products=_median_products(passes))
    keep = sorted(stacks.items(), key=lambda kv: str(kv[1].get("recorded_at")))[-KEEP_STACKS:]
    data["stacks"] = dict(keep)
    path = f"{PERF_DIR}/{_file_name(key)}"
    try:
        with Dir.open(root.path(PERF_DIR), create=True, what="smoke records folder") as d:
            d.write_atomic(_file_name(key), (json.dumps(data, indent=1, sort_keys=True) + "\n").encode())
    except RevError as exc:
        raise OSError(exc.message) from None
    return path


def _median_products(passes: list[dict]) -> dict[str, float]:
    """Per product, the median of its time over the passes kept (one fast or slow pass moves
    the expectation less than the noise it carries)."""
    names = {n for p in passes for n in p}
    out = {}
    for n in sorted(names):
        xs = sorted(float(p[n]) for p in passes if isinstance(p.get(n), (int, float)) and p[n] > 0)
        if xs:
            mid = len(xs) // 2
            out[n] = xs[mid] if len(xs) % 2 else (xs[mid - 1] + xs[mid]) / 2
    return out


def latest_other(data: dict, sid: str | None) -> tuple[str, dict] | None:
    """The most recent record of the device on another stack."""
    others = [(k, v) for k, v in data.get("stacks", {}).items() if k != sid and isinstance(v, dict)]
    return max(others, key=lambda kv: str(kv[1].get("recorded_at"))) if others else None


# --- the verdict ------------------------------------------------------------------------------
def judge_device(dev: dict, now: dict[str, dict], data: dict | None, sid: str | None,
                 card: dict | None, *, compare: bool = True) -> dict:
    """One device's speed verdict: {"record": ..., "floor": ..., "slow": [problems], ...}."""
    out: dict = {"device": dev.get("index"), "name": dev.get("name"), "model": dev.get("model"),
                 "record": None, "previous_stack": None, "floor": None, "slow": []}
    if compare and data:
        same = data["stacks"].get(sid) if sid else None
        if isinstance(same, dict) and isinstance(same.get("products"), dict):
            classes = against_record(now, same["products"])
            out["record"] = {"recorded_at": same.get("recorded_at"), "stack": sid, "classes": classes,
                             "overall": overall(classes)}
            for cls, c in classes.items():
                if c["ratio"] >= SLOW_FACTOR:
                    out["slow"].append(_problem(dev, cls, c, "record", same.get("recorded_at")))
        other = latest_other(data, sid)
        if other and isinstance(other[1].get("products"), dict):
            classes = against_record(now, other[1]["products"])
            out["previous_stack"] = {"recorded_at": other[1].get("recorded_at"), "stack": other[0],
                                     "stack_summary": other[1].get("stack"), "classes": classes,
                                     "overall": overall(classes)}
    if card:
        classes = against_floor(now, card)
        out["floor"] = {"model": dev.get("model"), "source": card.get("source"), "classes": classes}
        for cls, c in classes.items():
            if c["ratio"] >= FLOOR_FACTOR:
                out["slow"].append(_problem(dev, cls, c, "floor", None))
    return out


def _ms(s: float) -> str:
    return f"{s * 1e3:.3g} ms"


def _problem(dev: dict, cls: str, c: dict, against: str, when: str | None) -> dict:
    w = c["worst"]
    what = "the device copy" if cls == COPY else f"{cls} shapes"
    if against == "record":
        expect = f"the last pass on {str(when)[:10]}"
        detail = f"{w['product']}: {_ms(w['seconds'])}, recorded {_ms(w['expected_seconds'])}"
    else:
        expect = f"the {dev.get('model')} floor ({FLOOR_FACTOR:g}x its roofline from rocmrevive/data/cards.toml)"
        detail = f"{w['product']}: {_ms(w['seconds'])}, roofline {_ms(w['expected_seconds'])}"
    msg = (f"device {dev.get('index')} ({dev.get('name')}): {what} {c['ratio']:.2f}x slower than "
           f"{expect} ({detail}; fails at {SLOW_FACTOR if against == 'record' else FLOOR_FACTOR:g}x)")
    return {"class": cls, "against": against, "ratio": c["ratio"], "product": w["product"],
            "seconds": w["seconds"], "expected_seconds": w["expected_seconds"], "message": msg}


def summary_line(j: dict) -> str | None:
    """'within 4 % of the last pass on 2026-12-07' or what regressed (None: nothing compared)."""
    rec = j.get("record")
    if j.get("slow"):
        return "; ".join(p["message"] for p in j["slow"])
    if rec and rec.get("classes"):
        worst = max(c["ratio"] for c in rec["classes"].values())
        when = str(rec.get("recorded_at"))[:10]
        llama = bool(j.get("label"))   # llama.cpp's one class: its time per token
        if worst <= 1:
            return (f"as fast as or faster than the last pass on {when} with the same build and model" if llama
                    else f"every shape class as fast as or faster than the last pass on {when}")
        pct = (worst - 1) * 100   # one decimal under 1 %: "within 0 %" would say no slower at all
        return (f"within {pct:.1f} % of the last pass on {when}" if pct < 1 else
                f"within {pct:.0f} % of the last pass on {when}") + ("" if llama else " (slowest shape class)")
    prev = j.get("previous_stack")
    if prev and prev.get("overall"):
        return (f"no pass recorded on this software stack yet; against the last pass on another stack "
                f"({str(prev.get('recorded_at'))[:10]}): {prev['overall']:.2f}x its time overall")
    return None


# --- llama.cpp: tokens/s against the last passes of the same build and model --------------------
LLAMA = "llama"   # the class of llama.cpp's two figures (prompt, generation)


def llama_products(run: dict) -> dict[str, dict]:
    """'llama/prompt', 'llama/gen' -> {class, seconds per token} of one llama.cpp run that passed
    (the best repetition's tokens/s; seconds per token so that slower is a larger ratio, as for
    the GEMMs)."""
    out: dict[str, dict] = {}
    if not run.get("ok"):
        return out
    for name, key in (("prompt", "prompt_best_tps"), ("gen", "gen_best_tps")):
        tps = run.get(key) or run.get(key.replace("_best", ""))
        if isinstance(tps, (int, float)) and math.isfinite(tps) and tps > 0:
            out[f"{LLAMA}/{name}"] = {"class": LLAMA, "seconds": 1.0 / tps}
    return out


def llama_stack(identity: dict | None) -> str | None:
    """The build and model a run's tokens/s belong to: a digest of the program's sha256, its
    llama.cpp/ggml libraries (name, size, mtime) and the model's sha256 (None without them)."""
    if not identity or not identity.get("binary_sha256") or not identity.get("model_sha256"):
        return None
    core = {k: identity.get(k) for k in ("binary_sha256", "libraries", "model_sha256")}
    return hashlib.sha256(json.dumps(core, sort_keys=True).encode()).hexdigest()[:12]


def llama_key(run: dict, devices: list[dict], mode: str) -> str:
    """The device a run used, as llama.cpp showed it: the run's label (ROCm0, 'all GPUs', CPU),
    what was made visible, and the device's description."""
    desc = next((d.get("description") for d in devices if d.get("name") == run.get("label")), None)
    vis = ",".join(f"{k}={v}" for k, v in sorted((run.get("env") or {}).items()))
    return f"llama:{mode}:{run.get('label')}:{vis}:{desc or run.get('gpu_info') or ''}"


def judge_llama_run(run: dict, key: str, data: dict | None, sid: str | None, *, compare: bool = True) -> dict:
    """One llama.cpp run's verdict against the last passes of the same build, model and device."""
    dev = {"index": run.get("label"), "name": run.get("label")}
    now = llama_products(run)
    j = judge_device(dev, now, data, sid, None, compare=compare)
    when = str((j.get("record") or {}).get("recorded_at"))[:10]
    classes = (j.get("record") or {}).get("classes") or {}
    for p in j["slow"]:
        which = "generation" if str(p["product"]).endswith("/gen") else "prompt processing"
        figures = f"{which} {1 / p['seconds']:.0f} tokens/s, recorded {1 / p['expected_seconds']:.0f}"
        if (classes.get(p["class"]) or {}).get("products", 1) > 1:
            # the class ratio is the geometric mean of both figures; the one quoted gets its own
            figures = (f"prompt processing and generation together; {figures}: "
                       f"{p['seconds'] / p['expected_seconds']:.2f}x")
        p["message"] = (f"llama.cpp on {run.get('label')}: {p['ratio']:.2f}x the time per token of the last pass "
                        f"on {when} with the same build and model ({figures}; fails at {SLOW_FACTOR:g}x)")
    j.update(label=f"llama.cpp on {run.get('label')}", key=key, stack=sid, products=now)
    j["summary"] = summary_line(j)
    return j
