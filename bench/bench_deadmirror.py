#!/usr/bin/env python3
"""Time to the error of `rocmrevive install --yes` against a dead mirror, the old downloader
against the new one, in one run (issue 39).

Mirrors (tests/mirrors_support.py, real sockets on 127.0.0.1, no root-only network tricks):
``drop`` drops connection attempts (a listening socket whose accept queue is full: Linux drops
the SYNs, as a firewall that drops packets does); ``silent`` accepts every connection and never
sends a byte; ``refused`` (nothing listens, which ends at the first attempt in both) is the run's
own time around the download, the part of the others' figures that is not waiting.

Machine: the demo's dual-MI50 with a mini rocBLAS 4.4 tree lacking gfx906 (the shipped
manifests, so the rocBLAS package and the host libraries' sources all point at the dead mirror).

Old: the downloader of the commit this branch started from (``git merge-base HEAD main``,
extracted into a temporary folder and run from there: 15 s connect / 60 s read timeouts, 4
retries with a growing backoff); new: this working tree. Each run is timed as wall-clock from
the start of the process to its exit; the lines it printed on stderr before the last one are
counted (what a user saw meanwhile). Then the downloader alone (``Downloader()`` as install makes
it, old and new, each in a process of its own, timed from its first attempt to its error): the
figure machine load and start-up leave alone.

    python bench/bench_deadmirror.py [--only new] [--json]
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from tests.mirrors_support import dropping_port, silent_port  # noqa: E402
from tests.test_contract_readonly import demo_machine  # noqa: E402


def old_code(where: Path) -> tuple[Path, str]:
    """rocmrevive/ of the branch's starting commit, extracted under ``where``."""
    base = subprocess.run(["git", "-C", str(REPO), "merge-base", "HEAD", "main"], capture_output=True, text=True,
                          check=True).stdout.strip()
    tar = subprocess.run(["git", "-C", str(REPO), "archive", "--format=tar", base, "rocmrevive", "manifests", "patches"],
                         capture_output=True, check=True).stdout
    tf = where / "old.tar"
    tf.write_bytes(tar)
    with tarfile.open(tf) as t:
        t.extractall(where / "old", filter="data")
    return where / "old", base[:12]  # rocmrevive/data links to ../../manifests and ../../patches


@contextlib.contextmanager
def refused_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    yield port


def run(code: Path, root: Path, port: int, cache: Path) -> dict:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(code)}
    t0 = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "install", "--yes",
                        "--mirror", f"http://127.0.0.1:{port}/debian", "--cache", str(cache)],
                       capture_output=True, text=True, env=env, cwd=str(code))
    took = time.monotonic() - t0
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    return {"seconds": round(took, 1), "exit": p.returncode, "lines_before_error": len(lines) - 1,
            "retry_lines": sum("trying again" in ln for ln in lines), "last": lines[-1][:200] if lines else ""}


DOWNLOAD = """
import sys, time
from pathlib import Path
from rocmrevive.errors import RevError
from rocmrevive.sources.http import Downloader
t0 = time.monotonic()
try:
    Downloader().download(sys.argv[1], Path(sys.argv[2]), size=1 << 20, sha256="0" * 64)
except RevError as exc:
    print(round(time.monotonic() - t0, 2), exc.code)
"""


def run_downloader(code: Path, port: int, where: Path) -> dict:
    """The downloader alone, as install makes it (``Downloader()``), in a process of its own: the
    seconds from its first attempt to its error, start-up and machine load left out."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    p = subprocess.run([sys.executable, "-c", DOWNLOAD, f"http://127.0.0.1:{port}/debian/x.deb", str(where / "x.part")],
                       capture_output=True, text=True, env=env, cwd=str(code))
    took, code_ = p.stdout.split()
    return {"seconds": float(took), "error": code_}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("old", "new"))
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="bench-deadmirror-") as t:
        tmp = Path(t)
        codes = {}
        if a.only != "new":
            codes["old"], out["old_commit"] = old_code(tmp)
        if a.only != "old":
            codes["new"] = REPO
        # refused: nothing listens (ends at the first attempt, old and new): the run's own time
        # before and after the download, what a dead mirror's figure includes beside its timeouts
        for mirror, cm in (("refused", refused_port), ("drop", dropping_port), ("silent", silent_port)):
            for side, code in codes.items():
                with cm() as got:
                    port = got if isinstance(got, int) else got[0]
                    root = demo_machine(tmp / f"m-{mirror}-{side}")
                    r = run(code, root, port, tmp / f"c-{mirror}-{side}")
                    if not isinstance(got, int):
                        r["connections"] = got[1]()
                out[f"{mirror}/{side}"] = r
                if not a.json:
                    print(f"{mirror:6} {side}: {r['seconds']:6.1f} s to exit {r['exit']}, "
                          f"{r['retry_lines']} retry line(s) before the error", flush=True)
        for mirror, cm in (("drop", dropping_port), ("silent", silent_port)):
            for side, code in codes.items():
                with cm() as got:
                    port = got if isinstance(got, int) else got[0]
                    where = tmp / f"dl-{mirror}-{side}"
                    where.mkdir()
                    r = run_downloader(code, port, where)
                out[f"downloader {mirror}/{side}"] = r
                if not a.json:
                    print(f"downloader {mirror:6} {side}: {r['seconds']:6.1f} s to {r['error']}", flush=True)
        for mirror in ("refused", "drop", "silent", "downloader drop", "downloader silent"):
            if f"{mirror}/old" in out and f"{mirror}/new" in out:
                out[f"{mirror}/ratio_new_to_old"] = round(out[f"{mirror}/new"]["seconds"] /
                                                          out[f"{mirror}/old"]["seconds"], 3)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
