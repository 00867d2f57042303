"""The user contract on terminals and in scripts (issue 16): prompts on a real pseudo-terminal,
no TTY without --yes, Ctrl-C once and twice, a reader that closes the pipe, one JSON document
for every exit, bad input as exit 2 naming what is wrong, and output that never cuts an id or a
path and says what happened in the right words."""
from __future__ import annotations

import fcntl
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

import pytest

from tests.test_contract_readonly import LIB, LOCK, demo_machine, doc_of, env, rr, source, src_args  # noqa: F401
from tests.test_install import tree_hash

RR = [sys.executable, "-m", "rocmrevive.cli.main"]


class Pty:
    """A command whose stdin and stderr (and, unless ``stdout`` is given, stdout) are a real
    pseudo-terminal of ``cols`` columns."""

    def __init__(self, argv, *, cols=80, stdout=None, extra_env=None):
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, cols, 0, 0))
        e = env(TERM="xterm", COLUMNS=str(cols), **(extra_env or {}))
        e.pop("NO_COLOR", None)
        e["NO_COLOR"] = "1"
        self.p = subprocess.Popen(argv, stdin=slave, stdout=stdout if stdout is not None else slave, stderr=slave,
                                  env=e, close_fds=True)
        os.close(slave)
        self.buf = b""

    def read_until(self, text: str, timeout=400) -> str:
        end = time.monotonic() + timeout
        while text.encode() not in self.buf:
            if time.monotonic() > end or self.p.poll() is not None and not self._pump(0.2):
                break
            self._pump(0.5)
        return self.buf.decode(errors="replace")

    def _pump(self, wait) -> bool:
        r, _, _ = select.select([self.master], [], [], wait)
        if not r:
            return False
        try:
            data = os.read(self.master, 65536)
        except OSError:
            return False
        self.buf += data
        return bool(data)

    def send(self, text: str) -> None:
        os.write(self.master, text.encode())

    def finish(self, timeout=300) -> tuple[int, str]:
        end = time.monotonic() + timeout
        while self.p.poll() is None and time.monotonic() < end:
            self._pump(0.5)
        while self._pump(0.1):
            pass
        os.close(self.master)
        return self.p.wait(timeout=5), self.buf.decode(errors="replace")


@pytest.fixture
def machine(tmp_path, source):
    return demo_machine(tmp_path / "m"), src_args(source, tmp_path / "cache")


# ---- prompts ------------------------------------------------------------------------------------

def test_without_a_terminal_and_without_yes_install_refuses(machine):
    root, args = machine
    before = tree_hash(root)
    r = rr(root, "install", *args, input="n\n")          # `echo n | rocmrevive install`
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip().splitlines()[-1]   # planned first (issue 39); the refusal is the last line
    assert "no terminal to ask on" in line and "--yes" in line and "nothing was changed" in line
    assert "a change is pending" in line, line
    r = rr(root, "--json", "install", *args, input="")
    assert r.returncode == 2 and doc_of(r)["error"]["code"] == "USAGE"
    assert tree_hash(root) == before and not (root / LOCK).exists()


def test_no_at_the_prompt_is_declined_exit_0_and_changes_nothing(machine, tmp_path):
    root, args = machine
    before = tree_hash(root)
    t = Pty(RR + ["--json", "--root", str(root), "install", *args], stdout=subprocess.PIPE)
    shown = t.read_until("apply? [Y/n]")
    assert "apply? [Y/n]" in shown, shown[-2000:]
    deb = args[args.index("--from") + 1]
    # the prompt names the file the user gave, in human units, and no bar is left under it
    assert f"from {deb}" in shown and "pool/main" not in shown and "0/?" not in shown, shown[-1500:]
    t.send("n\n")
    out = t.p.stdout.read()
    rc, _ = t.finish()
    doc = json.loads(out)
    (copy,) = doc["copies"]
    assert rc == 0 and copy["status"] == "declined" and doc["changed"] is False, (rc, copy)
    assert tree_hash(root) == before and not (root / LOCK).exists()


