"""The state folder lost (``rm -rf /var/lib/rocmrevive``) after an install: ``status`` names the
installed files it still recognises (byte for byte the manifest's files as the install extracted
them into the cache) and ``rollback --orphans`` removes exactly those, journaled, leaving the
tree as it was before the install."""
from __future__ import annotations

import json
import shutil

from tests.test_install import demo, rr, tree_hash  # noqa: F401  (demo is a fixture)


def _cache_args(args: list[str]) -> list[str]:
    i = args.index("--cache")
    return ["--cache", args[i + 1], "--manifests", args[args.index("--manifests") + 1]]


def test_state_folder_lost_status_names_the_files_and_rollback_orphans_removes_them(demo):
    root, _deb, args = demo
    before = tree_hash(root / "opt")
    rr(root, "install", *args, check_rc=0)
    lib = root / "opt/rocm-6.4.3/lib/rocblas/library"
    installed = sorted(p.name for p in lib.iterdir() if "gfx906" in p.name)
    shutil.rmtree(root / "var/lib/rocmrevive")
    extra = _cache_args(args)

    doc = json.loads(rr(root, "--json", "status", *extra, check_rc=0).stdout)
    (o,) = doc["orphans"]
    assert o["folder"] == "/opt/rocm-6.4.3/lib/rocblas/library" and o["manifest"] == "rocblas-4.4-gfx906-test"
    assert o["source"] == "test-source" and sorted(p.rsplit("/", 1)[1] for p in o["files"]) == installed
    out = rr(root, "status", *extra, check_rc=0).stdout
    assert "rocmrevive has changed nothing here" not in out
    assert f"{len(installed)} files are manifest rocblas-4.4-gfx906-test's" in out and "rollback --orphans" in out

    # a file changed since is not recognised, so not removed
    changed = lib / installed[0]
    keep = changed.read_bytes()
    changed.write_bytes(keep + b"x")
    doc = json.loads(rr(root, "--json", "rollback", "--orphans", "--dry-run", *extra, check_rc=0).stdout)
    assert doc["changed"] is False and len(doc["orphans"][0]["files"]) == len(installed) - 1
    assert sorted(p.name for p in lib.iterdir() if "gfx906" in p.name) == installed
    changed.write_bytes(keep)

    doc = json.loads(rr(root, "--json", "rollback", "--orphans", *extra, check_rc=0).stdout)
    assert doc["changed"] is True and doc["orphans"][0]["txid"]
    assert tree_hash(root / "opt") == before
    doc = json.loads(rr(root, "--json", "status", *extra, check_rc=0).stdout)
    assert doc["orphans"] == [] and doc["transactions"][0]["meta"]["orphans"] is True
    # the removal is a transaction like any other: rolled back, the files are back
    rr(root, "rollback", check_rc=0)
    assert sorted(p.name for p in lib.iterdir() if "gfx906" in p.name) == installed


def test_files_a_journal_records_are_not_orphans(demo):
    root, _deb, args = demo
    rr(root, "install", *args, check_rc=0)
    doc = json.loads(rr(root, "--json", "status", *_cache_args(args), check_rc=0).stdout)
    assert doc["orphans"] == []
    doc = json.loads(rr(root, "--json", "rollback", "--orphans", *_cache_args(args), check_rc=0).stdout)
    assert doc["changed"] is False and doc["orphans"] == []


def test_an_index_that_is_a_fifo_or_a_link_is_not_waited_on_nor_followed(tmp_path):
    """The cache's extraction index read by `status`/`rollback --orphans`: a FIFO planted there
    used to block the read forever; a link is not followed."""
    import os
    import threading

    from rocmrevive.diagnose.orphans import _read_index

    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    got = []
    t = threading.Thread(target=lambda: got.append(_read_index(fifo)), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive() and got == [{}]
    real = tmp_path / "real.json"
    real.write_text('{"a.co": ["%s", 3]}' % ("0" * 64))
    (tmp_path / "link.json").symlink_to(real)
    assert _read_index(tmp_path / "link.json") == {} and _read_index(real) == {"a.co": ("0" * 64, 3)}
