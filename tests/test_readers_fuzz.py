"""Fuzzing the readers of what another user can write (issue 26): a ``.kpack`` built from a real
code object, real Tensile ``.dat`` files of Debian's rocBLAS 4.4.1, ``config.toml`` and a venv's
patch target with its dist-info. Deterministic seeds; each campaign runs in a child process so
its peak memory (``VmHWM``, the high-water mark of the child's own address space) is its own, under a time limit so a hang fails the test. Every
case must end in a report, a problem line or the reader's one documented error, never another
exception; the bombs (a TOC of empty maps, a lazy index of empty maps, a 200 MB config) must
stay under a memory cap.

    res = campaign("kpack", seed=1, n=2000); assert res["exceptions"] == {} and res["peak_mb"] < 300
"""
from __future__ import annotations

import collections
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import msgpack
import pytest

from tests.conftest import REPO

# what one campaign may cost: a few hundred MB of Python would be the bombs going off (a 64 MiB
# TOC of empty maps decoded whole is ~4.6 GB)
PEAK_MB = 300
LIMIT_S = 180          # a hang, not a slow machine (each campaign takes seconds)


def peak_mb() -> int:
    """This process's own peak resident memory: ``VmHWM`` of /proc/self/status. Not
    ``ru_maxrss``: Linux carries the parent's high-water mark into a child started by
    vfork+exec (subprocess's way), so every child of a 600 MB pytest reported 600 MB."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def _in_child(code: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=LIMIT_S,
                       cwd=REPO, env=env)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def campaign(kind: str, **kw) -> dict:
    """Run ``_CAMPAIGNS[kind](**kw)`` in a child process: its result plus ``peak_mb``."""
    res = _in_child(f"import json; from tests.test_readers_fuzz import _CAMPAIGNS, peak_mb; "
                    f"r = _CAMPAIGNS[{kind!r}](**{kw!r}); r['peak_mb'] = peak_mb(); print(json.dumps(r))")
    print(f"\n{kind}: {res}")    # the figures for the report (pytest -s)
    return res


# --- mutations -----------------------------------------------------------------------------

def _flip(rng: random.Random, data: bytes, region: tuple[int, int] | None = None) -> bytes:
    """A few byte-level changes: overwrite, delete, insert, truncate (inside ``region`` mostly)."""
    d = bytearray(data)
    lo, hi = region or (0, len(d))
    for _ in range(rng.randint(1, 6)):
        if not d:
            break
        pos = rng.randrange(lo, max(lo + 1, min(hi, len(d)))) if lo < len(d) else rng.randrange(len(d))
        k = rng.random()
        if k < 0.45:
            d[pos] = rng.randrange(256)
        elif k < 0.6:
            del d[pos:pos + rng.randint(1, 40)]
        elif k < 0.8:
            d[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        else:
            d[pos:pos + 1] = rng.choice([b"\xdd\xff\xff\xff\xff", b"\xdf\x7f\xff\xff\xff", b"\xdb\xff\xff\xff\x00",
                                         b"\xc1", b"\x91" * 40, b"\xc7\x05\xff"])
    return bytes(d)


def _junk(rng: random.Random, depth: int = 0):
    """A MessagePack value of any shape (what a hostile writer puts where a field should be)."""
    pick = rng.randrange(14)
    if depth < 3 and pick == 12:
        return [_junk(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    if depth < 3 and pick == 13:
        return {rng.choice(["offset", "size", "ordinal", "name", "type", "value", "x"]): _junk(rng, depth + 1)}
    return [None, True, -1, 2 ** 64 - 1, -2 ** 63, 1.5, float("nan"), "", "gfx906", "gfx9\x00", b"\xff\xfe",
            "x" * 300, 0, 0][pick]


def _mutate_doc(rng: random.Random, doc):
    """Replace a random value somewhere in ``doc`` by junk (in place where it can)."""
    if isinstance(doc, dict) and doc:
        k = rng.choice(list(doc))
        if rng.random() < 0.4:
            doc[k] = _junk(rng)
        else:
            _mutate_doc(rng, doc[k])
    elif isinstance(doc, list) and doc:
        i = rng.randrange(len(doc))
        if rng.random() < 0.4:
            doc[i] = _junk(rng)
        else:
            _mutate_doc(rng, doc[i])
    return doc


def _unhashable_key(rng: random.Random, raw: bytes) -> bytes:
    """A map whose key is an array (Python cannot hash it: TypeError in a naive decoder)."""
    pos = raw.find(b"\xa4") if rng.random() < 0.5 else -1
    return raw[:pos] + b"\x91\x01" + raw[pos + 5:] if pos > 0 else b"\x81\x91\x01\x02"


def _tally(errors: collections.Counter, exc: BaseException) -> None:
    errors[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1


# --- campaigns (run in the child) -----------------------------------------------------------

def _kpack_campaign(seed: int, n: int, hsaco: str) -> dict:
    from rocmrevive.codeobj.kpack import read_kpack
    from tests.fixtures.therock import write_kpack

    rng = random.Random(seed)
    blob = Path(hsaco).read_bytes()[:8192]
    errors: collections.Counter = collections.Counter()
    problems = 0
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "blas_lib_gfx906.kpack"
        write_kpack(p, group="blas", family="gfx90X-all", kernels={"lib/librocblas.so.4": {"gfx906": blob},
                                                                   "lib/libhipblaslt.so.0": {"gfx906": blob}})
        good = p.read_bytes()
        toc_at = struct.unpack_from("<Q", good, 8)[0]
        doc = msgpack.unpackb(good[toc_at:])
        assert read_kpack(p).problems == []
        for i in range(n):
            k = i % 4
            if k == 0:
                data = _flip(rng, good)
            elif k == 1:
                data = _flip(rng, good, (toc_at, len(good)))
            elif k == 2:
                data = good[:toc_at] + msgpack.packb(_mutate_doc(rng, json.loads(json.dumps(doc, default=list))),
                                                     use_bin_type=True)
            else:
                data = good[:toc_at] + _unhashable_key(rng, good[toc_at:]) if i % 8 == 3 else good[:rng.randrange(80)]
            p.write_bytes(data)
            try:
                problems += bool(read_kpack(p).problems)
            except Exception as exc:  # noqa: BLE001 - counting what escapes is the test
                _tally(errors, exc)
    return {"cases": n, "with_problems": problems, "exceptions": dict(errors)}


def _write_bomb(p: Path, parts: list[tuple[bytes, int]]) -> None:
    """Write ``part * times`` for each part, a MiB at a time (the bomb is never whole in memory)."""
    with open(p, "wb") as f:
        for part, times in parts:
            per = max(1, (1 << 20) // len(part))
            while times > 0:
                f.write(part * min(per, times))
                times -= per


def _kpack_bombs() -> dict:
    """TOCs whose decoded size dwarfs their bytes, and archives too large to read."""
    from rocmrevive.codeobj.kpack import MAX_TOC, read_kpack

    n = MAX_TOC - 64
    head = struct.pack("<4sIQ", b"KPAK", 1, 64) + bytes(48)
    bombs = {
        "empty-maps": [(head + b"\x81\xa3toc\xdd" + struct.pack(">I", n), 1), (b"\x80", n)],
        "blobs": [(head + b"\x81\xa5blobs\xdd" + struct.pack(">I", n // 9), 1), (b"\x81\xa6offset\x00", n // 9)],
        "nested": [(head, 1), (b"\x81\xa1a", n // 3)],
        "arches": [(head + b"\x81\xaagfx_arches\xdd" + struct.pack(">I", 60000), 1), (b"\xa1a", 60000),
                   (b"\x90", 1)],
    }
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "bomb.kpack"
        for name, parts in bombs.items():
            _write_bomb(p, parts)
            out[name] = read_kpack(p).problems[:1]
        with open(p, "wb") as f:
            f.write(head)
            f.truncate(200 << 20)
        out["sparse-200MB"] = read_kpack(p).problems[:1]
    return out


def _dat_campaign(seed: int, n: int, lazy: str, placeholder: str) -> dict:
    from rocmrevive.tensile.dat import LazyIndex, TensileFormatError, read_solutions

    rng = random.Random(seed)
    errors: collections.Counter = collections.Counter()
    refused = 0
    with tempfile.TemporaryDirectory() as tmp:
        for src, read in ((lazy, LazyIndex.read), (placeholder, read_solutions)):
            good = Path(src).read_bytes()
            doc = msgpack.unpackb(good, strict_map_key=False)
            p = Path(tmp) / Path(src).name
            for i in range(n // 2):
                k = i % 3
                if k == 0:
                    data = _flip(rng, good)
                elif k == 1:
                    data = msgpack.packb(_mutate_doc(rng, msgpack.unpackb(good, strict_map_key=False)))
                else:
                    data = _unhashable_key(rng, good) if i % 2 else good[:rng.randrange(len(good))]
                p.write_bytes(data)
                try:
                    read(p)
                except TensileFormatError:
                    refused += 1
                except Exception as exc:  # noqa: BLE001 - counting what escapes is the test
                    _tally(errors, exc)
            del doc
    return {"cases": n, "refused": refused, "exceptions": dict(errors)}


def _dat_bombs() -> dict:
    from rocmrevive.tensile.dat import LazyIndex, TensileFormatError, read_solutions

    n = (4 << 20) - 64                    # dat.MAX_LAZY_INDEX and MAX_DAT, spelled out to run on old code
    max_dat = 64 << 20
    fat = b"\x82\xa4name\xa1k\xa3pad\xdd" + struct.pack(">I", 1 << 20)
    bombs = {
        "lazy-empty-maps": (LazyIndex.read, [(b"\x82\xa9solutions\x90\xa7library\xdd" + struct.pack(">I", n), 1),
                                             (b"\x80", n)]),
        "placeholder-fat-solutions": (read_solutions, [(b"\x82\xa9solutions\x91" + fat, 1), (b"\x80", 1 << 20),
                                                       (b"\xa7library\x80", 1)]),
        "placeholder-many": (read_solutions, [(b"\x82\xa9solutions\xdd" + struct.pack(">I", 1 << 24), 1),
                                              (b"\x81\xa4name\xa1k", (max_dat - 64) // 8)]),
        "placeholder-empty-maps": (read_solutions, [(b"\x82\xa7library\xdd" + struct.pack(">I", max_dat - 64), 1),
                                                    (b"\x80", max_dat - 64), (b"\xa9solutions\x90", 1)]),
    }
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "TensileLibrary_lazy_gfx906.dat"
        for name, (read, parts) in bombs.items():
            _write_bomb(p, parts)
            try:
                read(p)
                out[name] = "read"
            except TensileFormatError as exc:
                out[name] = str(exc)[-90:]
        with open(p, "wb") as f:
            f.truncate(300 << 20)
        try:
            read_solutions(p)
        except TensileFormatError as exc:
            out["sparse-300MB"] = str(exc)[-90:]
    return out


_TOML = [b'mirror = "http://deb.example.org/debian"\n', b'cache = "/srv/rr-cache"\n',
         b'state_dir = "/var/lib/rocmrevive"\n', b'manifests = "/etc/rocmrevive/manifests"\n']
_TOML_JUNK = [b"[", b"]", b"{", b"}", b"=", b'"', b"'''", b'"""', b"\\u0000", b"\\U0010ffff", b"\x00", b"\n",
              b"\r", b"#", b"a.b.c", b"[[x]]", b"1979-05-27T07:32:00Z", b"inf", b"0x", b"\xff", b"\\",
              b"[" * 3000, b"{a=" * 2000, b"/" + b"a" * 300, b"x" * 5000]


