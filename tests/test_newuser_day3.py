"""A new user's day, third pass (issue 39), driven from the outside: dead mirrors, a script's
install on a box already fine, a user's dry runs, the cache, and the output items.

The machine is the demo's (demo/machines/dual-mi50, copied) with demo/minirocblas.py's real
rocBLAS 4.4 tree lacking gfx906 and a real .deb carrying it; mirrors are real servers on
127.0.0.1 (tests/mirrors_support.py)."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

from rocmrevive.sources.http import BUFFER
from tests.mirrors_support import dropping_port, ranged_mirror, silent_port
from tests.security_support import folder_for_nobody
from tests.test_cli_newuser import leftovers, rr_as_nobody
from tests.test_contract_readonly import (
    LIB,
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


# ---- 8 and 5: what the output says, in a pipe, at 80 columns and in JSON --------------------

def _pty(argv: list[str], *, cols: int = 80, no_color: bool = True) -> tuple[int, str]:
    """Run ``argv`` with stdin, stdout and stderr on a real pseudo-terminal of ``cols`` columns;
    (exit status, every byte it wrote, escape codes included)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
    e = env(TERM="xterm", COLUMNS=str(cols))
    e.pop("NO_COLOR", None)
    if no_color:
        e["NO_COLOR"] = "1"
    p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=e, close_fds=True)
    os.close(slave)
    buf = b""
    while True:
        r, _, _ = select.select([master], [], [], 0.5)
        if r:
            try:
                data = os.read(master, 65536)
            except OSError:
                data = b""
            if not data:
                break
            buf += data
        elif p.poll() is not None:
            break
    os.close(master)
    return p.wait(timeout=60), buf.decode(errors="replace")


def _drifted(tmp_path, source) -> tuple[Path, list[str], str]:  # noqa: F811
    root = demo_machine(tmp_path / "m")
    args = src_args(source, tmp_path / "cache")
    assert rr(root, "install", "--yes", *args).returncode == 0
    (journal,) = (root / "var/lib/rocmrevive/tx").glob("*.jsonl")
    f = sorted(p for p in (root / LIB.lstrip("/")).iterdir() if "gfx906" in p.name and p.suffix == ".co")[0]
    f.write_bytes(f.read_bytes()[:-1] + b"X")
    return root, args, journal.stem


def test_drift_is_named_by_verify_and_every_pasted_command_keeps_root(tmp_path, source):  # noqa: F811
    root, args, txid = _drifted(tmp_path, source)
    v = rr(root, "verify")   # a pipe
    assert v.returncode == 6, v.stdout[-2000:]
    last = v.stdout.strip().splitlines()[-1]
    assert last == f"verify: every GPU is served, but integrity failed in /{LIB} (1 file(s) differ from the journal)", last
    d = doc_of(rr(root, "--json", "doctor"))
    fixes = [f["fix"] for f in d["findings"] if "rocmrevive" in (f.get("fix") or "")]
    assert fixes and all(f"rocmrevive --root {root} " in fx for fx in fixes), fixes
    assert all(fx.count("rocmrevive ") == fx.count(f"rocmrevive --root {root} ") for fx in fixes), fixes
    i = rr(root, "--json", "install", "--yes", *args)
    doc = doc_of(i)
    assert i.returncode == 8 and doc["error"]["code"] == "DRIFT", i.stdout[-1500:]
    (copy,) = doc["copies"]
    assert f"`sudo rocmrevive --root {root} rollback --force {txid}`" in copy["reason"], copy["reason"]
    assert "rocmrevive installed" in copy["reason"]   # prose is left as it is
    h = rr(root, "install", "--yes", *args)
    assert f"`sudo rocmrevive --root {root} rollback --force {txid}`" in h.stdout, h.stdout


def test_the_done_line_at_80_columns_is_one_line_the_terminal_folds(tmp_path, source):  # noqa: F811
    root = demo_machine(tmp_path / "m")
    rc, out = _pty(RR + ["--root", str(root), "install", "--yes", *src_args(source, tmp_path / "cache")])
    assert rc == 0, out[-2000:]
    (done,) = [ln for ln in out.replace("\r", "").split("\n") if ln.startswith("done: ")]
    assert done.endswith(f"undo with `sudo rocmrevive --root {root} rollback`"), done
    assert len(done) > 80   # longer than the terminal, and still one line: nothing breaks a command


