"""Run rocmrevive in the benchmarks as an installed copy runs: from compiled bytecode.

pip compiles a package's modules when it installs it, so a user's `rocmrevive` starts from
``.pyc`` files. A machine whose environment sets PYTHONDONTWRITEBYTECODE (this project's build
machine does) would instead compile some forty modules on every timed run, which is most of
a short command's time. ``use_bytecode()`` turns that off for this process and the commands it
starts, with the bytecode kept in a folder of the system temp area (never in the checkout), and
compiles the checkout once up front.

    from bytecode import use_bytecode; use_bytecode()      # first thing in a bench's main()
"""
from __future__ import annotations

import compileall
import os
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def use_bytecode(*checkouts: Path) -> None:
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    prefix = os.environ.setdefault("PYTHONPYCACHEPREFIX",
                                   str(Path(tempfile.gettempdir()) / "rocmrevive-bench-pycache"))
    sys.dont_write_bytecode = False
    sys.pycache_prefix = prefix
    for checkout in (REPO, *checkouts):
        compileall.compile_dir(str(Path(checkout) / "rocmrevive"), quiet=1)
