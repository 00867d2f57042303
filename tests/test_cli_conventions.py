"""What apt users type works: ``install --dry-run`` / ``-s`` (= ``--check``), ``--assume-yes``
(= ``--yes``), a mistyped command gets "did you mean", and a successful install ends with a
closing line that says how to check and undo it, as the user must type it."""
from __future__ import annotations

import json
from pathlib import Path

from tests.test_install import demo, rr, tree_hash  # noqa: F401  (demo is a fixture)


def test_apt_aliases_and_a_closing_line(demo):
    root, _deb, args = demo
    before = tree_hash(root / "opt")
    args = [a for a in args if a != "--yes"]
    for alias in ("--dry-run", "-s"):
        doc = json.loads(rr(root, "--json", "install", alias, *args, check_rc=20).stdout)
        assert doc["error"]["code"] == "CHANGES_PENDING" and doc["changed"] is False
    assert tree_hash(root / "opt") == before
    r = rr(root, "install", "--assume-yes", *args, check_rc=0)
    last = r.stdout.rstrip().splitlines()[-1]
    assert last.startswith("done: 1 transaction applied") and f"rocmrevive --root {root} verify" in last
    assert f"sudo rocmrevive --root {root} rollback" in last
    r = rr(root, "install", "--assume-yes", *args, check_rc=0)   # nothing to do: no closing line
    assert "done:" not in r.stdout


def test_a_mistyped_command_gets_did_you_mean(tmp_path):
    r = rr(tmp_path, "instal")
    assert r.returncode == 2 and "No such command 'instal': did you mean 'install'?" in r.stderr
    r = rr(tmp_path, "--json", "rolback")
    assert r.returncode == 2 and "did you mean 'rollback'?" in json.loads(r.stdout)["error"]["message"]
    r = rr(tmp_path, "frobnicate")
    assert r.returncode == 2 and "did you mean" not in r.stderr


def test_an_install_waiting_on_anothers_extraction_says_who_holds_it(demo):
    """A second install that must wait for the first one's extraction names the holder's PID and
    the lock, then goes on when it is released (here: a process holding the very lock)."""
    import hashlib
    import os
    import subprocess
    import sys

    root, deb, args = demo
    cache = Path(args[args.index("--cache") + 1])
    (cache / "partial").mkdir(parents=True)
    key = f"{hashlib.sha256(deb.read_bytes()).hexdigest()[:32]}-rocblas-4.4-gfx906-test"
    lock = cache / "partial" / f"extract-{key}.lock"
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys\nf = open(sys.argv[1], 'a')\n"
                               "fcntl.flock(f, fcntl.LOCK_EX)\nprint('held', flush=True)\nsys.stdin.read()", str(lock)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    inst = subprocess.Popen([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "install", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "NO_COLOR": "1"})
    import threading

    # a guard, not a measure: a run that never says it waits (the old code) still ends
    guard = threading.Timer(30, holder.stdin.close)
    guard.start()
    seen = []
    for line in inst.stderr:
        seen.append(line)
        if "waiting for another rocmrevive" in line:
            break
    guard.cancel()
    if not holder.stdin.closed:
        holder.stdin.close()   # the holder lets go: the install goes on
    holder.wait()
    out, err = inst.communicate()
    assert inst.returncode == 0, (seen, err)
    assert f"waiting for another rocmrevive (PID {holder.pid})" in seen[-1] and str(lock) in seen[-1]


def test_install_check_changes_nothing_not_even_the_cache(demo):
    """The README says --check changes nothing: no cache folder made on a first run, and a filled
    cache (after a real install) byte for byte as it was, with no lock or partial file added."""
    root, _deb, args = demo
    cache = Path(args[args.index("--cache") + 1])
    doc = json.loads(rr(root, "--json", "install", "--check", *args, check_rc=20).stdout)
    assert doc["copies"][0]["status"] == "planned" and doc["copies"][0]["summary"]["create"] == 9
    assert not cache.exists()
    rr(root, "install", *args, check_rc=0)
    rr(root, "rollback", check_rc=0)
    before = tree_hash(cache)
    r = rr(root, "install", "--check", *args, check_rc=20)
    assert tree_hash(cache) == before, r.stderr
    rr(root, "install", *args, check_rc=0)        # the real install still fills and uses it
