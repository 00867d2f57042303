#!/usr/bin/env python3
"""Extraction and download figures for the sources layer, each against a baseline, in one run.

1. Extracting the gfx906 members of Debian's librocblas4 6.4.4-4 (280 MB .deb, 4.1 GB of tar):
   rocmrevive's ``extract_selected`` against ``dpkg-deb --fsys-tarfile X | tar -x --wildcards '*gfx906*'``.
   Runs alternate (A B A B ...) so a busy machine hurts both alike; the ratio uses the best of each.
   Both outputs are compared byte for byte.
2. Downloading the same file from a real HTTP server on 127.0.0.1 with ``fetch_source`` (resume-able,
   sha256 checked as it arrives, moved into the cache), against ``curl -o /dev/null`` when present.

    python bench/bench_extract.py [--deb PATH] [--rounds 3] [--python] [--json]

Goal (docs/architecture.md, "Decisions"): extraction ratio <= 1.1.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rocmrevive.sources.fetch import fetch_source  # noqa: E402
from rocmrevive.sources.http import Downloader  # noqa: E402
from rocmrevive.sources.manifest_load import load_manifests  # noqa: E402
from rocmrevive.sources.unpack import extract_selected  # noqa: E402

DEFAULT_DEB = Path(os.environ.get("ROCMREVIVE_TEST_CACHE", "/var/tmp/rocmrevive-test-cache")) / \
    "debs/librocblas4_6.4.4-4_amd64.deb"


def _dpkg(deb: Path, out: Path) -> float:
    out.mkdir(parents=True)
    t0 = time.perf_counter()
    subprocess.run(f"dpkg-deb --fsys-tarfile '{deb}' | tar -x -C '{out}' --wildcards '*gfx906*'", shell=True,
                   check=True)
    return time.perf_counter() - t0


def _ours(deb: Path, out: Path, manifest, source, external: bool) -> tuple[float, list]:
    t0 = time.perf_counter()
    staged = extract_selected(deb, manifest.select, out, member_prefix=source.member_prefix, external=external)
    return time.perf_counter() - t0, staged


def _same(staged, ref_dir: Path, prefix: str) -> bool:
    ref = ref_dir / prefix.lstrip("./")
    names = sorted(p.name for p in ref.iterdir())
    if names != sorted(f.name for f in staged):
        return False
    return all(f.path.read_bytes() == (ref / f.name).read_bytes() for f in staged)


def bench_extract(deb: Path, rounds: int, python_too: bool) -> dict:
    m = {x.id: x for x in load_manifests(REPO / "manifests")}["rocblas-4.4-gfx906"]
    src = m.source("debian-librocblas4")
    with open(deb, "rb") as f:  # warm the page cache once, for both
        while f.read(1 << 24):
            pass
    a, b, c = [], [], []
    ok = True
    count = 0
    for i in range(rounds):
        with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
            tmp = Path(tmp)
            first, second = (("dpkg", "ours") if i % 2 == 0 else ("ours", "dpkg"))
            for which in (first, second):
                if which == "dpkg":
                    a.append(_dpkg(deb, tmp / "dpkg"))
                else:
                    t, staged = _ours(deb, tmp / "ours", m, src, True)
                    b.append(t)
                    count = len(staged)
            ok = ok and _same(staged, tmp / "dpkg", src.member_prefix)
            if python_too:
                t, _ = _ours(deb, tmp / "py", m, src, False)
                c.append(t)
    out = {"deb": str(deb), "deb_bytes": deb.stat().st_size, "rounds": rounds, "files": count,
           "identical_to_dpkg": ok, "dpkg_tar_s": a, "rocmrevive_s": b,
           "ratio_best": min(b) / min(a), "ratio_median": statistics.median(b) / statistics.median(a)}
    if c:
        out["rocmrevive_python_lzma_s"] = c
        out["python_ratio_best"] = min(c) / min(a)
    return out


def bench_download(deb: Path) -> dict:
    from tests.fixtures.aptrepo import RepoServer  # a real http.server on 127.0.0.1

    m = {x.id: x for x in load_manifests(REPO / "manifests")}["rocblas-4.4-gfx906"]
    src = m.source("debian-librocblas4")
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-dl-") as tmp:
        tmp = Path(tmp)
        target = tmp / "srv" / "debian" / src.filename
        target.parent.mkdir(parents=True)
        os.symlink(deb.resolve(), target)
        with RepoServer(tmp / "srv") as srv:
            url = f"{srv.url}/debian/{src.filename}"
            if shutil.which("curl"):
                t0 = time.perf_counter()
                subprocess.run(["curl", "-s", "-o", "/dev/null", url], check=True)
                out["curl_s"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            r = fetch_source(src, tmp / "cache", mirror=f"{srv.url}/debian", downloader=Downloader())
            dt = time.perf_counter() - t0
            assert r.sha256 == src.sha256
    out["fetch_source_s"] = dt
    out["fetch_source_MBps"] = src.size / dt / 1e6
    if "curl_s" in out:
        out["curl_MBps"] = src.size / out["curl_s"] / 1e6
        out["ratio_vs_curl"] = dt / out["curl_s"]
    # what sha256 alone costs on this machine (the floor of any verified download)
    t0 = time.perf_counter()
    h = hashlib.sha256()
    with open(deb, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    out["sha256_only_s"] = time.perf_counter() - t0
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--deb", type=Path, default=DEFAULT_DEB)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--python", action="store_true", help="also time the pure-Python (lzma module) path")
    ap.add_argument("--no-download", action="store_true")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if not args.deb.is_file():
        print(f"{args.deb} is missing: run tests/fixtures/fetch_debian.sh first", file=sys.stderr)
        return 2
    res = {"cpus": os.cpu_count(), "load_avg_before": os.getloadavg()[0], "extract": bench_extract(args.deb, args.rounds, args.python)}
    if not args.no_download:
        res["download"] = bench_download(args.deb)
    res["load_avg_after"] = os.getloadavg()[0]
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    e = res["extract"]
    print(f"extract gfx906 members of {Path(e['deb']).name} ({e['deb_bytes'] / 1e6:.0f} MB), {e['rounds']} rounds, "
          f"{res['cpus']} CPUs, load {res['load_avg_before']:.1f}->{res['load_avg_after']:.1f}")
    print(f"  dpkg-deb --fsys-tarfile | tar -x '*gfx906*':  best {min(e['dpkg_tar_s']):.2f} s  "
          f"(all: {', '.join(f'{x:.2f}' for x in e['dpkg_tar_s'])})")
    print(f"  rocmrevive extract_selected:                  best {min(e['rocmrevive_s']):.2f} s  "
          f"(all: {', '.join(f'{x:.2f}' for x in e['rocmrevive_s'])})  {e['files']} files, "
          f"identical to dpkg: {e['identical_to_dpkg']}")
    if "rocmrevive_python_lzma_s" in e:
        print(f"  rocmrevive, Python's lzma (no xz binary):     best {min(e['rocmrevive_python_lzma_s']):.2f} s  "
              f"ratio {e['python_ratio_best']:.2f}")
    print(f"  ratio (rocmrevive / dpkg): best {e['ratio_best']:.2f}, median {e['ratio_median']:.2f}  (goal <= 1.1)")
    if "download" in res:
        d = res["download"]
        line = f"download from 127.0.0.1: fetch_source {d['fetch_source_MBps']:.0f} MB/s ({d['fetch_source_s']:.2f} s)"
        if "curl_MBps" in d:
            line += f", curl -o /dev/null {d['curl_MBps']:.0f} MB/s, ratio {d['ratio_vs_curl']:.2f}"
        print(line + f"; sha256 alone {d['sha256_only_s']:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
