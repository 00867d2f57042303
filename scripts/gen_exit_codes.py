"""Write the exit-code table from ``rocmrevive/errors.py`` into the README and the Ansible
collection (``make exit-codes``). Each copy lives between two marker lines; ``--check`` only
says which copy differs (exit 1) and writes nothing.

    python3 scripts/gen_exit_codes.py [--check]
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rocmrevive.errors import exit_table_markdown, exit_table_python  # noqa: E402

# (file, begin marker, end marker, generated text)
COPIES = [
    ("README.md", "<!-- exit-codes: generated from rocmrevive/errors.py (make exit-codes) -->",
     "<!-- /exit-codes -->", exit_table_markdown),
    ("collections/ansible_collections/rocmrevive/gfx906/plugins/module_utils/rocmrevive.py",
     "# exit-codes: generated from rocmrevive/errors.py (make exit-codes)", "# /exit-codes", exit_table_python),
]


def regenerated(text: str, begin: str, end: str, body: str) -> str:
    """``text`` with what stands between the ``begin`` and ``end`` lines replaced by ``body``."""
    pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.S)
    if not pattern.search(text):
        raise SystemExit(f"marker {begin!r} ... {end!r} not found")
    return pattern.sub(lambda _: f"{begin}\n{body}{end}", text, count=1)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for rel, begin, end, render in COPIES:
        path = REPO / rel
        old = path.read_text()
        new = regenerated(old, begin, end, render())
        if new != old:
            stale.append(rel)
            if not check:
                path.write_text(new)
    for rel in stale:
        print(f"{rel}: exit-code table {'differs from' if check else 'regenerated from'} rocmrevive/errors.py")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
