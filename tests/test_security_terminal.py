"""Terminal output and printed commands with hostile folder names (issue 35, findings 4 and 5;
docs/security.md "Terminal output"): a venv whose folder name holds an OSC title sequence, a
screen clear, a C1 CSI byte, a bidi override and a newline that forges an output line, and one
named ``v; touch PWNED; #``. Every command's human output on a real pseudo-terminal shows the
names escaped (cli/ui.shown, as ``ls -b`` does); JSON keeps the exact strings; every command the
tool prints splits (shlex) into the intended argv, and a fix line pasted into ``sh`` runs
rocmrevive with the folder as one argument, never the folder's text.

    root = hostile_machine(tmp_path)   # the demo machine with the two venvs in /home/alice
"""
from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.cli.shown import shown
from rocmrevive.invocation import shell_command
from tests.test_contract_terminal import RR, Pty

HOSTILE = "v\x1b]0;PWNED-TITLE\x07\x1b[2J\x9b31m\u202eevil\nFORGED: all good"
PASTE = "v; touch PWNED; #"


def _venv(root: Path, name: str) -> str:
    """A torch venv of root's at /home/alice/<name> with a rocBLAS copy (gfx908 only)."""
    site = root / "home/alice" / name / "lib/python3.12/site-packages"
    lib = site / "torch/lib"
    lib.mkdir(parents=True)
    (site / "torch/version.py").write_text("__version__ = '2.8.0+rocm6.4'\nhip = '6.4.43482-0f2d60242'\n")
    rocm = root / "opt/rocm-6.4.3/lib"
    shutil.copytree(rocm / "rocblas/library", lib / "rocblas/library")
    shutil.copy(next(p for p in rocm.glob("librocblas.so.4.4.*")), lib / "librocblas.so")
    return f"/home/alice/{name}/lib/python3.12/site-packages/torch/lib/rocblas/library"


