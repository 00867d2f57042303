"""The exit-code table lives once, in rocmrevive/errors.py; the README, the Ansible collection and
`rocmrevive exit-codes` show copies generated from it, and they must agree."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.errors import EXIT_CODES

REPO = Path(__file__).resolve().parent.parent
MODULE_UTILS = REPO / "collections/ansible_collections/rocmrevive/gfx906/plugins/module_utils/rocmrevive.py"


def test_generated_copies_agree_with_errors_py():
    res = subprocess.run([sys.executable, str(REPO / "scripts/gen_exit_codes.py"), "--check"],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_readme_table_lists_every_code_with_its_status():
    rows = re.findall(r"^\| (\d+) \| ([A-Z_]+) \| (.+) \|$", (REPO / "README.md").read_text(), re.M)
    assert {code: (int(num), meaning) for num, code, meaning in rows} == EXIT_CODES


def test_collection_maps_every_code_to_its_status():
    scope: dict = {}
    exec(compile(MODULE_UTILS.read_text(), str(MODULE_UTILS), "exec"), scope)
    assert scope["EXIT"] == {code: num for code, (num, _) in EXIT_CODES.items()}


def test_check_names_a_stale_copy(tmp_path, monkeypatch):
    sys.path.insert(0, str(REPO / "scripts"))
    try:
        import gen_exit_codes
    finally:
        sys.path.pop(0)
    stale = MODULE_UTILS.read_text().replace('"DRIFT": 8,', '"DRIFT": 18,')
    fresh = gen_exit_codes.regenerated(stale, *gen_exit_codes.COPIES[1][1:3], gen_exit_codes.COPIES[1][3]())
    assert fresh == MODULE_UTILS.read_text() != stale


def test_exit_codes_command_prints_the_table():
    out = CliRunner().invoke(cli, ["exit-codes"]).output.splitlines()
    assert [line.split()[:2] for line in out] == [[str(n), c] for c, (n, _) in
                                                  sorted(EXIT_CODES.items(), key=lambda kv: kv[1][0])]


# ------------------------------------------------------------------------------------------
# install's exit when a copy that needs gfx906 is left without it (issue 27): exit 0 means the
# request was met, so a ROCm 7.1 tree with no pinned source is exit 3 with the reason on stderr.

@pytest.fixture
def rocm71(tmp_path, debian_pkgs):
    from tests.fixtures import rocm71 as F

    return F.build_rocm71_machine(tmp_path / "m", debian_pkgs)


def _rr(root, *args):
    return subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), *args],
                          capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})


@pytest.mark.debian
@pytest.mark.parametrize("mode", ["--check", "--yes"])
def test_install_leaving_a_rocm71_copy_without_gfx906_exits_3(rocm71, tmp_path, mode):
    from tests.fixtures import rocm71 as F

    r = _rr(rocm71, "install", mode, "--cache", str(tmp_path / "c"))
    assert r.returncode == 3, (r.stdout[-1500:], r.stderr[-1500:])
    err = " ".join(r.stderr.split())
    assert f"rocmrevive install: 1 rocBLAS copy still without gfx906 files: {F.LIB}:" in err
    assert f"rocmrevive --root {rocm71} recipe --tree {F.LIB}" in err   # as typed for this machine (ui.as_typed)
    r = _rr(rocm71, "--json", "install", mode, "--cache", str(tmp_path / "c"))
    doc = json.loads(r.stdout)
    assert r.returncode == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED" and doc["changed"] is False
    (copy,) = doc["copies"]
    assert copy["status"] == "refused" and copy["error"] is None and F.LIB in doc["error"]["message"]


@pytest.mark.debian
def test_install_and_echo_fixed_does_not_say_fixed(rocm71, tmp_path):
    cmd = (f"{shlex.quote(sys.executable)} -m rocmrevive.cli.main --root {shlex.quote(str(rocm71))} install --yes "
           f"--cache {shlex.quote(str(tmp_path / 'c'))} && echo fixed")
    r = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, env={**os.environ, "NO_COLOR": "1"})
    assert r.returncode == 3 and "fixed" not in r.stdout.split()


def test_one_copy_served_and_one_left_without_is_still_exit_3():
    """Mixed: a copy installed and a TheRock copy rocmrevive does not patch; the request (every
    copy serves gfx906) was not met."""
    from rocmrevive.cli.install import _exit
    from rocmrevive.install.core import Status
    from rocmrevive.install.report import CopyOutcome, InstallReport

    done = CopyOutcome("/opt/rocm-6.4.3/lib/rocblas/library", "rocm-tree", "4.4.1", "6.4.3",
                    status=Status.INSTALLED, changed=True)
    left = CopyOutcome("/opt/rocm-7.13.0/lib/rocblas/library", "rocm-tree", "5.3.0", "7.13.0",
                    status=Status.UNSUPPORTED, reason="a TheRock tree")
    code, msg = _exit(InstallReport(["gfx906"], "sysfs", [done, left], False))
    assert code == "NOTHING_SUPPORTED" and msg.startswith("1 rocBLAS copy still without gfx906 files: /opt/rocm-7.13.0")
    assert _exit(InstallReport(["gfx906"], "sysfs", [done], False)) == ("OK", None)
    declined = CopyOutcome(left.library, "rocm-tree", "4.4.1", "6.4.3", status=Status.DECLINED)
    assert _exit(InstallReport(["gfx906"], "sysfs", [done, declined], False)) == ("OK", None)