def test_detect_gpu_table_has_one_header_row_in_a_pipe_and_fits_80_columns(tmp_path):
    root = demo_machine(tmp_path / "m")
    lines = rr(root, "detect").stdout.splitlines()
    i = lines.index("GPUs")
    assert lines[i + 1].split() == ["GPU", "BDF", "target", "model", "VRAM"], lines[i:i + 4]
    assert lines[i + 2].split()[:3] == ["GPU0", "0000:19:00.0", "gfx906:sramecc+:xnack-"], lines[i:i + 4]
    assert lines[i + 3].split()[:3] == ["GPU1", "0000:67:00.0", "gfx906:sramecc+:xnack-"], lines[i:i + 4]
    assert lines[i + 4].startswith("  GPU0: KFD node 1, renderD128, BAR 16 GiB (small), link 16GT/s x16, NUMA node")
    rc, out = _pty(RR + ["--root", str(root), "detect"])
    shown = out.replace("\r", "").split("\n")
    rows = [ln for ln in shown if ln.startswith(("GPU0 ", "GPU1 "))]
    assert len(rows) == 2 and all("0000:" in r and "gfx906:sramecc+:xnack-" in r and "GiB" in r for r in rows), out[:2000]
    assert all(len(ln) <= 80 for ln in shown[:8]), out[:2000]


def test_no_color_means_no_escape_code_at_all(tmp_path):
    root = demo_machine(tmp_path / "m")
    rc, plain = _pty(RR + ["--root", str(root), "verify"])
    sgr = re.compile(r"\x1b\[[0-9;]*m")   # colour and style (a bar's cursor moves are not style)
    assert "rocBLAS copy" in plain and not sgr.search(plain), repr(plain[:500])
    rc, styled = _pty(RR + ["--root", str(root), "verify"], no_color=False)
    assert "\x1b[1m" in styled   # without NO_COLOR the same run is bold: the check above can fail


def test_version_says_python_path_and_manifests_and_json_has_root(tmp_path):
    r = rr(tmp_path, "--version")
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and lines[0].startswith("rocmrevive, version ")
    assert lines[1].startswith(f"python {sys.version.split()[0]} ({sys.executable})")
    assert lines[2] == f"installed in {Path(__file__).resolve().parent.parent / 'rocmrevive'}"
    assert re.fullmatch(r"manifests [0-9a-f]{12} \(6 files in .*/manifests\)", lines[3]), lines
    doc = doc_of(rr(tmp_path, "--version", "--json"))
    assert doc["root"] == str(tmp_path) and doc["version"] and doc["python"]["executable"] == sys.executable
    assert doc["manifests"]["revision"] == lines[3].split()[1] and doc["manifests"]["files"] == 6


def test_completion_takes_json_and_leaves_rolled_back_transactions_out(tmp_path, source):  # noqa: F811
    for argv in (["completion", "bash", "--json"], ["--json", "completion", "bash"]):
        r = rr(tmp_path, *argv)
        doc = doc_of(r)
        assert r.returncode == 0 and doc["shell"] == "bash" and "_ROCMREVIVE_COMPLETE" in doc["script"], argv
    assert rr(tmp_path, "completion", "bash").stdout.startswith("_rocmrevive_completion()")
    root = demo_machine(tmp_path / "m")
    args = src_args(source, tmp_path / "cache")
    assert rr(root, "install", "--yes", *args).returncode == 0
    assert rr(root, "rollback").returncode == 0
    assert rr(root, "install", "--yes", *args).returncode == 0
    first, second = sorted(p.stem for p in (root / "var/lib/rocmrevive/tx").glob("*.jsonl"))
    words = f"rocmrevive --root {root} rollback "
    p = subprocess.run(RR, capture_output=True, text=True, cwd="/",
                       env=env(_ROCMREVIVE_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD="4"))
    assert p.returncode == 0 and p.stdout.split() == [f"plain,{second}"], (first, second, p.stdout, p.stderr)