@pytest.fixture
def hostile(tmp_path):
    from tests.machines.build import build
    from tests.test_install import mr

    root = build("dual-mi50", tmp_path / "m")
    mr.build_tree(root, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    return root, _venv(root, HOSTILE), _venv(root, PASTE)


def _env() -> dict:
    e = dict(os.environ)
    e["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent)
    e.pop("ROCMREVIVE_TRUST_SHARED", None)
    return e


COMMANDS = [["detect"], ["doctor"], ["audit"], ["verify"], ["status"], ["install", "--check"]]


def test_the_renderer_escapes_what_a_terminal_would_obey():
    s = shown(HOSTILE)
    assert not re.search("[\x00-\x1f\x7f-\x9f\u202e]", s), s
    assert s == "v\\e]0;PWNED-TITLE\\x07\\e[2J\\x9b31m\\u202eevil\\nFORGED: all good"
    assert shown("caf\udcc3\udca9") == "caf\\xc3\\xa9"            # bytes that are not UTF-8
    assert shown("a\nb\tc", lines=True) == "a\nb\tc" and shown("plain /opt/rocm") == "plain /opt/rocm"


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: a[0])
def test_every_commands_human_output_on_a_pty_has_no_raw_control_byte(hostile, argv):
    root, bad, _ = hostile
    rc, out = Pty(RR + ["--root", str(root), *argv], cols=200, extra_env={"PYTHONPATH": _env()["PYTHONPATH"]}).finish()
    raw = out.encode("utf-8", "surrogateescape")
    assert b"\x07" not in raw and b"\x1b]" not in raw and b"\x1b[2J" not in raw, out[-3000:]
    assert "\u202e" not in out and "\x9b" not in out and b"\xc2\x9b" not in raw
    assert not any(line.lstrip("\r").startswith("FORGED") for line in out.split("\n")), out[-3000:]
    if argv[0] in ("detect", "doctor", "audit"):
        assert "v\\e]0;PWNED-TITLE" in out, (argv, out[-3000:])    # named, escaped
    # piped (plain tables) and on a narrow terminal (tables become lists): no forged line either
    p = subprocess.run(RR + ["--root", str(root), *argv], env=_env(), capture_output=True, text=True,
                       errors="surrogateescape", timeout=300)
    rc, narrow = Pty(RR + ["--root", str(root), *argv], cols=60, extra_env={"PYTHONPATH": _env()["PYTHONPATH"]}).finish()
    for text in (p.stdout + p.stderr, narrow):
        assert not re.search("[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f-\x9f\u202e]", text), text[-3000:]
        assert not any(re.sub(r"^[\s\r│┃|]*", "", line).startswith("FORGED") for line in text.split("\n")), \
            text[-3000:]


def test_json_keeps_the_exact_names_and_every_fix_splits_into_its_argv(hostile):
    root, bad, paste = hostile
    p = subprocess.run(RR + ["--json", "--root", str(root), "doctor"], env=_env(),
                       capture_output=True, text=True, timeout=300)
    doc = json.loads(p.stdout)
    assert {bad, paste} <= {f["subject"] for f in doc["findings"]}     # the exact strings, not escaped
    fixes = [f["fix"] for f in doc["findings"] if (f.get("fix") or "").startswith(("rocmrevive ", "sudo "))]
    trees = set()
    for fix in fixes:
        command = fix.split("  (")[0]
        words = shlex.split(command)
        assert words[0] in ("rocmrevive", "sudo"), fix
        trees.add(words[words.index("--tree") + 1])
    assert {bad, paste} <= trees, (trees, fixes)


def test_a_pasted_fix_line_runs_rocmrevive_with_the_folder_as_one_word(hostile, tmp_path):
    root, _, paste = hostile
    rc, out = Pty(RR + ["--root", str(root), "doctor"], cols=300,
                  extra_env={"PYTHONPATH": _env()["PYTHONPATH"]}).finish()
    lines = [ln.strip() for ln in re.sub(r"\x1b\[[0-9;]*m", "", out).replace("\r", "").split("\n")]
    fix = next(ln for ln in lines if ln.startswith("fix:") and "v; touch" in ln)
    command = fix[len("fix:"):].strip().split("  (")[0]
    # a fake sudo and rocmrevive that record their arguments, as the pasted line runs them
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    rec = tmp_path / "argv.json"
    for name, body in (("sudo", 'exec "$@"\n'),
                       ("rocmrevive", f'{sys.executable} -c "import json,sys; json.dump(sys.argv[1:], '
                                      f"open('{rec}', 'w'))\" \"$@\"\n")):
        (bin_ / name).write_text("#!/bin/sh\n" + body)
        (bin_ / name).chmod(0o755)
    work = tmp_path / "cwd"
    work.mkdir()
    r = subprocess.run(["sh", "-c", command], cwd=work, env={"PATH": f"{bin_}:/usr/bin:/bin"},
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (command, r.stderr)
    assert not (work / "PWNED").exists() and not list(tmp_path.rglob("PWNED"))
    argv = json.loads(rec.read_text())
    assert argv[argv.index("--tree") + 1] == paste and argv[:2] == ["--root", str(root)], (command, argv)


def test_shell_command_round_trips_through_shlex():
    for path in (PASTE, HOSTILE, "/opt/rocm-6.4.3/lib/rocblas/library", "it's \"quoted\" $(x) `y`"):
        for root in (None, "/", "/srv/my image"):
            for kw in ({}, {"sudo": True}, {"user": "alice"}):
                line = shell_command(["install", "--tree", path], root, **kw)
                words = shlex.split(line)
                head = {"sudo": ["sudo"], "user": ["sudo", "-u", "alice"]}.get(next(iter(kw), ""), [])
                where = ["--root", root] if root not in (None, "/") else []
                assert words == head + ["rocmrevive", *where, "install", "--tree", path], line
                assert "\n" not in line or "'" in line