def _config_campaign(seed: int, n: int) -> dict:
    from rocmrevive.config import load
    from rocmrevive.errors import RevError
    from rocmrevive.rootfs import Root

    rng = random.Random(seed)
    errors: collections.Counter = collections.Counter()
    codes: collections.Counter = collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "etc/rocmrevive").mkdir(parents=True)
        p = Path(tmp) / "etc/rocmrevive/config.toml"
        good = b"".join(_TOML)
        for i in range(n):
            if i % 2:
                data = _flip(rng, good)
            else:
                lines = rng.sample(_TOML, rng.randint(1, 4))
                at = rng.randrange(len(lines))
                line = lines[at]
                cut = rng.randrange(len(line))
                lines[at] = line[:cut] + b"".join(rng.choices(_TOML_JUNK, k=rng.randint(1, 3))) + line[cut:]
                data = b"".join(lines)
            p.write_bytes(data)
            os.chmod(p, 0o644)
            try:
                load(Root(tmp))
                codes["OK"] += 1
            except RevError as exc:
                codes[exc.code] += 1
                if "\n" in exc.message or "\x1b" in exc.message:
                    errors["RevError of more than one line"] += 1
            except Exception as exc:  # noqa: BLE001 - counting what escapes is the test
                _tally(errors, exc)
        os.truncate(p, 200 << 20)
        try:
            load(Root(tmp))
        except RevError as exc:
            codes["200MB:" + exc.code] += 1
    return {"cases": n, "codes": dict(codes), "exceptions": dict(errors)}


