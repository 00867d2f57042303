"""The real round trip: AMD's layout ``opt/rocm-6.4.3/lib/rocblas/library`` filled from Debian's
real rocBLAS 4.4.1 minus its gfx906 files (AMD's 6.4.x ships the same names without gfx906),
then the 140 gfx906 files applied as one transaction from the real package, then rolled back.

Tree files are hard links into the unpacked package cache: a transaction only ever renames new
inodes into place or unlinks, so the cache is never written; the test checks that too."""
from __future__ import annotations

import os
import time

import pytest

from rocmrevive.rootfs import Root
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.fsutil import sha256_file, tree_listing
from rocmrevive.txn.history import list_transactions
from rocmrevive.txn.plan import plan_from_staged
from rocmrevive.txn.undo import rollback

pytestmark = pytest.mark.debian
LIB = "/opt/rocm-6.4.3/lib/rocblas/library"


def test_real_gfx906_files_round_trip(tmp_path, rocblas441):
    base = tmp_path / "machine"
    lib = base / LIB.lstrip("/")
    lib.mkdir(parents=True)
    (base / "opt/rocm").symlink_to("/opt/rocm-6.4.3")
    names = sorted(os.listdir(rocblas441))
    gfx906 = [n for n in names if "gfx906" in n]
    assert len(gfx906) == 140
    for n in names:
        if n not in gfx906:
            os.link(rocblas441 / n, lib / n)
    root = Root(base)
    before = tree_listing(base / "opt")
    plan = plan_from_staged(root, "/opt/rocm", {f"/opt/rocm/lib/rocblas/library/{n}": rocblas441 / n for n in gfx906},
                            source="deb:librocblas4_6.4.4-4_amd64.deb",
                            meta={"manifest": "rocblas-4.4.1-gfx906", "rocm": "6.4.3"})
    assert plan.summary()["create"] == 140 and 135e6 < plan.summary()["bytes"] < 145e6

    t0 = time.perf_counter()
    res = apply_plan(root, plan)
    elapsed = time.perf_counter() - t0
    assert res.changed and len([a for a in res.actions if a.op == "create"]) == 140
    after = tree_listing(base / "opt")
    added = {k: v for k, v in after.items() if k not in before}
    assert sorted(added) == sorted(f"rocm-6.4.3/lib/rocblas/library/{n}" for n in gfx906)
    assert {k: v for k, v in after.items() if k in before} == before, "something else changed"
    for n in gfx906:  # byte for byte Debian's, with the tree's owner and mode
        assert added[f"rocm-6.4.3/lib/rocblas/library/{n}"] == ["f", 0o644, 0, 0, sha256_file(rocblas441 / n)[0]]
        assert os.stat(lib / n).st_nlink == 1, "installed files are copies, not links into the cache"
    assert list_transactions(root)[0].integrity == "intact"
    assert apply_plan(root, plan).changed is False

    rollback(root)
    assert tree_listing(base / "opt") == before
    print(f"apply of 140 files / {plan.summary()['bytes'] / 1e6:.0f} MB: {elapsed:.2f} s")