def test_yes_at_the_prompt_installs(machine):
    root, args = machine
    t = Pty(RR + ["--root", str(root), "install", *args], cols=80)
    t.read_until("apply? [Y/n]")
    t.send("y\n")
    rc, out = t.finish()
    assert rc == 0, out[-2000:]
    assert "/opt/rocm-6.4.3/lib/rocblas/library" in out and "…" not in out, out[-3000:]
    assert len([p for p in (root / LIB).iterdir() if "gfx906" in p.name]) == 9


# ---- Ctrl-C -------------------------------------------------------------------------------------

def test_ctrl_c_at_the_prompt_says_nothing_was_open(machine):
    root, args = machine
    before = tree_hash(root)
    t = Pty(RR + ["--root", str(root), "install", *args])
    assert "apply? [Y/n]" in t.read_until("apply? [Y/n]")
    time.sleep(0.5)                                           # the prompt is waiting for its answer
    os.kill(t.p.pid, signal.SIGINT)
    rc, out = t.finish()
    assert rc == 130, out[-1500:]
    assert "no transaction was open; nothing is left to recover" in out and "Traceback" not in out
    assert tree_hash(root) == before


def test_ctrl_c_twice_during_the_apply_undoes_it_cleanly(machine):
    """Ctrl-C at the second rename, and again while the undo runs: the undo finishes, the tree is
    as before, and the message names the transaction it undid (exit 130: nothing to recover)."""
    root, args = machine
    before = tree_hash(root / "opt")
    r = rr(root, "--json", "install", "--yes", *args,
           extra_env={"ROCMREVIVE_TEST_KILL_AT": "rename:2:INT,undo:1:INT,undo:3:INT"})
    doc = doc_of(r)
    assert r.returncode == 130 and doc["error"]["code"] == "CANCELLED", r.stdout[-1500:]
    assert "transaction 0001-" in doc["error"]["message"] and "was undone" in doc["error"]["message"]
    assert "failed too" not in r.stdout + r.stderr
    assert tree_hash(root / "opt") == before
    st = doc_of(rr(root, "--json", "status"))
    assert st["error"] is None and st["pending"] == []


def test_ctrl_c_during_a_rollback_names_the_open_transaction(machine):
    root, args = machine
    before = tree_hash(root / "opt")
    assert rr(root, "--json", "install", "--yes", *args).returncode == 0
    r = rr(root, "--json", "rollback", extra_env={"ROCMREVIVE_TEST_KILL_AT": "undo:2:INT"})
    doc = doc_of(r)
    assert r.returncode == 9 and doc["error"]["code"] == "INTERRUPTED", r.stdout[-1500:]
    assert "transaction 0001-" in doc["error"]["message"] and "rocmrevive recover" in doc["error"]["message"]
    assert rr(root, "--json", "status").returncode == 9
    assert rr(root, "--json", "recover").returncode == 0
    assert tree_hash(root / "opt") == before


# ---- pipes ----------------------------------------------------------------------------------------

