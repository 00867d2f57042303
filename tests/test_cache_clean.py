"""``rocmrevive cache clean``: what no manifest needs leaves the cache (an unpinned artifact, an
extraction of it, a download no run holds, a dead run's staging folder), with the bytes freed;
the pinned artifact and its extraction stay, so the next install still needs no download."""
from __future__ import annotations

import json
import os

from tests.test_install import demo, rr  # noqa: F401  (demo is a fixture)


def test_cache_clean_removes_what_no_manifest_needs_and_keeps_the_pinned(demo):
    root, _deb, args = demo
    rr(root, "install", *args, check_rc=0)
    cache = args[args.index("--cache") + 1]
    extra = ["--cache", cache, "--manifests", args[args.index("--manifests") + 1]]
    from pathlib import Path
    c = Path(cache)
    kept = sorted(str(p.relative_to(c)) for p in c.rglob("*") if p.is_file() and "partial" not in p.parts)
    (c / "sha256" / ("ab" * 32)).write_bytes(b"x" * 5000)
    (c / "extracted" / f"{'ab' * 16}-rocblas-4.4-gfx906-test" / "files").mkdir(parents=True)
    (c / "extracted" / f"{'ab' * 16}-rocblas-4.4-gfx906-test" / "files" / "a.co").write_bytes(b"y" * 3000)
    (c / "partial" / f"{'cd' * 32}.part").write_bytes(b"z" * 1000)
    (c / "staging" / "stage-999999999-abc").mkdir(parents=True)

    locks = sum(p.stat().st_size for p in (c / "partial").glob("*.lock"))   # each names its last holder
    doc = json.loads(rr(root, "--json", "cache", "clean", "--dry-run", *extra, check_rc=0).stdout)
    assert doc["changed"] is False and doc["bytes_freed"] == 9000 + locks
    assert (c / "sha256" / ("ab" * 32)).exists()
    doc = json.loads(rr(root, "--json", "cache", "clean", *extra, check_rc=0).stdout)
    assert doc["changed"] is True and doc["bytes_freed"] == 9000 + locks
    assert {e["why"] for e in doc["removed"]} >= {"unpinned", "unused", "partial", "stale"}
    assert sorted(str(p.relative_to(c)) for p in c.rglob("*") if p.is_file() and "partial" not in p.parts) == kept
    out = rr(root, "cache", "clean", *extra, check_rc=0).stdout
    assert "freed 0 B" in out
    rr(root, "rollback", check_rc=0)
    r = rr(root, "install", *args, check_rc=0)
    assert "using the 9 files extracted earlier" in r.stderr
    assert not os.path.exists(c / "staging" / "stage-999999999-abc")
