"""Unit tests of the modules: each module's main() runs in this process with real arguments
(ansible.module_utils.testing.patch_module_args) and calls the real rocmrevive CLI against
machines in folders.

The machines are built by the project's test suite (tests/test_ansible.py builds them and runs
this folder with the venv's pytest), which passes:
  ROCMREVIVE_TEST_HOSTS  a folder with the machines mi50 (dual MI50, ROCm 6.4.3 without gfx906)
                         and nogpu, manifests/ and the source .deb
  ROCMREVIVE_TEST_CLI    an executable that runs the rocmrevive CLI
Without them (e.g. under ansible-test units) the tests that need the CLI are skipped.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve()
COLLECTIONS = HERE.parents[5]  # .../collections (holds ansible_collections/)
if (COLLECTIONS / "ansible_collections").is_dir() and str(COLLECTIONS) not in sys.path:
    sys.path.insert(0, str(COLLECTIONS))


@pytest.fixture
def hosts(tmp_path):
    base = os.environ.get("ROCMREVIVE_TEST_HOSTS")
    if not base:
        pytest.skip("ROCMREVIVE_TEST_HOSTS is not set (run through tests/test_ansible.py)")
    out = tmp_path / "hosts"
    shutil.copytree(base, out, symlinks=True)
    return out


@pytest.fixture
def cli():
    path = os.environ.get("ROCMREVIVE_TEST_CLI")
    if not path:
        pytest.skip("ROCMREVIVE_TEST_CLI is not set (run through tests/test_ansible.py)")
    return path


@pytest.fixture
def run_module(capsys):
    """run_module(module, args, check=False, diff=False) -> (exit status, result dict)."""
    from ansible.module_utils.testing import patch_module_args

    def run(module, args, check=False, diff=False):
        args = dict(args)
        args["_ansible_check_mode"] = check
        args["_ansible_diff"] = diff
        with patch_module_args(args):
            with pytest.raises(SystemExit) as exc:
                module.main()
        out = capsys.readouterr().out
        return exc.value.code, json.loads(out)

    return run