def test_a_reader_that_stops_early_gets_a_quiet_exit_141(machine, tmp_path):
    root, _ = machine
    log = tmp_path / "log.txt"
    log.write_text("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: "
                   "No such file or directory for GPU arch : gfx906\n" * 50)
    for args in (["exit-codes"], ["explain", "--file", str(log)], ["detect"], ["--json", "detect"], ["status"]):
        p = subprocess.Popen(RR + ["--root", str(root), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env())
        p.stdout.close()                                      # `| head -0`
        err = p.stderr.read().decode()
        assert p.wait(timeout=120) == 141 and err == "", (args, err)


# ---- one JSON document for every exit --------------------------------------------------------------

@pytest.mark.parametrize("argv", [
    ["--json", "--root", "/etc/passwd", "detect"],
    ["--json", "detect", "--no-such-option"],
    ["detect", "--json", "--rocminfo", "/nonexistent"],
    ["--json", "inspect", "/nonexistent"],
    ["--json", "rollback", "a", "b"],
    ["--json", "no-such-command"],
])
def test_usage_errors_under_json_are_one_json_document(argv):
    r = subprocess.run(RR + argv, capture_output=True, text=True, env=env())
    doc = doc_of(r)
    assert r.returncode == 2 and doc["error"]["code"] == "USAGE" and doc["error"]["exit"] == 2, r.stdout
    assert doc["schema_version"] == 1 and doc["changed"] is False and doc["error"]["message"]


def test_exit_codes_and_version_honour_json():
    from rocmrevive.errors import EXIT_CODES

    for argv in (["--json", "exit-codes"], ["exit-codes", "--json"]):
        r = subprocess.run(RR + argv, capture_output=True, text=True, env=env())
        doc = doc_of(r)
        assert r.returncode == 0 and {c["code"]: (c["exit"], c["meaning"]) for c in doc["exit_codes"]} == EXIT_CODES
    r = subprocess.run(RR + ["--json", "--version"], capture_output=True, text=True, env=env())
    assert r.returncode == 0 and doc_of(r)["version"]
    r = subprocess.run(RR + ["--version"], capture_output=True, text=True, env=env())
    assert r.returncode == 0 and r.stdout.startswith("rocmrevive, version ")


# ---- bad input is exit 2 ---------------------------------------------------------------------------

def test_bad_input_is_a_usage_error_naming_what_is_wrong(machine, tmp_path):
    root, args = machine
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes about the MI50\n")
    before = tree_hash(root)
    cases = [
        (["verify", "--target", "gfx9999"], "gfx9999 is not a known AMD GPU processor; did you mean gfx909?"),
        (["audit", "--target", "gfx9060"], "did you mean gfx906?"),
        (["install", "--check", "--target", "gfx9060", *args], "did you mean gfx906?"),
        (["rccl", "recipe", "--target", "gfx9999", "--output", str(tmp_path / "build")], "gfx9999"),
        (["install", "--check", "--mirror", "not-a-url", *args], "'not-a-url' is not an http://"),
        (["install", "--check", "--mirror", "ftp://mirror.example/debian", *args], "is not an http://"),
        (["install", "--check", "--mirror", "http://[::1", *args], "is not a URL"),
        (["detect", "--tree", "/no/such"], "--tree /no/such does not exist"),
        (["status", "--tree", "/nonexistent"], "--tree /nonexistent does not exist"),
        (["doctor", "--vulkaninfo", "/bin/ls"], "/bin/ls is a binary file"),
        (["detect", "--rocminfo", str(notes)], "does not look like rocminfo output"),
    ]
    for argv, want in cases:
        r = rr(root, "--json", *argv)
        doc = doc_of(r)
        assert r.returncode == 2 and doc["error"]["code"] == "USAGE", (argv, r.stdout[-800:])
        assert want in doc["error"]["message"], (argv, doc["error"]["message"])
    assert tree_hash(root) == before and not (tmp_path / "build").exists()


def test_status_tree_names_an_install_and_everything_inside_it(machine):
    root, args = machine
    assert rr(root, "--json", "install", "--yes", *args).returncode == 0
    for tree in ("/opt/rocm-6.4.3", "/opt/rocm-6.4.3/lib/rocblas/library", "/opt/rocm"):
        doc = doc_of(rr(root, "--json", "status", "--tree", tree))
        assert len(doc["transactions"]) == 1, tree
    r = rr(root, "status", "--tree", "/opt/rocm-6.4.3")
    assert "changed nothing here" not in r.stdout and "0001-" in r.stdout


# ---- honest output -----------------------------------------------------------------------------------

def test_drift_in_a_file_rocmrevive_wrote_is_described_by_its_hash(machine):
    root, args = machine
    assert rr(root, "--json", "install", "--yes", *args).returncode == 0
    mine = next(p for p in (root / LIB).iterdir() if "gfx906" in p.name)
    mine.write_bytes(b"changed by hand")
    r = rr(root, "--json", "rollback")
    msg = doc_of(r)["error"]["message"]
    assert r.returncode == 8 and "1 file changed since transaction" in msg, msg
    assert "expected sha256 " in msg and "not a regular file" not in msg, msg


def test_the_install_table_counts_what_the_transaction_holds(machine):
    root, args = machine
    assert rr(root, "--json", "install", "--yes", *args).returncode == 0
    gone = sorted(p for p in (root / LIB).iterdir() if "gfx906" in p.name)[0]
    gone.unlink()
    r = rr(root, "--json", "install", "--yes", *args)
    (copy,) = doc_of(r)["copies"]
    assert r.returncode == 0 and copy["summary"]["create"] == 1 and copy["summary"]["replace"] == 0, copy["summary"]
    assert copy["summary"]["unchanged"] == 8 and "added 1, replaced 0 file " in copy["reason"] + " ", copy["reason"]
    tx = doc_of(rr(root, "--json", "status"))["transactions"][-1]
    assert tx["files"] == 1
    r = rr(root, "install", "--yes", "--check", *args)
    assert "+1 ~8" not in r.stdout


def test_status_does_not_call_a_cpu_test_run_a_pass(tmp_path):
    from rocmrevive.rootfs import Root
    from rocmrevive.smoke.record import write_last

    write_last(Root(tmp_path), {"status": "passed-cpu-test", "mode": "cpu-test",
                                "finished_at": "2026-12-02T10:00:00+00:00"})
    r = rr(tmp_path, "status")
    line = next(x for x in r.stdout.splitlines() if x.startswith("last smoke test:"))
    assert "--cpu-test-mode run" in line and "no GPU was used" in line and "last passed: never" in line, line
    assert not line.startswith("last smoke test: passed"), line


def test_wording(machine, tmp_path):
    from rocmrevive.txn.result import mb as _mb

    # sizes that differ are never printed the same
    assert (_mb(200_000, 249_000), _mb(249_000, 200_000)) == ("0.20 MB", "0.25 MB")
    assert _mb(200_001, 200_000) == "200,001 bytes"
    root, _ = machine
    out = rr(root, "doctor", "--user", "alice").stdout
    assert "groups: {" not in out and "groups of type DMA" in out, out
    assert "1 rocBLAS copy" in out and "(s)" not in out
    # a journal cut before its begin record names no tree: never "on None"
    tx = root / "var/lib/rocmrevive/tx"
    tx.mkdir(parents=True)
    (tx / "0001-20261202T100000Z.jsonl").write_bytes(b'{"type": "beg')
    r = rr(root, "status")
    assert "None" not in r.stdout + r.stderr and r.returncode == 9, r.stdout + r.stderr
    r = rr(root, "recover", "--dry-run")
    assert "None" not in r.stdout + r.stderr and "Traceback" not in r.stderr, r.stdout + r.stderr


# ---- tables never cut an id or a path ------------------------------------------------------------

def test_tables_on_an_80_column_terminal_and_in_a_pipe_keep_every_id_and_path(machine):
    root, args = machine
    assert rr(root, "--json", "install", "--yes", *args).returncode == 0
    txid = doc_of(rr(root, "--json", "status"))["transactions"][0]["txid"]
    for argv in (["status"], ["detect"], ["verify"], ["status", "-v"]):
        rc, out = Pty(RR + ["--root", str(root), *argv], cols=80).finish()
        assert "…" not in out, (argv, out[-3000:])
        piped = rr(root, *argv).stdout
        assert "…" not in piped, (argv, piped[-3000:])
        if argv[0] == "status":
            assert txid in out and txid in piped
        if argv[0] == "detect":
            assert "gfx906:sramecc+:xnack-" in out and "/opt/rocm-6.4.3/lib/rocblas/library" in out


# ---- 80 columns: fix lines copy as one command, tables stay tables (issue 29) ------------------

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def screen(argv, cols=80) -> tuple[int, list[str]]:
    """``argv`` on a pseudo-terminal of ``cols`` columns: exit status and the lines as written
    (colour and cursor codes removed; a line the terminal folds itself stays one line here)."""
    rc, out = Pty(argv, cols=cols).finish()
    return rc, ANSI.sub("", out).replace("\r", "").split("\n")


def test_doctor_at_80_columns_keeps_fix_commands_whole_and_continuations_indented(machine):
    root, _ = machine
    doc = doc_of(rr(root, "--json", "doctor"))
    commands = [f["fix"] for f in doc["findings"] if f["fix_kind"] == "command"]
    assert commands, doc["findings"]
    rc, lines = screen(RR + ["--root", str(root), "doctor"])
    text = "\n".join(lines)
    for cmd in commands:   # with the --root the terminal's run needs, on one line of its own
        shown = [ln for ln in lines if "rocmrevive" in ln and ln.lstrip().startswith("fix:")]
        assert any(ln.rstrip().endswith(cmd.split("rocmrevive ", 1)[1]) for ln in shown), (cmd, text[-3000:])
    heads = ("error", "warning", "info", "note")
    block = False
    for ln in lines:
        if ln.startswith(heads):
            block = True
        elif block and ln.strip() and not ln.lstrip().startswith(("cause:", "fix:")):
            if ln[0] != " ":   # the summary line ends the findings
                block = False
                continue
            assert ln.startswith(" " * 8), (ln, text[-3000:])   # a continuation keeps its indent
    assert all(len(ln) <= 80 or "rocmrevive" in ln or "`" in ln for ln in lines), text[-3000:]


def two_copies(root) -> None:
    import minirocblas as mr  # on sys.path through tests.test_contract_readonly

    mr.build_tree(root, rocm_version="6.4.1", arches_present=("gfx908",))


def test_install_diff_and_verify_lines_at_80_columns_name_their_copy(machine):
    root, args = machine
    two_copies(root)
    rc, lines = screen(RR + ["--root", str(root), "install", "--yes", "--diff", "--no-libraries", *args])
    text = "\n".join(lines)
    assert rc == 0, text[-3000:]
    assert not any(ln.strip() in ("+", "~", "=") for ln in lines), text[-3000:]   # never a lone "+"
    for copy in ("/opt/rocm-6.4.1/lib/rocblas/library", "/opt/rocm-6.4.3/lib/rocblas/library"):
        i = lines.index(f"  verify {copy}:")
        block = lines[i + 1:i + 4]
        assert [ln.split()[0] for ln in block] == ["before", "staged", "after"], (copy, text[-3000:])
        assert "needs gfx906 files" in block[0] and "fail" not in block[0], block[0]
        d = lines.index(f"  diff {copy}:")
        assert lines[d + 1].startswith("    + ") and "TensileLibrary_lazy_gfx906.dat" in text
    assert "verify before" not in text and "tensile fail" not in text


def test_detect_and_verify_tables_fit_80_columns_with_two_gpus(machine):
    root, args = machine
    assert rr(root, "--json", "install", "--yes", *args).returncode == 0
    rc, lines = screen(RR + ["--root", str(root), "detect"])
    text = "\n".join(lines)
    gpu_rows = [ln for ln in lines if ln.lstrip().startswith(("GPU0 ", "GPU1 ")) and "│" in ln]
    assert len(gpu_rows) == 2 and "0000:19:00.0" in gpu_rows[0] and "gfx906:sramecc+:xnack-" in gpu_rows[0], text[:3000]
    assert not any(ln.startswith(("GPU: ", "  BDF: ")) for ln in lines), text[:3000]   # not a list
    assert all(len(ln) <= 80 for ln in lines[:12]), text[:3000]
    rc, lines = screen(RR + ["--root", str(root), "verify"])
    text = "\n".join(lines)
    assert rc == 0, text[-3000:]
    rows = [ln for ln in lines if ln.startswith(("(copy) ", "gfx906:sramecc+:xnack- "))]
    assert [ln.split()[1] for ln in rows] == ["integrity", "targets", "tensile", "host"], text[-3000:]
    assert not any(ln.startswith(("target: ", "  check: ")) for ln in lines), text[-3000:]
    assert all(len(ln) <= 80 for ln in rows), text[-3000:]
