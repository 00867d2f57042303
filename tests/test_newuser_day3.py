"""A new user's day, third pass (issue 39), driven from the outside: dead mirrors, a script's
install on a box already fine, a user's dry runs, the cache, and the output items.

The machine is the demo's (demo/machines/dual-mi50, copied) with demo/minirocblas.py's real
rocBLAS 4.4 tree lacking gfx906 and a real .deb carrying it; mirrors are real servers on
127.0.0.1 (tests/mirrors_support.py)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from rocmrevive.sources.http import BUFFER
from tests.mirrors_support import dropping_port, ranged_mirror, silent_port
from tests.security_support import folder_for_nobody
from tests.test_cli_newuser import leftovers, rr_as_nobody
from tests.test_contract_readonly import (
    LOCK,
    _site_for_nobody,
    demo_machine,
    doc_of,
    env,
    rr,
    source,  # noqa: F401  (the module fixture)
    src_args,
)
from tests.test_contract_terminal import RR, Pty
from tests.test_install import tree_hash, write_manifest


def _retry_lines(stderr: str, port: int) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.startswith(f"no answer from 127.0.0.1:{port} after 3 s")]


# ---- 1: dead mirrors end soon, saying so as they go -----------------------------------------

def _install_against(root: Path, port: int, cache: Path, *extra) -> subprocess.CompletedProcess:
    return rr(root, "install", "--yes", "--mirror", f"http://127.0.0.1:{port}/debian", "--cache", str(cache), *extra)


def test_install_from_a_mirror_that_drops_connections_says_so_per_attempt_and_gives_up(tmp_path):
    root, cache = demo_machine(tmp_path / "m"), tmp_path / "cache"
    before = tree_hash(root)
    with dropping_port() as port:
        p = _install_against(root, port, cache)
    assert p.returncode == 5, (p.returncode, p.stderr[-1500:])
    assert _retry_lines(p.stderr, port) == [
        f"no answer from 127.0.0.1:{port} after 3 s, trying again (2/3)",
        f"no answer from 127.0.0.1:{port} after 3 s, trying again (3/3)"], p.stderr[-1500:]
    last = p.stderr.strip().splitlines()[-1]
    assert f"no answer from 127.0.0.1:{port} to 3 attempts of 3 s" in last and "--mirror" in last, last
    assert "Traceback" not in p.stderr
    assert leftovers(cache) == [] and tree_hash(root) == before


def test_install_from_a_mirror_that_never_answers_tries_three_times_in_all(tmp_path):
    root, cache = demo_machine(tmp_path / "m"), tmp_path / "cache"
    before = tree_hash(root)
    with silent_port() as (port, connections):
        p = _install_against(root, port, cache, "--json")
        n = connections()
    doc = doc_of(p)
    assert p.returncode == 5 and doc["error"]["code"] == "NETWORK", p.stdout[-1500:]
    assert len(_retry_lines(p.stderr, port)) == 2, p.stderr[-1500:]
    # three attempts for the rocBLAS package; the host libraries' sources on the same host are not tried again
    assert n == 3, f"{n} connections to the silent mirror"
    assert f"no answer from 127.0.0.1:{port} to 3 attempts" in doc["error"]["message"]
    assert leftovers(cache) == [] and tree_hash(root) == before


def test_fetch_timeout_and_retries_still_apply(tmp_path):
    with silent_port() as (port, connections):
        p = rr(Path("/"), "--json", "fetch", "--manifest", "rocblas-4.4-gfx906", "--mirror",
               f"http://127.0.0.1:{port}/debian", "--cache", str(tmp_path / "c"), "--timeout", "1", "--retries", "1")
        n = connections()
    assert p.returncode == 5, p.stderr[-800:]
    assert [ln for ln in p.stderr.splitlines() if "trying again" in ln] == \
        [f"no answer from 127.0.0.1:{port} after 1 s, trying again (2/2)"], p.stderr
    assert n == 2


def test_sigterm_mid_download_keeps_the_part_without_a_lock_and_the_next_run_resumes(tmp_path):
    """A 10 MB artifact pinned by a manifest; the mirror sends 9 MB and falls silent; SIGTERM. The
    part keeps every full buffer written (BUFFER bytes each), the lock is gone, the next run asks
    for the rest with Range."""
    art = tmp_path / "librocblas4_6.4.4-4_amd64.deb"
    data = os.urandom(10 << 20)
    art.write_bytes(data)
    mf = write_manifest(tmp_path / "manifests", art)
    cache = tmp_path / "cache"
    sent_first = 9 << 20
    kept = sent_first // BUFFER * BUFFER
    args = ["--json", "fetch", "--manifests", str(mf), "--cache", str(cache), "--timeout", "30"]
    with ranged_mirror(data, art.name, hang_after=sent_first) as (url, gets, sent):
        p = subprocess.Popen([sys.executable, "-m", "rocmrevive.cli.main", *args, "--mirror", url],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env())
        assert sent.wait(60), "the mirror never sent the first part"
        (part,) = (cache / "partial").glob("*.part")
        for _ in range(100):   # the client has written the full buffers (and waits for more)
            if part.stat().st_size == kept:
                break
            time.sleep(0.05)
        assert leftovers(cache) == sorted(str(x.relative_to(cache)) for x in (part, part.with_suffix(".lock"))), \
            "the download holds its lock while it runs"
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=30)
        assert p.returncode == 130 and "Traceback" not in err, (p.returncode, err)
        assert json.loads(out)["error"]["message"].startswith("stopped by SIGTERM"), out
        assert leftovers(cache) == [str(part.relative_to(cache))], "a stale lock, or no partial file"
        assert part.stat().st_size == kept > 0
        r = rr(Path("/"), *args, "--mirror", url)
        assert r.returncode == 0, r.stderr[-800:]
        assert gets == [None, f"bytes={kept}-"], gets   # resumed where it was stopped
    assert leftovers(cache) == []
    (src,) = json.loads(r.stdout)["manifests"][0]["sources"]
    assert src["status"] == "downloaded"
    assert hashlib.sha256((cache / "sha256" / hashlib.sha256(data).hexdigest()).read_bytes()).digest() == \
        hashlib.sha256(data).digest()


# ---- 2: a script's install on a box that is already fine ------------------------------------

def test_install_plans_first_and_asks_only_when_a_change_is_pending(tmp_path, source):  # noqa: F811
    root = demo_machine(tmp_path / "m")
    args = src_args(source, tmp_path / "cache")
    before = tree_hash(root)
    r = rr(root, "--json", "install", *args, stdin=subprocess.DEVNULL)   # pending, no terminal, no --yes
    doc = doc_of(r)
    assert r.returncode == 2 and doc["error"]["code"] == "USAGE", r.stdout[-1500:]
    assert "a change is pending and there is no terminal to ask on" in doc["error"]["message"]
    assert tree_hash(root) == before and not (root / LOCK).exists()
    assert rr(root, "install", "--yes", *args).returncode == 0
    done = tree_hash(root)
    for extra in ((), ("--json",)):   # nothing to do: exit 0 in a script, no --yes needed
        r = rr(root, *extra, "install", *args, stdin=subprocess.DEVNULL)
        assert r.returncode == 0, (extra, r.stdout[-1500:], r.stderr[-1500:])
        assert "no terminal" not in r.stdout + r.stderr
    t = Pty(RR + ["--root", str(root), "install", *args], cols=80)   # and on a terminal: no question
    rc, out = t.finish()
    assert rc == 0 and "apply?" not in out, out[-2000:]
    assert tree_hash(root) == done


# ---- 3: a user's dry runs read the machine's state folder -----------------------------------

def test_a_users_rollback_and_recover_dry_runs_read_the_machines_journal_and_say_they_cannot(source):  # noqa: F811
    with folder_for_nobody("rocmrevive-day3-") as where:
        site = _site_for_nobody(where / "site")
        root = demo_machine(where / "m")
        r = rr(root, "--json", "install", "--yes", *src_args(source, where / "cache"))
        assert r.returncode == 0, r.stdout[-800:] + r.stderr[-800:]
        (journal,) = (root / "var/lib/rocmrevive/tx").glob("*.jsonl")
        before = tree_hash(root)
        for args in (("rollback", "--dry-run"), ("recover", "--dry-run")):
            p = rr_as_nobody(root, site, "--json", *args)
            doc = doc_of(p)
            text = json.dumps(doc)
            assert "nothing to roll back" not in text and doc.get("transactions", None) != [], (args, text[-1500:])
            assert p.returncode == 4 and doc["error"]["code"] == "PERMISSION", (args, p.returncode, text[-1500:])
            assert f"cannot read the journal /{journal.relative_to(root)}" in text and "sudo" in text, text[-1500:]
            h = rr_as_nobody(root, site, *args)
            assert h.returncode == 4 and "Traceback" not in h.stderr and "nothing to roll back" not in h.stdout, \
                (args, h.stdout, h.stderr)
        # the journal made readable (a machine that shares it): the user's dry run finds root's transaction
        # and says what the real one needs, instead of "nothing to roll back"
        os.chmod(journal, 0o644)
        p = rr_as_nobody(root, site, "--json", "rollback", "--dry-run")
        doc = doc_of(p)
        assert p.returncode == 4 and "run as root" in doc["error"]["message"], p.stdout[-1500:]
        assert "/opt/rocm-6.4.3/lib/rocblas/library" in doc["error"]["message"]
        p = rr_as_nobody(root, site, "--json", "recover", "--dry-run")   # nothing is open: nothing to recover
        assert p.returncode == 0 and doc_of(p)["changed"] is False, p.stdout[-1500:]
        os.chmod(journal, 0o600)
        assert tree_hash(root) == before


# ---- 4: the cache --------------------------------------------------------------------------

def test_cache_clean_without_a_cache_is_nothing_to_clean(tmp_path):
    missing = tmp_path / "no-cache-yet"
    r = rr(Path("/"), "cache", "clean", "--cache", str(missing))
    assert r.returncode == 0 and r.stdout.strip() == f"nothing to clean: there is no cache at {missing} yet", \
        (r.returncode, r.stdout, r.stderr)
    for extra in ((), ("--all",), ("--dry-run",)):
        r = rr(Path("/"), "--json", "cache", "clean", *extra, "--cache", str(missing))
        doc = doc_of(r)
        assert r.returncode == 0 and doc["error"] is None and doc["exists"] is False, (extra, r.stdout)
        assert doc["bytes_freed"] == 0 and doc["changed"] is False
    assert not missing.exists()


def test_cache_clean_all_frees_the_pinned_package_and_the_next_install_downloads_again(tmp_path, source):  # noqa: F811
    deb, mf = source
    root, cache = demo_machine(tmp_path / "m"), tmp_path / "cache"
    with ranged_mirror(deb.read_bytes(), deb.name) as (url, gets, _sent):
        inst = ["install", "--yes", "--manifests", str(mf), "--mirror", url, "--cache", str(cache), "--no-libraries"]
        assert rr(root, *inst).returncode == 0
        assert len(gets) == 1
        plain = doc_of(rr(root, "--json", "cache", "clean", "--cache", str(cache), "--manifests", str(mf)))
        assert plain["bytes_freed"] == sum(p.stat().st_size for p in (cache / "partial").glob("*.lock")), plain
        held = sum(p.stat().st_size for p in (cache / "sha256").iterdir()) + \
            sum(p.stat().st_size for p in (cache / "extracted").rglob("*") if p.is_file() or p.is_symlink())
        assert held > deb.stat().st_size
        r = rr(root, "cache", "clean", "--all", "--dry-run", "--cache", str(cache), "--manifests", str(mf))
        assert r.returncode == 0 and "would free" in r.stdout and "would download its packages again" in r.stdout
        assert list((cache / "sha256").iterdir())
        r = rr(root, "--json", "cache", "clean", "--all", "--cache", str(cache), "--manifests", str(mf))
        doc = doc_of(r)
        assert r.returncode == 0 and doc["changed"] is True and doc["all"] is True, r.stdout
        assert doc["bytes_freed"] >= held and {e["why"] for e in doc["removed"]} == {"re-fetchable"}, doc
        assert list((cache / "sha256").iterdir()) == [] and list((cache / "extracted").iterdir()) == []
        h = rr(root, "cache", "clean", "--all", "--cache", str(cache), "--manifests", str(mf))
        assert h.returncode == 0 and "freed 0 B" in h.stdout and "downloads" not in h.stdout, h.stdout
        assert rr(root, "rollback").returncode == 0   # the journal and backups were not the cache's
        assert rr(root, *inst).returncode == 0
        assert len(gets) == 2   # downloaded again, as it said


# ---- 7: a smoke run that ran nothing is not recorded ----------------------------------------

def test_a_smoke_run_that_ran_nothing_leaves_no_record_and_status_says_nothing_of_it(tmp_path):
    root = demo_machine(tmp_path / "m")
    no_torch = tmp_path / "venv-without-torch/bin/python3"
    no_torch.parent.mkdir(parents=True)
    no_torch.symlink_to(sys.executable)
    r = rr(root, "--json", "smoke", "--torch", "--python", str(no_torch))
    doc = doc_of(r)
    assert r.returncode == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED", r.stdout[-1500:]
    assert doc["record"] is None and doc["changed"] is False
    assert not (root / "var/lib/rocmrevive/smoke/last.json").exists()
    s = rr(root, "status")
    assert "last smoke test" not in s.stdout and "nothing_ran" not in s.stdout, s.stdout
