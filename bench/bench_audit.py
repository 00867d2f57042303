#!/usr/bin/env python3
"""Benchmark the search for the user's own device code (`audit`'s programs part: every file of
every Python environment and install place, by content) against a plain walk that reads the first
64 bytes of every file in the same places, in one run, and print the ratio (goal: within 2x).

    python bench/bench_audit.py

The machine folder holds the three real wheels the tests cache (cyllama-rocm 0.7.0, cupy-rocm-7-0
14.2.0, jax-rocm7-plugin 0.12.0: 2,591 files, 7 with device code, 564 code objects) in a venv, and a
llama.cpp-like build folder; the second run adds a venv without device code (the test cache's
ansible-venv, 4,752 files), the usual shape of a machine. rocmrevive's figure is ``find_programs`` in-process: the environments found, every
file's header read, the section tables of the host ELFs, the owners (pip's RECORD) and the deep
read of the 7 candidates. The reference walks ``devicescan.places`` (the same folders) with
``os.scandir`` and reads 64 bytes of each regular file. The three are timed in turn, N rounds
(interleaved, so a burst of load on the shared machine falls on all of them), warm page cache;
each figure is the best of its N, and the paired ratio is the median of the N rounds' own
ratios.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

WHEELS = (("cyllama-rocm", "0.7.0", "e6ebb996d986f1add67a29300ded7781d50456c3f5311ae648f1d72a3b144b9c"),
          ("cupy-rocm-7-0", "14.2.0", "4912fcd48491adc332ebc7ed6f1d7487545ee2b9cf6fcc906b7827dbe182fe7f"),
          ("jax-rocm7-plugin", "0.12.0", "56ea9cb8b20b2155307da1c7f81941d6811954d8ce3431ffe8d56aa251b725de"))
RUNS = 15


def plain_walk(folders: list[Path]) -> int:
    """The reference: every regular file under ``folders``, its first 64 bytes read."""
    n = 0
    stack = list(folders)
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            if e.is_dir(follow_symlinks=False):
                stack.append(e.path)
            elif e.is_file(follow_symlinks=False):
                fd = os.open(e.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    os.read(fd, 64)
                finally:
                    os.close(fd)
                n += 1
    return n


def best(fn, runs: int = RUNS) -> tuple[float, object]:
    times, out = [], None
    for _ in range(runs):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def machine(tmp: Path, ordinary_venv: Path | None) -> Path:
    """The dual-MI50 machine with the three HIP wheels in a venv and a build folder; with
    ``ordinary_venv``, also a copy (hard links) of a venv without device code, as most are."""
    from tests.fixtures.wheels import cached_wheel, unpack_wheel
    from tests.machines.build import build

    base = build("dual-mi50", tmp / "m")
    site = base / "home/alice/venv/lib/python3.12/site-packages"
    for name, version, sha in WHEELS:
        unpack_wheel(cached_wheel(name, version, sha, python_version="3.12"), site)
    (base / "home/alice/venv/pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    build_bin = base / "home/alice/llama.cpp/build/bin"
    build_bin.mkdir(parents=True)
    for lib in sorted(site.glob("cyllama_rocm.libs/*.so"))[:3]:
        shutil.copy(lib, build_bin / lib.name)
    if ordinary_venv is not None:
        subprocess.run(["cp", "-al", str(ordinary_venv), str(base / "home/alice/tools")], check=True)
    return base


def scenario(label: str, base: Path) -> None:
    from rocmrevive.codeobj.targetid import TargetId
    from rocmrevive.diagnose.devicescan import places, walk
    from rocmrevive.diagnose.programs import find_programs
    from rocmrevive.rootfs import Root
    from rocmrevive.trees.pythonenv import find_envs

    root = Root(str(base))
    mi50 = [TargetId.parse("gfx906:sramecc+:xnack-")]
    envs, _ = find_envs(root, ())
    where = places(root, [e.site_packages for e in envs])
    folders = [root.path(p.path) for p in where]
    rep, files = find_programs(root, mi50), plain_walk(folders)   # warm
    rounds = [(best(lambda: find_programs(root, mi50), 1)[0], best(lambda: plain_walk(folders), 1)[0],
               best(lambda: list(walk(root, where)), 1)[0]) for _ in range(RUNS)]
    t_scan, t_walk, t_head = (min(r[i] for r in rounds) for i in range(3))
    paired = sorted(r[0] / r[1] for r in rounds)[RUNS // 2]
    print(f"{label}: {rep.files_read:,} files in {len(folders)} places ({files:,} by the plain walk); "
          f"{rep.candidates} with device code by their header, {len(rep.programs)} programs, "
          f"{len(rep.cannot_run())} cannot run on the MI50")
    print(f"  find_programs (by content, owners, deep read)  {t_scan:8.3f} s")
    print(f"  its header pass alone (devicescan.walk)        {t_head:8.3f} s")
    print(f"  plain walk reading 64 bytes of every file      {t_walk:8.3f} s")
    print(f"  ratio                                          {t_scan / t_walk:8.2f}x (goal <= 2x)")
    print(f"  ratio of the header pass                       {t_head / t_walk:8.2f}x")
    print(f"  median of the {RUNS} rounds' own ratios              {paired:8.2f}x")


def main() -> int:
    ordinary = Path(os.environ.get("ROCMREVIVE_TEST_CACHE", "/var/tmp/rocmrevive-test-cache")) / "ansible-venv"
    with tempfile.TemporaryDirectory() as tmp:
        scenario("the three HIP wheels alone", machine(Path(tmp) / "a", None))
        if ordinary.is_dir():
            scenario("with an ordinary venv too (the test cache's ansible-venv)", machine(Path(tmp) / "b", ordinary))
    return 0


if __name__ == "__main__":
    from bytecode import use_bytecode

    use_bytecode()  # as an installed copy runs: from compiled modules
    sys.exit(main())
