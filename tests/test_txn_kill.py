"""kill -9 at every step boundary and at random moments of apply, rollback and recover; then the
next command finds the journal and recovery leaves the tree wholly old or wholly new (tree hash),
never mixed, never with a stray temporary, and the machine stays usable.

Each run is a child ``python -c`` calling the transaction API; ``ROCMREVIVE_TEST_KILL_AT=*:n``
makes it SIGKILL itself at its n-th step boundary (rocmrevive/txn/testseam.py)."""
from __future__ import annotations

import concurrent.futures
import json
import random
import signal
import statistics
import subprocess
import time
from collections import Counter

import pytest
from test_txn_support import Machine, child_cmd, child_env, cli, run_child

from rocmrevive.errors import RevError
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.history import list_transactions
from rocmrevive.txn.state import find_pending, require_no_pending
from rocmrevive.txn.undo import recover_pending, rollback

RANDOM_APPLY_RUNS = 200
RANDOM_ROLLBACK_RUNS = 40
PARALLEL = 4


@pytest.fixture(scope="module")
def ref(tmp_path_factory):
    """Hashes of the tree before (old) and after (new) the plan, from a clean run."""
    m = Machine.build(tmp_path_factory.mktemp("ref"))
    old = m.hash()
    apply_plan(m.root, m.plan())
    new = m.hash()
    assert old != new
    return {"old": old, "new": new}


class Runs:
    def __init__(self, tmp_path_factory):
        self.factory = tmp_path_factory
        self.count = 0

    def machine(self, applied: bool = False) -> Machine:
        m = Machine.build(self.factory.mktemp("run"))
        if applied:
            apply_plan(m.root, m.plan())
        return m


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    return Runs(tmp_path_factory)


def settle(m: Machine, ref: dict) -> tuple[str, bool]:
    """What a user's next command sees, then recovery: returns (old|new, was_pending)."""
    pending = find_pending(m.root)
    if pending:
        with pytest.raises(RevError) as ei:
            require_no_pending(m.root)
        assert ei.value.code == "INTERRUPTED"
    results = recover_pending(m.root)
    assert [r.txid for r in results] == list(reversed(pending))
    h = m.hash()
    assert h in (ref["old"], ref["new"]), f"mixed tree after recovery: {m.base}"
    assert find_pending(m.root) == []
    for t in list_transactions(m.root):
        assert t.state in ("committed", "rolled_back"), t
        if t.state == "committed":
            assert t.integrity == "intact", t
    committed = [t for t in list_transactions(m.root) if t.state == "committed"]
    assert (h == ref["new"]) == bool(committed), "the journal and the tree disagree"
    return ("new" if h == ref["new"] else "old"), bool(pending)


def still_usable(m: Machine, ref: dict, state: str) -> None:
    """After recovery the next apply or rollback works and lands where it should."""
    if state == "new":
        rollback(m.root)
        assert m.hash() == ref["old"]
    else:
        assert apply_plan(m.root, m.plan()).changed
        assert m.hash() == ref["new"]


def each_boundary(runs: Runs, op: str, ref: dict, *, applied: bool, prepare=None, limit: int = 200):
    """Kill ``op`` at its 1st, 2nd, ... step boundary until it completes; yield each run's outcome."""
    for n in range(1, limit):
        m = runs.machine(applied=applied)
        if prepare:
            prepare(m)
        p = run_child(m, op, m.plan() if op == "apply" else None, kill_at=f"*:{n}")
        runs.count += 1
        if p.returncode == 0:
            return
        assert p.returncode == -signal.SIGKILL, p.stdout + p.stderr
        yield n, m
    raise AssertionError(f"{op} did not complete within {limit} boundaries")


def test_kill_apply_at_every_step_boundary(runs, ref):
    outcomes = Counter()
    for n, m in each_boundary(runs, "apply", ref, applied=False):
        state, pending = settle(m, ref)
        outcomes[(state, pending)] += 1
        if n % 4 == 0:
            still_usable(m, ref, state)
    print("apply boundaries:", dict(outcomes))
    # begin, 2 backups, 2 mkdirs, 7 stages, intents, 8 renames, dirsyncs, done, commit
    assert sum(outcomes.values()) >= 25, outcomes
    assert outcomes[("old", True)] >= 15, "interrupted applies were undone"
    assert outcomes[("new", True)] >= 3, "applies killed after the last rename were rolled forward"
    assert outcomes[("new", False)] == 1, "killed after commit: nothing pending"


def test_kill_rollback_at_every_step_boundary(runs, ref):
    outcomes = Counter()
    for n, m in each_boundary(runs, "rollback", ref, applied=True):
        state, pending = settle(m, ref)
        outcomes[(state, pending)] += 1
        if n % 3 == 0:
            still_usable(m, ref, state)
    print("rollback boundaries:", dict(outcomes))
    assert outcomes[("old", True)] >= 8, outcomes  # a rollback cut short is completed
    assert outcomes[("new", True)] == 0, outcomes  # never rolled "forward" into the installed state


