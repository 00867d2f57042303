# -*- coding: utf-8 -*-
# Copyright: rocmrevive contributors
# SPDX-License-Identifier: MIT
"""Run the ``rocmrevive`` CLI and read its JSON document; shared by the collection's modules.

The modules stay thin: every decision (what to install, whether it is already there, what a
dry run would do) is made by the CLI, which prints one versioned JSON document on stdout
(``schema_version``, ``changed``, ``warnings``, ``error: {code, exit, message}``). This file
only finds the CLI, runs it, and turns "no JSON" into a clear failure. Standard library only:
it runs on the managed node with the node's Python.
"""
from __future__ import annotations

import json

# The CLI's exit codes (``rocmrevive exit-codes``); the JSON ``error.code`` names them too.
# exit-codes: generated from rocmrevive/errors.py (make exit-codes)
EXIT = {
    "OK": 0, "INTERNAL": 1, "USAGE": 2, "NOTHING_SUPPORTED": 3, "PERMISSION": 4, "NETWORK": 5,
    "VERIFY_FAILED": 6, "LOCKED": 7, "DRIFT": 8, "INTERRUPTED": 9, "SMOKE_FAILED": 10,
    "PROBLEMS_FOUND": 11, "SMOKE_SLOW": 12, "CHANGES_PENDING": 20, "CANCELLED": 130,
    "PIPE_CLOSED": 141,
}
# /exit-codes
RETRYABLE = ("NETWORK", "LOCKED")
SCHEMA_VERSIONS = (1,)
# Where installs put the CLI when it is not on the PATH Ansible runs modules with.
EXTRA_BIN_DIRS = ["/usr/local/bin", "/opt/rocmrevive/bin", "/opt/rocmrevive/venv/bin", "/root/.local/bin"]

COMMON_ARGS = dict(
    rocmrevive_bin=dict(type="path"),
    root=dict(type="path"),
)


def find_cli(module):
    """The CLI to run: the ``rocmrevive_bin`` option, else ``rocmrevive`` on PATH (or a usual
    install folder). Fails the task with a line saying how to fix it."""
    given = module.params.get("rocmrevive_bin")
    if given:
        return given
    found = module.get_bin_path("rocmrevive", required=False, opt_dirs=EXTRA_BIN_DIRS)
    if not found:
        module.fail_json(msg="rocmrevive is not installed on this host (not on PATH, nor in %s); install it "
                             "(pip install rocmrevive) or set rocmrevive_bin" % ", ".join(EXTRA_BIN_DIRS))
    return found


def base_command(module, cli):
    """``rocmrevive --json --no-progress [--root DIR]``: the global options come first."""
    cmd = [cli, "--json", "--no-progress"]
    if module.params.get("root"):
        cmd += ["--root", module.params["root"]]
    return cmd


def add_option(cmd, flag, value):
    """Append ``flag value`` (repeated for a list); nothing for None/empty."""
    if value is None or value == "" or value == []:
        return cmd
    for v in value if isinstance(value, (list, tuple)) else [value]:
        cmd += [flag, str(v)]
    return cmd


class CliResult(object):
    """One CLI run: its command, exit status, JSON document and stderr."""

    def __init__(self, cmd, rc, doc, stderr):
        self.cmd, self.rc, self.doc, self.stderr = cmd, rc, doc, stderr

    @property
    def error(self):
        return self.doc.get("error") or None

    @property
    def code(self):
        return (self.error or {}).get("code", "OK")

    @property
    def message(self):
        return (self.error or {}).get("message", "")

    def failure(self, **extra):
        """The fail_json arguments for this run: the CLI's own one-line message first."""
        out = dict(msg=self.message or ("rocmrevive exited %d" % self.rc), rc=self.rc, cmd=self.cmd,
                   error=self.error, retryable=self.code in RETRYABLE)
        if not self.message:
            out["stderr"] = self.stderr
        out.update(extra)
        return out


def run_cli(module, cmd):
    """Run ``cmd`` and parse its JSON document; fail the task if there is none (a crash, a CLI
    too old for ``--json``, a Python error before the CLI started)."""
    rc, out, err = module.run_command(cmd, environ_update={"NO_COLOR": "1", "TERM": "dumb"})
    try:
        doc = json.loads(out)
    except ValueError:
        doc = None
    if not isinstance(doc, dict) or "schema_version" not in doc:
        tail = (err or out or "").strip().splitlines()[-5:]
        module.fail_json(msg="rocmrevive printed no JSON document (exit %d): %s" % (rc, " | ".join(tail) or "no output"),
                         rc=rc, cmd=cmd, stdout=out, stderr=err)
    if doc.get("schema_version") not in SCHEMA_VERSIONS:
        module.fail_json(msg="rocmrevive speaks JSON schema %s; this collection understands %s: upgrade the "
                             "collection or the CLI so that they match"
                             % (doc.get("schema_version"), ", ".join(str(v) for v in SCHEMA_VERSIONS)),
                         rc=rc, cmd=cmd)
    for w in doc.get("warnings") or []:
        module.warn("rocmrevive: %s" % w)
    return CliResult(cmd, rc, doc, err)
