"""The exit-code table lives once, in rocmrevive/errors.py; the README, the Ansible collection and
`rocmrevive exit-codes` show copies generated from it, and they must agree."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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
