"""The GEMM step of rocmrevive's PyTorch probe: every product timed and checked whole.

Shipped beside probe.py and imported by it (torch and the standard library only: it runs in the
user's interpreter, never with rocmrevive importable):

    results = run_device(torch, dev, args, emit, faults)   # one device; emits JSON records

Shapes (one list per mode; --cpu-test-mode shrinks the sizes but keeps every class):
  classic   small NN, NT, TN, odd sizes, batched, linear with bias
  decode    M = 1, 2, 4, 8, 16 against 4096-14336 wide weights (one LLM decode step: linear)
  prefill   M = 512-2048 against the same weights
  tall      tall-skinny (M >> N, K); deep-k (K >> M, N: split-K kernels)
  batched   strided batches (attention's QK^T and PV)
  square    4096^3 with both operands transposed, and the timed 8192^3 in each dtype

The check (Freivalds): for random +-1 vectors x, C.x is compared with A.(B.x), both in float64
on the device with element-wise products and sums (no BLAS call: the reference never runs the
matmul path under test). A wrong element moves C.x; a correct C differs from it only by the
rounding of the product, bounded per row i by

    e_i = u_out * ||C_i||_2  +  sqrt(K) * u_acc * ||A_i||_1 * ||max_k |B_k:| ||_2

(the output rounding of each element, plus fp32 accumulation's probabilistic bound of Higham and
Mary, SIAM J. Sci. Comput. 41(5) 2019, with the inputs' row and column sizes). With random signs
the sum over a row stays below LAMBDA * e_i except with probability 2*exp(-LAMBDA^2/2) (Hoeffding).
The cost is O(MN + MK + KN) per vector, so the timed products are checked too, and every element.
"""
from __future__ import annotations

import math
import time
from collections import namedtuple

DTYPES = ("fp32", "fp16", "bf16")
# unit roundoff of the result's type; every dtype accumulates in fp32 (the probe turns off TF32
# and fp16/bf16 reduced-precision reductions: gfx906's rocBLAS runs fp16 with fp32 accumulation)
U_OUT = {"fp32": 2.0 ** -24, "fp16": 2.0 ** -11, "bf16": 2.0 ** -8}
U_ACC = 2.0 ** -24
LAMBDA = 8.0    # a correct row fails with probability < 3e-14 per vector
# A wrong row escapes one vector when its errors' random-sign sum happens to be small: for a
# 128-wide zero block in a 4096-wide bf16 row (the weakest case measured) about 1 in 7 per vector
VECTORS = 3

Case = namedtuple("Case", "name kind op batch m n k ta tb bias")


def _c(name, kind, m, n, k, ta=False, tb=False, bias=False, batch=None):
    """A case; decode, prefill and "linear" run as torch.nn.functional.linear (x @ W^T with W
    stored N x K, so B is a transposed view), batched ones as bmm, the rest as mm."""
    op = "bmm" if batch else ("linear" if kind in ("decode", "prefill") and tb or name == "linear" else "mm")
    return Case(name, kind, op, batch, m, n, k, ta, tb, bias)


GPU_CASES = (
    _c("nn", "classic", 384, 320, 512), _c("nt", "classic", 256, 384, 320, tb=True),
    _c("tn", "classic", 320, 256, 384, ta=True), _c("odd", "classic", 257, 131, 509),
    _c("batched", "classic", 128, 96, 160, batch=6), _c("linear", "classic", 200, 384, 256, tb=True, bias=True),
    _c("decode-m1", "decode", 1, 4096, 4096, tb=True), _c("decode-m2", "decode", 2, 14336, 4096, tb=True),
    _c("decode-m4", "decode", 4, 4096, 14336, tb=True), _c("decode-m8", "decode", 8, 11008, 4096, tb=True),
    _c("decode-m16", "decode", 16, 4096, 11008, tb=True, bias=True),
    _c("prefill-512", "prefill", 512, 4096, 4096, tb=True), _c("prefill-2048", "prefill", 2048, 14336, 4096, tb=True),
    _c("prefill-tn", "prefill", 1024, 4096, 14336, ta=True),
    _c("tall-skinny", "tall", 65536, 64, 512), _c("deep-k", "tall", 256, 256, 65536),
    _c("qk", "batched", 512, 512, 128, tb=True, batch=32), _c("pv", "batched", 512, 128, 512, batch=32),
    _c("square-tt", "square", 4096, 4096, 4096, ta=True, tb=True),
)
# the same classes, about 1/16 the size: the checking itself is what CPU test mode tests
CPU_CASES = (
    _c("nn", "classic", 96, 80, 128), _c("nt", "classic", 64, 96, 80, tb=True),
    _c("tn", "classic", 80, 64, 96, ta=True), _c("odd", "classic", 67, 31, 129),
    _c("batched", "classic", 32, 24, 40, batch=6), _c("linear", "classic", 50, 96, 64, tb=True, bias=True),
    _c("decode-m1", "decode", 1, 256, 256, tb=True), _c("decode-m2", "decode", 2, 896, 256, tb=True),
    _c("decode-m4", "decode", 4, 256, 896, tb=True), _c("decode-m8", "decode", 8, 688, 256, tb=True),
    _c("decode-m16", "decode", 16, 256, 688, tb=True, bias=True),
    _c("prefill-512", "prefill", 32, 256, 256, tb=True), _c("prefill-2048", "prefill", 128, 896, 256, tb=True),
    _c("prefill-tn", "prefill", 64, 256, 896, ta=True),
    _c("tall-skinny", "tall", 4096, 16, 32), _c("deep-k", "tall", 16, 16, 4096),
    _c("qk", "batched", 32, 32, 16, tb=True, batch=32), _c("pv", "batched", 32, 16, 32, batch=32),
    _c("square-tt", "square", 256, 256, 256, ta=True, tb=True),
)