def _patch_campaign(seed: int, n: int) -> dict:
    """patch_status over a venv whose target, METADATA and RECORD are random bytes or a FIFO,
    a link, a folder or a device."""
    from rocmrevive.install.patches import load_patches, patch_status
    from rocmrevive.rootfs import Root

    rng = random.Random(seed)
    spec = next(s for s in load_patches() if s.package == "vllm")
    errors: collections.Counter = collections.Counter()
    states: collections.Counter = collections.Counter()
    site_rel = "home/u/venv/lib/python3.11/site-packages"
    with tempfile.TemporaryDirectory() as tmp:
        site = Path(tmp) / site_rel
        di = site / "vllm-0.4.2.dist-info"
        paths = {"target": site / spec.file, "METADATA": di / "METADATA", "RECORD": di / "RECORD"}
        good = {"target": spec.diff_text.encode(), "METADATA": b"Name: vllm\nVersion: 0.4.2\n",
                "RECORD": f"{spec.file},sha256=47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU,0\n".encode()}
        for i in range(n):
            for name, p in paths.items():
                p.parent.mkdir(parents=True, exist_ok=True)
                if p.is_dir() and not p.is_symlink():
                    p.rmdir()
                elif p.exists() or p.is_symlink():
                    p.unlink()
                k = rng.random()
                if k < 0.55:
                    p.write_bytes(_flip(rng, good[name]))
                elif k < 0.65:
                    os.mkfifo(p)
                elif k < 0.75:
                    os.symlink(rng.choice(["/dev/zero", "/etc/shadow", "/proc/self/mem", str(p)]), p)
                elif k < 0.8:
                    p.mkdir()
                elif k < 0.9:
                    p.write_bytes(bytes(rng.randrange(256) for _ in range(rng.randint(0, 2000))))
                else:
                    p.write_bytes(good[name])
            try:
                states[patch_status(Root(tmp), spec, "/" + site_rel).state] += 1
            except Exception as exc:  # noqa: BLE001 - counting what escapes is the test
                _tally(errors, exc)
    return {"cases": n, "states": dict(states), "exceptions": dict(errors)}