@pytest.mark.parametrize("first_kill", ["rename:3", "dirsync:1"])
def test_kill_recover_itself_at_every_step_boundary(runs, ref, first_kill):
    """Recovery must survive being killed too: kill the apply, then kill recover at each of its
    boundaries, then recover again."""
    def interrupted_apply(m):
        assert run_child(m, "apply", m.plan(), kill_at=first_kill).returncode == -9
    seen = Counter()
    for n, m in each_boundary(runs, "recover", ref, applied=False, prepare=interrupted_apply):
        state, pending = settle(m, ref)
        seen[state] += 1
    print(f"recover after {first_kill}: {n} boundaries", dict(seen))
    # rename:3 → undone (old); dirsync:1 → every file was in place → rolled forward (new)
    assert set(seen) == ({"old"} if first_kill == "rename:3" else {"new"}), seen


def _kill_at_random(m: Machine, op: str, delay: float) -> int:
    p = subprocess.Popen(child_cmd(m, op, m.plan() if op == "apply" else None), env=child_env(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "go"  # imports done; the call starts now
    time.sleep(delay)
    p.send_signal(signal.SIGKILL)
    p.wait()
    p.stdout.close()
    p.stderr.close()
    return p.returncode


def _duration(runs: Runs, op: str) -> float:
    m = runs.machine(applied=op == "rollback")
    p = run_child(m, op, m.plan() if op == "apply" else None)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout.splitlines()[-1])["elapsed"]


@pytest.mark.parametrize("op,n", [("apply", RANDOM_APPLY_RUNS), ("rollback", RANDOM_ROLLBACK_RUNS)])
def test_kill_at_random_moments(runs, ref, op, n):
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:  # timed under the same load as the kills
        span = statistics.median(pool.map(lambda _: _duration(runs, op), range(2 * PARALLEL))) * 1.3
    rnd = random.Random(906)
    delays = [rnd.uniform(0, span) for _ in range(n)]

    def one(delay):
        m = runs.machine(applied=op == "rollback")
        rc = _kill_at_random(m, op, delay)
        return rc, m

    outcomes = Counter()
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        done = list(pool.map(one, delays))
    for i, (rc, m) in enumerate(done):
        assert rc in (0, -9), rc
        state, pending = settle(m, ref)
        outcomes[(state, pending, rc)] += 1
        if i % 20 == 0:
            still_usable(m, ref, state)
    runs.count += n
    print(f"random {op}: span {span * 1000:.0f} ms", dict(outcomes))
    interrupted = sum(v for (s, p, rc), v in outcomes.items() if p)
    # how many random kills land inside depends on the machine's load (5 of 40 on a busy 2-core
    # machine, ~1 in 3 when idle): the campaign must reach inside at least once; every step
    # boundary is killed deterministically by the tests above, whatever the load
    assert interrupted >= 1, f"no kill landed inside the transaction: {dict(outcomes)}"


def test_the_next_command_of_any_kind_finds_the_interrupted_journal(runs, ref):
    m = runs.machine()
    assert run_child(m, "apply", m.plan(), kill_at="rename:4").returncode == -9
    h = m.hash()
    assert h not in (ref["old"], ref["new"]), "killed mid-rename the tree is mixed until recovery"
    rc, doc, _ = cli(m, "status")
    assert rc == 9 and doc["error"]["code"] == "INTERRUPTED" and doc["pending"]
    assert "rocmrevive recover" in doc["error"]["message"]
    rc, doc, _ = cli(m, "rollback")
    assert rc == 9 and doc["error"]["code"] == "INTERRUPTED"
    rc, doc, _ = cli(m, "recover", "--dry-run")
    assert rc == 0 and doc["recovered"][0]["state"] == "dry-run" and m.hash() == h
    rc, doc, _ = cli(m, "recover")
    assert rc == 0 and doc["changed"] and doc["recovered"][0]["state"] == "rolled_back"
    assert m.hash() == ref["old"]
    rc, doc, _ = cli(m, "status")
    assert rc == 0 and doc["pending"] == []


def test_a_torn_journal_line_is_ignored_and_recovery_continues(runs, ref):
    m = runs.machine()
    assert run_child(m, "apply", m.plan(), kill_at="rename:2").returncode == -9
    j = m.journals()[0]
    with open(j, "ab") as f:
        f.write(b'{"type":"done","path":"/opt/rocm-6.4.3/lib/rocb')  # a write the kill cut short
    assert settle(m, ref) == ("old", True)
    assert j.read_text().splitlines()[-1].startswith('{') and '"rolled_back"' in j.read_text().splitlines()[-1]


def test_summary_of_runs(runs):
    """At least 200 killed runs in this module (counted as they happened)."""
    assert runs.count >= 200, runs.count
