"""Faults in the user's PyTorch, for rocmrevive's smoke tests: put this folder on PYTHONPATH and
every Python started with it (the probe and each of its workers) gets torch's matrix products
wrapped, the way a broken BLAS library would misbehave. The probe knows nothing of it.

    PYTHONPATH=tests/smoke_faults ROCMREVIVE_TEST_TORCH_FAULT=zero-block python probe.py ...

ROCMREVIVE_TEST_TORCH_FAULT (comma-separated):
  zero-block  a BLOCK x BLOCK block of zeros at a random place in every product with M, N or K
              >= MIN_SIZE (one random batch of a batched product)
  decode      every product with M <= 16 (a decode step) scaled by SCALE
  slow        every product with N >= MIN_SIZE computed SLOW times over (result unchanged): a
              card that answers right but slowly on its large shapes
  ras         the card's amdgpu RAS counter file ROCMREVIVE_TEST_RAS_FILE (a fixture's
              ras/<block>_err_count) gains one uncorrectable error at the first product, the way
              a failing HBM stack reports itself during a run
  slow-decode every product with M <= 16 computed SLOW_DECODE times over (result unchanged)
ROCMREVIVE_TEST_FAULT_MIN_SIZE (4096), ROCMREVIVE_TEST_FAULT_BLOCK (128), ROCMREVIVE_TEST_FAULT_SCALE
(1.1), ROCMREVIVE_TEST_FAULT_SLOW (10), ROCMREVIVE_TEST_FAULT_SLOW_DECODE (3);
ROCMREVIVE_TEST_FAULT_AFTER (0): seconds after the interpreter starts before any fault applies;
ROCMREVIVE_TEST_FAULT_IF_EXISTS (unset): a path; the faults apply only while it exists (a file an
install adds: the graft "made it slower"); ROCMREVIVE_TEST_FAULT_ONCE (unset): a path; the faults
apply only while it exists, and the interpreter that applied one removes it when it exits (a
passing slowness: the first GEMM worker is slow, the next one is not); ROCMREVIVE_TEST_FAULT_SEED fixes the places (default: random). Float64 products are left alone: a broken single/half-precision kernel is the fault
modelled, and that is what a float64 reference exposes. Each corruption is logged on stderr.
"""
import atexit
import importlib.abc
import importlib.util
import os
import random
import sys
import time

FAULTS = {f.strip() for f in os.environ.get("ROCMREVIVE_TEST_TORCH_FAULT", "").split(",") if f.strip()}
MIN_SIZE = int(os.environ.get("ROCMREVIVE_TEST_FAULT_MIN_SIZE", "4096"))
BLOCK = int(os.environ.get("ROCMREVIVE_TEST_FAULT_BLOCK", "128"))
SCALE = float(os.environ.get("ROCMREVIVE_TEST_FAULT_SCALE", "1.1"))
SLOW = int(os.environ.get("ROCMREVIVE_TEST_FAULT_SLOW", "10"))
SLOW_DECODE = int(os.environ.get("ROCMREVIVE_TEST_FAULT_SLOW_DECODE", "3"))
AFTER = float(os.environ.get("ROCMREVIVE_TEST_FAULT_AFTER", "0"))
IF_EXISTS = os.environ.get("ROCMREVIVE_TEST_FAULT_IF_EXISTS")
ONCE = os.environ.get("ROCMREVIVE_TEST_FAULT_ONCE")
_once_armed = []
_T0 = time.monotonic()
_rng = random.Random(os.environ.get("ROCMREVIVE_TEST_FAULT_SEED") or os.urandom(8))


def _corrupt(torch, out, k):
    """Apply the faults to one product's result ``out`` (inner dimension ``k``)."""
    if not isinstance(out, torch.Tensor) or out.dim() < 2 or out.dtype == torch.float64:
        return out
    m, n = out.shape[-2], out.shape[-1]
    with torch.no_grad():
        if "zero-block" in FAULTS and max(m, n, k) >= MIN_SIZE:
            bm, bn = min(BLOCK, m), min(BLOCK, n)
            r, c = _rng.randrange(m - bm + 1), _rng.randrange(n - bn + 1)
            view = out.reshape(-1, m, n)
            b = _rng.randrange(view.shape[0])
            view[b, r:r + bm, c:c + bn] = 0
            sys.stderr.write("fault: zeroed [%d, %d:%d, %d:%d] of a %s %s product (K=%d)\n"
                             % (b, r, r + bm, c, c + bn, tuple(out.shape), out.dtype, k))
        if "decode" in FAULTS and m <= 16:
            out.mul_(SCALE)
            sys.stderr.write("fault: scaled a %s %s product by %g\n" % (tuple(out.shape), out.dtype, SCALE))
    return out


def _repeats(out) -> int:
    """How many times over the slow faults compute this product (1: once, as asked)."""
    if out.dim() < 2:
        return 1
    m, n = out.shape[-2], out.shape[-1]
    times = 1
    if "slow" in FAULTS and n >= MIN_SIZE:
        times = max(times, SLOW)
    if "slow-decode" in FAULTS and m <= 16:
        times = max(times, SLOW_DECODE)
    return times


def _bump_ras() -> None:
    """One more uncorrectable error in the fixture's RAS counter file (once per interpreter)."""
    global _RAS_DONE
    path = os.environ.get("ROCMREVIVE_TEST_RAS_FILE")
    if _RAS_DONE or "ras" not in FAULTS or not path:
        return
    _RAS_DONE = True
    counts = dict(line.split(": ") for line in open(path).read().splitlines() if ": " in line)
    with open(path, "w") as f:
        f.write("ue: %d\nce: %s\n" % (int(counts.get("ue", 0)) + 1, counts.get("ce", "0")))
    sys.stderr.write("fault: one more uncorrectable error in %s\n" % path)


_RAS_DONE = False


def _wrap(torch, fn, inner):
    def wrapped(*args, **kwargs):
        out = fn(*args, **kwargs)
        if time.monotonic() - _T0 < AFTER or (IF_EXISTS and not os.path.lexists(IF_EXISTS)):
            return out
        if ONCE:
            if not _once_armed and not os.path.lexists(ONCE):
                return out
            if not _once_armed:
                _once_armed.append(True)
                atexit.register(lambda: os.path.lexists(ONCE) and os.unlink(ONCE))
        _bump_ras()
        if isinstance(out, torch.Tensor) and out.dtype != torch.float64:
            for _ in range(_repeats(out) - 1):  # the same product again: slower, the same result
                out = fn(*args, **kwargs)
        return _corrupt(torch, out, inner(*args))
    wrapped.__name__ = getattr(fn, "__name__", "wrapped")
    return wrapped


def _patch(torch):
    k_last = lambda a, *rest: a.shape[-1]  # noqa: E731  (A's K for mm, bmm, matmul, linear)
    for owner, name in ((torch, "matmul"), (torch, "mm"), (torch, "bmm"),
                        (torch.Tensor, "__matmul__"), (torch.Tensor, "matmul"),
                        (torch.Tensor, "mm"), (torch.Tensor, "bmm"), (torch.nn.functional, "linear")):
        setattr(owner, name, _wrap(torch, getattr(owner, name), k_last))


class _PatchTorchOnImport(importlib.abc.MetaPathFinder):
    """Finds nothing itself: when torch is imported, wraps its loader so the patch follows it."""

    def find_spec(self, name, path=None, target=None):
        if name != "torch":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torch")
        if spec is None or spec.loader is None:
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _patch(module)
        spec.loader.exec_module = exec_module
        return spec


if FAULTS:
    sys.meta_path.insert(0, _PatchTorchOnImport())