def cases(cpu_test_mode: bool):
    return CPU_CASES if cpu_test_mode else GPU_CASES


def _dtype(torch, name):
    return {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[name]


def _sync(torch, dev) -> None:
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def describe(case, dname) -> str:
    """'fp16 decode-m4 (M=4 N=4096 K=14336, linear: B transposed)' for messages."""
    b = "%d x " % case.batch if case.batch else ""
    t = ("A" if case.ta else "") + ("B" if case.tb else "")
    return "%s %s (%sM=%d N=%d K=%d, %s%s%s)" % (
        dname, case.name, b, case.m, case.n, case.k, case.op,
        ": %s transposed" % " and ".join(t) if t else "", " + bias" if case.bias else "")


def operands(torch, case, dname, dev, gen):
    """(A, B, bias) as the product sees them: A is M x K, B is K x N (views when transposed)."""
    dt = _dtype(torch, dname)
    lead = (case.batch,) if case.batch else ()

    def rand(shape):
        return (torch.rand(lead + shape, generator=gen, device=dev) * 2 - 1).to(dt)

    a = rand((case.k, case.m)).transpose(-1, -2) if case.ta else rand((case.m, case.k))
    b = rand((case.n, case.k)).transpose(-1, -2) if case.tb else rand((case.k, case.n))
    bias = (torch.rand((case.n,), generator=gen, device=dev) * 2 - 1).to(dt) if case.bias else None
    return a, b, bias


def product(torch, case, a, b, bias):
    """The product under test, through the call a workload would make."""
    if case.op == "linear":  # x @ W^T (+ b) with W stored N x K
        return torch.nn.functional.linear(a, b.transpose(-1, -2), bias)
    out = torch.bmm(a, b) if case.batch else torch.mm(a, b)
    return out + bias if bias is not None else out


def timed(torch, dev, fn, min_seconds: float):
    """(last result, iterations, mean seconds per product, best seconds per product): one
    warm-up, then groups of products (1 on the CPU, 4 on a GPU: a sync each) for at least
    ``min_seconds``. The best group's mean is what the speed records keep: other work on the
    machine only ever adds time, so the fastest group is the steadiest figure."""
    out = fn()
    _sync(torch, dev)
    group = 1 if dev.type == "cpu" else 4
    iters, best, t0 = 0, math.inf, time.perf_counter()
    t_group, in_group = t0, 0
    while True:
        out = fn()
        iters += 1
        in_group += 1
        if in_group == group:
            _sync(torch, dev)
            now = time.perf_counter()
            best = min(best, (now - t_group) / in_group)
            t_group, in_group = now, 0
            if (now - t0 >= min_seconds and iters >= 2) or iters >= 2000:
                break
    _sync(torch, dev)
    return out, iters, (time.perf_counter() - t0) / iters, best


Verdict = namedtuple("Verdict", "ok residual message")


def freivalds(torch, got, a, b, bias, dname, gen, vectors: int = VECTORS) -> Verdict:
    """Check every element of ``got`` = a @ b (+ bias) in O(n^2) (module doc: the bound)."""
    c = got.double()
    if not bool(torch.isfinite(c).all()):
        bad = int((~torch.isfinite(c)).sum())
        return Verdict(False, math.inf, "%d non-finite values (NaN/Inf) in the result" % bad)
    a64, b64 = a.double(), b.double()
    k, n = a64.shape[-1], c.shape[-1]
    col_max = b64.abs().amax(dim=-2)                               # [..., N]
    acc = math.sqrt(k) * U_ACC * a64.abs().sum(-1) * col_max.pow(2).sum(-1, keepdim=True).sqrt()
    if bias is not None:
        acc = acc + U_ACC * bias.double().abs().pow(2).sum().sqrt()
    bound = LAMBDA * (U_OUT[dname] * c.pow(2).sum(-1).sqrt() + acc) + 1e-300
    worst = None
    for _ in range(vectors):
        x = torch.randint(0, 2, c.shape[:-2] + (n,), generator=gen, device=c.device).double() * 2 - 1
        cx = (c * x.unsqueeze(-2)).sum(-1)                          # C.x        [..., M]
        abx = (a64 * (b64 * x.unsqueeze(-2)).sum(-1).unsqueeze(-2)).sum(-1)  # A.(B.x)
        if bias is not None:
            abx = abx + (bias.double() * x).sum(-1, keepdim=True)
        ratio = (cx - abx).abs() / bound
        worst = ratio if worst is None else torch.maximum(worst, ratio)
    assert worst is not None   # at least one case
    top = float(worst.max())
    if top <= 1.0:
        return Verdict(True, top, None)
    return Verdict(False, top, _where(worst, top))


def _where(worst, top) -> str:
    """'wrong result: rows 1536-1663 (128 of 8192) in batch 3, up to 41.2x the rounding bound'."""
    flat = worst.reshape(-1, worst.shape[-1])
    bad_batches = (flat > 1).any(-1).nonzero().reshape(-1).tolist()
    bi = bad_batches[0]
    rows = (flat[bi] > 1).nonzero().reshape(-1).tolist()
    span = "row %d" % rows[0] if len(rows) == 1 else "rows %d-%d" % (rows[0], rows[-1])
    batch = " in batch %d (%d of %d batches wrong)" % (bi, len(bad_batches), flat.shape[0]) \
        if worst.dim() > 1 else ""
    return ("wrong result: %s (%d of %d rows)%s, up to %.3gx the rounding bound "
            "(C.x against A.(B.x) in float64)" % (span, len(rows), flat.shape[-1], batch, top))


def _error(exc) -> str:
    said = str(exc).strip()
    return "%s: %s" % (type(exc).__name__, said.splitlines()[0] if said else "")


def run_device(torch, dev, index: int, args, emit, flts) -> None:
    """Every case in every dtype, then the timed square, on one device; a record per product and
    a closing {"type": "gemm_cost"} with the time spent producing and checking."""
    t_start = time.perf_counter()
    label = "device %d (%s)" % (index, torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU")
    gen = torch.Generator(device=dev).manual_seed(1234 + index)
    check_s, injected = 0.0, False
    case_seconds = 0.02 if args.cpu_test_mode else 0.05
    for dname in DTYPES:
        for case in cases(args.cpu_test_mode):
            emit({"type": "progress", "what": "gemm %s on device %d" % (describe(case, dname), index)})
            hit = not injected and ("gemm" in flts or ("gemm:" + dname) in flts)
            rec, secs = one_case(torch, dev, (index, label), case, dname, gen, case_seconds, hit)
            injected = injected or hit
            check_s += secs
            emit(rec)
    size = args.perf_size or (512 if args.cpu_test_mode else 8192)
    square = _c("timed", "square", size, size, size)
    for dname in DTYPES:
        emit({"type": "progress", "what": "timed gemm %s n=%d on device %d" % (dname, size, index)})
        rec, secs = one_case(torch, dev, (index, label), square, dname, gen, args.perf_seconds,
                             "perf" in flts and index == 0)
        check_s += secs
        rec.update(type="perf", n=size)
        emit(rec)
    emit({"type": "progress", "what": "device copy (memory bandwidth) on device %d" % index})
    rec, secs = bandwidth(torch, dev, (index, label), args, "bandwidth" in flts and index == 0)
    check_s += secs
    emit(rec)
    emit({"type": "gemm_cost", "device": index, "check_seconds": round(check_s, 4),
          "seconds": round(time.perf_counter() - t_start, 4)})


def one_case(torch, dev, where, case, dname, gen, min_seconds, corrupt):
    """(record, seconds spent checking) for one product: made, timed, checked whole.
    ``where``: (device index, its label for messages)."""
    index, label = where
    rec = {"type": "gemm", "device": index, "dtype": dname, "case": case.name, "class": case.kind,
           "op": case.op, "shape": [case.batch, case.m, case.n, case.k] if case.batch else [case.m, case.n, case.k],
           "transposed": ("A" if case.ta else "") + ("B" if case.tb else ""), "ok": False}
    try:
        a, b, bias = operands(torch, case, dname, dev, gen)
        got, iters, secs, best = timed(torch, dev, lambda: product(torch, case, a, b, bias), min_seconds)
    except Exception as exc:  # noqa: BLE001 - a kernel missing for this size class, out of memory, ...: a failed case
        rec["message"] = "%s: %s: %s" % (label, describe(case, dname), _error(exc))
        return rec, 0.0
    flops = 2.0 * case.m * case.n * case.k * (case.batch or 1)
    rec.update(iterations=iters, seconds=round(secs, 7), best_seconds=round(best, 8),
               tflops=round(flops / secs / 1e12, 4))
    if corrupt:  # the probe's own switch (tests): a tile of zeros, what a broken kernel looks like
        got = got.clone()
        got.reshape(-1)[:64] = 0
    t0 = time.perf_counter()
    try:
        v = freivalds(torch, got, a, b, bias, dname, gen)
        _sync(torch, dev)
    except Exception as exc:  # noqa: BLE001 - the check itself could not run (memory): say so, never pass
        v = Verdict(False, None, "the check could not run: %s" % _error(exc))
    spent = time.perf_counter() - t0
    rec.update(ok=v.ok, residual=v.residual, vectors=VECTORS, check_seconds=round(spent, 6))
    if v.message:
        rec["message"] = "%s: %s: %s" % (label, describe(case, dname), v.message)
    return rec, spent


def bandwidth(torch, dev, where, args, corrupt):
    """(record, seconds checking): a large device-to-device copy (the memory-bandwidth probe),
    timed, then checked element for element. GB/s counts the bytes read and written."""
    index, label = where
    nbytes = (16 << 20) if args.cpu_test_mode else (1 << 30)
    rec = {"type": "bandwidth", "device": index, "bytes": nbytes, "ok": False}
    try:
        gen = torch.Generator(device=dev).manual_seed(4321 + index)
        src = torch.randint(-2 ** 31, 2 ** 31 - 1, (nbytes // 4,), generator=gen, device=dev, dtype=torch.int32)
        dst = torch.empty_like(src)
        _, iters, secs, best = timed(torch, dev, lambda: dst.copy_(src), args.perf_seconds)
    except Exception as exc:  # noqa: BLE001 - out of memory, a HIP error: this check's result
        rec["message"] = "%s: device copy of %d MiB: %s" % (label, nbytes >> 20, _error(exc))
        return rec, 0.0
    rec.update(iterations=iters, seconds=round(secs, 7), best_seconds=round(best, 8),
               gb_per_s=round(2 * nbytes / secs / 1e9, 2))
    if corrupt:  # the probe's own switch (tests)
        dst[12345] += 1
    t0 = time.perf_counter()
    bad = int((dst != src).sum())
    _sync(torch, dev)
    spent = time.perf_counter() - t0
    rec.update(ok=bad == 0, check_seconds=round(spent, 6))
    if bad:
        rec["message"] = "%s: device copy of %d MiB corrupted %d of %d words" % (label, nbytes >> 20, bad, nbytes // 4)
    return rec, spent


def soak(torch, dev, index: int, args, emit, flts) -> None:
    """Every case in every dtype, over and over for ``args.soak`` seconds, each product checked.
    Emits {"type": "soak_tick"} about once a second, the first failures in full, and a closing
    {"type": "soak"} with the count of products and errors and the first failure's time."""
    label = "device %d (%s)" % (index, torch.cuda.get_device_name(dev) if dev.type == "cuda" else "CPU")
    gen = torch.Generator(device=dev).manual_seed(5678 + index)
    work = [(d, c) for d in DTYPES for c in cases(args.cpu_test_mode)]
    t0 = time.monotonic()
    products = errors = 0
    first_s, first_msg, last_tick = None, None, t0
    i = 0
    while True:
        now = time.monotonic()
        if now - t0 >= args.soak:
            break
        dname, case = work[i % len(work)]
        i += 1
        rec, _ = one_case(torch, dev, (index, label), case, dname, gen, 0.0, "soak" in flts and products == 7)
        products += 1
        if not rec["ok"]:
            errors += 1
            if first_s is None:
                first_s, first_msg = round(time.monotonic() - t0, 3), rec.get("message")
            if errors <= 5:
                rec.update(type="soak_failure", at_s=round(time.monotonic() - t0, 3))
                emit(rec)
        if time.monotonic() - last_tick >= 1.0:
            last_tick = time.monotonic()
            emit({"type": "soak_tick", "device": index, "elapsed": round(last_tick - t0, 2),
                  "seconds": args.soak, "products": products, "errors": errors})
    secs = time.monotonic() - t0
    emit({"type": "soak", "device": index, "seconds": round(secs, 2), "products": products,
          "errors": errors, "first_failure_s": first_s, "first_failure": first_msg,
          "errors_per_hour": round(errors * 3600.0 / secs, 1) if secs > 0 else None})