_CAMPAIGNS = {"kpack": _kpack_campaign, "kpack-bombs": _kpack_bombs, "dat": _dat_campaign,
              "dat-bombs": _dat_bombs, "config": _config_campaign, "patch": _patch_campaign}


# --- the tests ------------------------------------------------------------------------------

@pytest.mark.debian
def test_kpack_fuzz_no_exception_no_hang_bounded_memory(rocblas441):
    res = campaign("kpack", seed=26, n=2000, hsaco=str(rocblas441 / "Kernels.so-000-gfx906.hsaco"))
    assert res["exceptions"] == {} and res["with_problems"] > 1000 and res["peak_mb"] < PEAK_MB, res


def test_kpack_bombs_are_problems_in_bounded_memory():
    res = campaign("kpack-bombs")
    assert all(res[k] for k in ("empty-maps", "blobs", "nested", "arches", "sparse-200MB")), res
    assert "larger than" in res["sparse-200MB"][0] and res["peak_mb"] < PEAK_MB, res


@pytest.mark.debian
def test_dat_fuzz_real_tensile_files(rocblas441):
    res = campaign("dat", seed=26, n=1000, lazy=str(rocblas441 / "TensileLibrary_lazy_gfx906.dat"),
                   placeholder=str(rocblas441 / "TensileLibrary_Type_CC_Contraction_l_Alik_Bljk_Cijk_Dijk_gfx906.dat"))
    assert res["exceptions"] == {} and res["refused"] > 300 and res["peak_mb"] < PEAK_MB, res


def test_dat_bombs_are_format_errors_in_bounded_memory():
    res = campaign("dat-bombs")
    assert "maps and lists" in res["lazy-empty-maps"], res
    assert "more than the 1,048,576 one may have" in res["placeholder-fat-solutions"], res
    assert "more than 65,536" in res["placeholder-many"] and "more than" in res["sparse-300MB"], res
    assert res["placeholder-empty-maps"] == "read", res   # skipped by msgpack's C skip, never built
    assert res["peak_mb"] < PEAK_MB, res


@pytest.mark.skipif(os.geteuid() != 0, reason="the config's ownership rule is root's")
def test_config_fuzz_one_line_errors_only():
    res = campaign("config", seed=26, n=2000)
    assert res["exceptions"] == {} and res["codes"].get("USAGE", 0) > 500, res
    assert res["codes"].get("200MB:USAGE") == 1 and res["peak_mb"] < PEAK_MB, res


def test_patch_target_fuzz_never_raises():
    res = campaign("patch", seed=26, n=400)
    assert res["exceptions"] == {} and res["states"].get("refused", 0) > 50, res
    assert res["peak_mb"] < PEAK_MB, res


def test_the_peak_memory_figure_is_the_childs():
    """A child's figure is its own, whatever the parent holds (CI's pytest held 624 MB and every
    campaign reported 624 under ru_maxrss), and it sees what the child itself allocates."""
    ballast = bytearray(400 << 20)
    ballast[::4096] = b"x" * len(ballast[::4096])          # touched: resident in this process
    small = _in_child("import json; from tests.test_readers_fuzz import peak_mb; "
                      "print(json.dumps({'peak_mb': peak_mb()}))")
    big = _in_child("import json; from tests.test_readers_fuzz import peak_mb; b = bytearray(350 << 20); "
                    "b[::4096] = b'y' * len(b[::4096]); print(json.dumps({'peak_mb': peak_mb()}))")
    del ballast
    assert small["peak_mb"] < 150 and big["peak_mb"] >= 350, (small, big)
