#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocmrevive contributors
# SPDX-License-Identifier: MIT
from __future__ import annotations

DOCUMENTATION = r"""
---
module: gfx906_patch
short_description: Install, verify or roll back the gfx906 rocBLAS files of a ROCm install
version_added: "0.2.0"
description:
  - Makes AMD gfx906 GPUs (Instinct MI50/MI60, Radeon VII, Radeon Pro VII) usable with ROCm 6.4+ by
    installing the version-matched gfx906 rocBLAS/Tensile files every rocBLAS copy lacks, as one
    journaled transaction per copy, through the C(rocmrevive) command line tool on the managed node.
  - The module is a thin wrapper. C(rocmrevive install --json) decides what to do and reports it;
    this module maps that report to Ansible's contract (C(changed), C(failed), C(msg), C(rc), C(diff)).
  - A second run with the same inputs reports C(changed=false). In check mode the module runs
    C(rocmrevive install --check), which runs every preflight of a real run (paths, cards, versions,
    the source and its checksums, the lock, free space) and writes nothing to any ROCm tree or journal;
    exit status 20 (changes pending) is reported as C(changed=true).
  - Hosts without a gfx906 GPU are left alone and reported as C(changed=false), C(supported=false),
    unless O(fail_on_unsupported) is set. A host whose rocBLAS copy needs gfx906 and is left without it
    (no source for its rocBLAS, where C(rocmrevive recipe) writes the build; a TheRock tree) fails with
    the CLI's message.
author:
  - rocmrevive contributors (@rocmrevive)
requirements:
  - The C(rocmrevive) CLI on the managed node (it needs Python >= 3.10); this module itself uses only the
    standard library.
options:
  state:
    description:
      - V(present) installs what is missing (C(rocmrevive install --yes)).
      - V(absent) rolls back every committed rocmrevive transaction on the selected trees, newest first
        (C(rocmrevive rollback TXID)); each file's hash is checked first and a file changed since the
        install stops it (drift) unless O(force).
      - V(verified) changes nothing and fails unless every rocBLAS copy serves every GPU
        (C(rocmrevive verify)).
    type: str
    choices: [present, absent, verified]
    default: present
  tree:
    description:
      - Only these ROCm installs or rocBLAS library folders (for example V(/opt/rocm-6.4.3)).
        Default is every rocBLAS copy rocmrevive finds on the host.
    type: list
    elements: str
    aliases: [trees]
  target:
    description:
      - Work for these GPU targets (for example V(gfx906:sramecc+:xnack-)) instead of the cards detected
        in the host, for images built on machines without the GPU.
    type: list
    elements: str
    aliases: [targets]
  source:
    description:
      - A local C(.deb), tarball, folder of them, or a folder exported by C(rocmrevive fetch --to DIR),
        used instead of downloading (air-gapped hosts, fleets).
    type: path
    aliases: [from]
  mirror:
    description:
      - Base URL to download from instead of the host's apt configuration; for a fleet, an HTTP server
        over a C(rocmrevive fetch --to) export, pointed at the source's folder
        (V(http://HOST:PORT/sources/debian-librocblas4)).
    type: str
  cache:
    description:
      - Download cache on the node (default C(/var/cache/rocmrevive)).
    type: path
  manifests:
    description:
      - Folder of source manifests (default the ones shipped with rocmrevive).
    type: path
  state_dir:
    description:
      - Where rocmrevive keeps its journals, backups and lock (default C(/var/lib/rocmrevive)).
    type: path
  python:
    description:
      - Python interpreters or environments whose bundled rocBLAS (PyTorch wheels) should be handled too.
    type: list
    elements: path
  cross_version:
    description:
      - Also allow sources built for another rocBLAS version (the community's ROCm 6.3 recipe). Not recommended.
    type: bool
    default: false
  expect:
    description:
      - Check mode only. The files a real run would install, as C(rocmrevive fetch --extract) verified them on
        the control node from the pinned package, one entry per rocBLAS version; with it, check mode needs no
        package on the node and writes nothing there, not even a cache or a temporary file. Each rocBLAS copy
        that lacks gfx906 (C(rocmrevive detect)) has its files compared by sha256 with these; C(changed) and
        the diff say which a real run would add or replace, and a file a real run refuses (not a regular file)
        fails the check with the real run's message. Copies that already serve gfx906 are left as a real run
        leaves them. The fleet playbook passes it in check mode.
    type: list
    elements: dict
    suboptions:
      rocblas_version:
        description: The rocBLAS version the files are for (V(4.4.1)); a copy of rocBLAS 4.4 takes them.
        type: str
        required: true
      sums:
        description: The C(SHA256SUMS) text of the files (C(<sha256>  <name>) per line).
        type: str
        required: true
  force:
    description:
      - With O(state=absent), also restore files that were changed since the install (their current bytes
        are kept in rocmrevive's backups folder).
    type: bool
    default: false
  fail_on_unsupported:
    description:
      - Fail on hosts where there is nothing to do (no gfx906 GPU and no O(target), or no rocBLAS copy)
        instead of reporting C(supported=false).
    type: bool
    default: false
  root:
    description:
      - Treat this folder as the host's C(/) (images, chroots, and test fixtures).
    type: path
  rocmrevive_bin:
    description:
      - Path of the C(rocmrevive) executable. Default is C(rocmrevive) found on the PATH or in
        C(/usr/local/bin), C(/opt/rocmrevive/bin), C(/opt/rocmrevive/venv/bin).
    type: path
attributes:
  check_mode:
    support: full
    description:
      - Runs C(rocmrevive install --check) or C(rocmrevive rollback --dry-run); every preflight runs,
        nothing is written to a ROCm tree, journal or cache (a download goes to a private temporary folder
        removed at exit). With O(expect), the node's files are compared with the control node's verified
        list instead, and nothing at all is written on the node.
  diff_mode:
    support: full
    description: One diff per rocBLAS copy, with each file's sha256 before and after (C(absent) for no file).
  platform:
    support: full
    platforms: posix
    description: Linux hosts with ROCm installs.
seealso:
  - module: rocmrevive.gfx906.facts
notes:
  - The JSON contract of the CLI is versioned (C(schema_version)); the module refuses a schema it does not know.
  - Exit statuses 5 (network) and 7 (locked) are returned with C(retryable=true) for C(until) loops.
"""

EXAMPLES = r"""
- name: Make every rocBLAS copy serve the host's gfx906 cards
  rocmrevive.gfx906.gfx906_patch:
    state: present

- name: Install from a folder made once with `rocmrevive fetch --to` on the control node
  rocmrevive.gfx906.gfx906_patch:
    state: present
    tree: /opt/rocm-6.4.3
    source: /var/cache/rocmrevive-export

- name: Install from an HTTP server over that folder
  rocmrevive.gfx906.gfx906_patch:
    mirror: http://controller:8000/sources/debian-librocblas4
  register: patched
  until: not (patched.retryable | default(false))
  retries: 3

- name: Fail unless rocBLAS serves every GPU
  rocmrevive.gfx906.gfx906_patch:
    state: verified

- name: Undo (byte for byte, from the journal)
  rocmrevive.gfx906.gfx906_patch:
    state: absent
    tree: /opt/rocm-6.4.3
"""

RETURN = r"""
msg:
  description: One line saying what was done (or would be), or the CLI's error message.
  returned: always
  type: str
  sample: "installed 140 files into /opt/rocm-6.4.3/lib/rocblas/library (transaction 0001-20261202T091300Z)"
rc:
  description: The CLI's exit status (20 in check mode when changes are pending).
  returned: always
  type: int
  sample: 0
cmd:
  description: The command that was run (the last one for O(state=absent)).
  returned: always
  type: list
  elements: str
supported:
  description: False when the host has nothing rocmrevive can do (no gfx906 GPU, no rocBLAS copy).
  returned: always
  type: bool
copies:
  description: For V(present), one entry per rocBLAS copy as the CLI reports it (C(library), C(status) in
    satisfied, planned, installed, unsupported, refused; C(reason), C(summary), C(changes) with per-file
    C(before)/C(after) sha256, C(txid), C(artifact), C(error)), with C(verify) reduced to the verdict of each
    stage (C(before), C(staged), C(after)).
  returned: when state is present and the host is supported
  type: list
  elements: dict
transactions:
  description: For V(absent), one entry per transaction rolled back (or that would be), with its C(txid),
    C(tree) and C(actions).
  returned: when state is absent
  type: list
  elements: dict
verify:
  description: For V(verified), the CLI's verify document (C(ok), C(targets), C(copies) with every check).
  returned: when state is verified
  type: dict
files:
  description: Every file changed (or that would be), machine path to C({before, after}) sha256 (null for no file).
  returned: when state is present or absent
  type: dict
error:
  description: The CLI's error (C(code), C(exit), C(message)) when it reported one.
  returned: on failure or when unsupported
  type: dict
retryable:
  description: True for transient failures (network, lock held); retry the task.
  returned: on failure
  type: bool
"""

import hashlib
import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocmrevive.gfx906.plugins.module_utils.rocmrevive import (
    COMMON_ARGS, add_option, base_command, find_cli, run_cli)


def file_diffs(per_tree):
    """Ansible diffs, one per tree: lines ``<file>  sha256:<hex>`` (or ``absent``) before and after.

    ``per_tree`` is a list of (tree, {"before": {path: sha|None}, "after": {path: sha|None}}, verb)."""
    out = []
    for tree, diff, verb in per_tree:
        paths = sorted(set(diff.get("before", {})) | set(diff.get("after", {})))
        if not paths:
            continue
        prefix = tree.rstrip("/") + "/"

        def line(path, sha):
            name = path[len(prefix):] if path.startswith(prefix) else path
            return "%s  %s\n" % (name, "sha256:" + sha if sha else "absent")

        out.append({"before_header": "%s (before)" % tree, "after_header": "%s (after %s)" % (tree, verb),
                    "before": "".join(line(p, diff.get("before", {}).get(p)) for p in paths),
                    "after": "".join(line(p, diff.get("after", {}).get(p)) for p in paths)})
    return out


COPY_KEYS = ("library", "layout", "rocblas_version", "rocm_version", "status", "reason", "manifest", "summary",
             "changes", "txid", "journal", "changed", "error")


def compact(copy):
    """A copy as the CLI reports it, with each verification reduced to its verdict (the full
    checks, with every offending file and kernel, are in `rocmrevive install --json`)."""
    out = dict((k, copy.get(k)) for k in COPY_KEYS)
    art = copy.get("artifact") or {}
    out["artifact"] = dict((k, art.get(k)) for k in ("filename", "sha256", "size", "url", "origin")) if art else None
    out["verify"] = dict((stage, (copy.get("verify_" + stage) or {}).get("ok"))
                         for stage in ("before", "staged", "after"))
    return out


def merged_files(diffs):
    files = {}
    for d in diffs:
        for p in set(d.get("before", {})) | set(d.get("after", {})):
            files[p] = {"before": d.get("before", {}).get(p), "after": d.get("after", {}).get(p)}
    return files


def unsupported(module, res, **extra):
    if module.params["fail_on_unsupported"]:
        module.fail_json(supported=False, **res.failure(**extra))
    # failed=False: Ansible marks any result with a non-zero rc failed unless told otherwise
    module.exit_json(changed=False, failed=False, supported=False, msg="nothing to do: %s" % res.message,
                     rc=res.rc, cmd=res.cmd, error=res.error, **extra)


def _expected_for(expect, version):
    """{name: sha256} of the ``expect`` entry for a copy of rocBLAS ``version`` ("4.4" takes "4.4.1")."""
    for e in expect or []:
        v = str(e.get("rocblas_version") or "")
        if version and (v == version or v.startswith(version + ".") or version.startswith(v + ".")):
            files = {}
            for line in str(e.get("sums") or "").splitlines():
                parts = line.strip().split(None, 1)
                if len(parts) == 2 and len(parts[0]) == 64:
                    files[parts[1].lstrip("*")] = parts[0].lower()
            return files
    return None


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def present_compared(module, cli):
    """Check mode with O(expect): each rocBLAS copy that lacks gfx906 compared by sha256 with the
    files the control node verified; reads only (``rocmrevive detect`` and the files themselves)."""
    p = module.params
    cmd = base_command(module, cli) + ["detect"]
    add_option(cmd, "--tree", p["tree"])
    add_option(cmd, "--target", p["target"])
    add_option(cmd, "--python", p["python"])
    det = run_cli(module, cmd)
    if det.code not in ("OK", "NOTHING_SUPPORTED"):
        module.fail_json(**det.failure(changed=False))
    doc = det.doc
    if not (doc.get("summary") or {}).get("gfx906_gpus") and not p["target"]:
        unsupported(module, det)
    top = p["root"] or "/"
    copies, per_tree = [], []
    for c in doc.get("rocblas_copies") or []:
        lib = c["path"]
        out = {"library": lib, "layout": c.get("layout"), "rocblas_version": c.get("rocblas_version"),
               "rocm_version": c.get("rocm_version"), "changed": False}
        if not c.get("missing_for_gpus") and not p["target"]:
            copies.append(dict(out, status="satisfied", reason="serves every gfx906 GPU already"))
            continue
        files = _expected_for(p["expect"], c.get("rocblas_version"))
        if files is None:
            copies.append(dict(out, status="unsupported",
                               reason="no file list from the control node for rocBLAS %s" % c.get("rocblas_version")))
            continue
        before, after = {}, {}
        for name in sorted(files):
            path = lib.rstrip("/") + "/" + name
            real = os.path.join(top, path.lstrip("/"))
            try:
                st = os.lstat(real)
            except FileNotFoundError:
                before[path], after[path] = None, files[name]
                continue
            if not stat.S_ISREG(st.st_mode):
                msg = "%s: %s exists and is not a regular file; rocmrevive replaces only regular files" % (lib, path)
                module.fail_json(msg=msg, changed=False, supported=True, rc=6, cmd=cmd,
                                 error={"code": "VERIFY_FAILED", "exit": 6, "message": msg}, retryable=False)
            have = _sha256(real)
            if have != files[name]:
                before[path], after[path] = have, files[name]
        n = len(after)
        status = "planned" if n else "unchanged"
        copies.append(dict(out, status=status, changed=bool(n),
                           summary={"create": sum(1 for x in before.values() if x is None),
                                    "replace": sum(1 for x in before.values() if x is not None)}))
        if n:
            per_tree.append((lib, {"before": before, "after": after}, "install"))
    left = [c for c in copies if c["status"] == "unsupported"]
    result = dict(changed=bool(per_tree), rc=det.rc, cmd=cmd, supported=True, copies=copies,
                  files=merged_files([diff for _tree, diff, _verb in per_tree]))
    if module._diff:
        result["diff"] = file_diffs(per_tree)
    if left:
        result["msg"] = "; ".join("%s: %s" % (c["library"], c["reason"]) for c in left)
        module.fail_json(**result)
    result["msg"] = summary(copies, True)
    module.exit_json(failed=False, **result)


def present(module, cli):
    p = module.params
    if module.check_mode and p["expect"]:
        present_compared(module, cli)
        return
    cmd = base_command(module, cli) + ["install", "--yes"]
    if module.check_mode:
        cmd.append("--check")
    add_option(cmd, "--tree", p["tree"])
    add_option(cmd, "--target", p["target"])
    add_option(cmd, "--from", p["source"])
    add_option(cmd, "--mirror", p["mirror"])
    add_option(cmd, "--cache", p["cache"])
    add_option(cmd, "--manifests", p["manifests"])
    add_option(cmd, "--state-dir", p["state_dir"])
    add_option(cmd, "--python", p["python"])
    if p["cross_version"]:
        cmd.append("--cross-version")
    res = run_cli(module, cmd)
    doc = res.doc
    copies = doc.get("copies") or []
    # rc 3 with a copy the CLI left without gfx906 (no source for its rocBLAS: `rocmrevive recipe`;
    # a TheRock tree) is a failure: the host has the card and the request was not met. rc 3 with
    # no such copy is a host with nothing to do (no gfx906 GPU), as before.
    left = [c for c in copies if c.get("status") in ("unsupported", "refused") and not c.get("error")]
    if res.code == "NOTHING_SUPPORTED" and not left and not any(c.get("status") in ("installed", "planned")
                                                                for c in copies):
        unsupported(module, res, copies=[compact(c) for c in copies])
    pending = module.check_mode and res.code == "CHANGES_PENDING"
    changed = bool(doc.get("changed")) or pending
    per_tree = [(c["library"], c["diff"], "install") for c in copies
                if c.get("diff") and c.get("status") in ("installed", "planned")]
    result = dict(changed=changed, rc=res.rc, cmd=cmd, supported=True, copies=[compact(c) for c in copies],
                  files=merged_files([diff for _tree, diff, _verb in per_tree]))
    if module._diff:
        result["diff"] = file_diffs(per_tree)
    if res.code not in ("OK", "CHANGES_PENDING") or (res.code == "CHANGES_PENDING" and not module.check_mode):
        module.fail_json(**res.failure(**result))
    result["msg"] = summary(copies, module.check_mode)
    module.exit_json(failed=False, **result)  # rc is 20 in check mode when changes are pending


def summary(copies, check):
    parts = []
    for c in copies:
        s = c.get("summary") or {}
        n = s.get("create", 0) + s.get("replace", 0)
        if c.get("status") == "installed":
            parts.append("installed %d files into %s (transaction %s)" % (n, c["library"], c.get("txid")))
        elif c.get("status") == "planned":
            parts.append("would install %d files into %s" % (n, c["library"]))
        elif c.get("status") in ("satisfied", "unchanged"):
            parts.append("%s: already complete" % c["library"])
        else:
            parts.append("%s: %s (%s)" % (c["library"], c.get("status"), c.get("reason")))
    return "; ".join(parts) or ("nothing would change" if check else "nothing to do")


def _under(path, trees):
    if not trees:
        return True
    for t in trees:
        t = t.rstrip("/")
        if path == t or path.startswith(t + "/") or t.startswith(path + "/"):
            return True
    return False


def absent(module, cli):
    p = module.params
    base = base_command(module, cli)
    state_dir = ["--state-dir", p["state_dir"]] if p["state_dir"] else []
    st = run_cli(module, base + ["status"] + state_dir)
    if st.code == "INTERRUPTED":
        module.fail_json(**st.failure())
    txs = [t for t in st.doc.get("transactions", []) if t.get("state") == "committed"
           and _under(t.get("tree") or "", p["tree"])]
    done, per_tree, cmd, rc = [], [], st.cmd, st.rc
    for tx in reversed(txs):  # newest first: each rollback finds the files as the next one left them
        cmd = base + ["rollback", tx["txid"]] + state_dir
        if module.check_mode:
            cmd.append("--dry-run")
        if p["force"]:
            cmd.append("--force")
        res = run_cli(module, cmd)
        rc = res.rc
        if res.code != "OK":
            module.fail_json(transactions=done, **res.failure(changed=bool(done) and not module.check_mode))
        acts = res.doc.get("actions") or []
        if any(a.get("op") != "keep" for a in acts):
            done.append({"txid": res.doc.get("txid"), "tree": res.doc.get("tree"), "actions": acts,
                         "journal": res.doc.get("journal")})
            per_tree.append((res.doc.get("tree") or "", res.doc.get("diff") or {}, "rollback"))
    changed = bool(done)
    verb = "would roll back" if module.check_mode else "rolled back"
    msg = "; ".join("%s transaction %s on %s (%d files)" % (verb, d["txid"], d["tree"], len(d["actions"]))
                    for d in done)
    if not msg:
        msg = "nothing to roll back: no committed rocmrevive transaction"
        if p["tree"]:
            msg += " on %s" % ", ".join(p["tree"])
    result = dict(changed=changed, msg=msg, rc=rc, cmd=cmd, supported=True, transactions=done,
                  files=merged_files([diff for _tree, diff, _verb in per_tree]))
    if module._diff:
        result["diff"] = file_diffs(per_tree)
    module.exit_json(failed=False, **result)  # rc may be status's 8 (drift elsewhere): not a failure here


def verified(module, cli):
    p = module.params
    cmd = base_command(module, cli) + ["verify"]
    add_option(cmd, "--tree", p["tree"])
    add_option(cmd, "--target", p["target"])
    res = run_cli(module, cmd)
    envelope = ("schema_version", "command", "root", "changed", "warnings", "error")
    doc = dict((k, v) for k, v in res.doc.items() if k not in envelope)
    if res.code == "NOTHING_SUPPORTED":
        unsupported(module, res, verify=doc)
    if res.code != "OK":
        module.fail_json(**res.failure(changed=False, verify=doc, supported=True))
    n = len(doc.get("copies") or [])
    what = "1 rocBLAS copy serves" if n == 1 else "%d rocBLAS copies serve" % n
    module.exit_json(changed=False, rc=res.rc, cmd=cmd, supported=True, verify=doc,
                     msg="%s %s" % (what, ", ".join(doc.get("targets") or [])))


def main():
    args = dict(
        state=dict(type="str", default="present", choices=["present", "absent", "verified"]),
        tree=dict(type="list", elements="str", aliases=["trees"]),
        target=dict(type="list", elements="str", aliases=["targets"]),
        source=dict(type="path", aliases=["from"]),
        mirror=dict(type="str"),
        cache=dict(type="path"),
        manifests=dict(type="path"),
        state_dir=dict(type="path"),
        python=dict(type="list", elements="path"),
        cross_version=dict(type="bool", default=False),
        expect=dict(type="list", elements="dict",
                    options=dict(rocblas_version=dict(type="str", required=True), sums=dict(type="str", required=True))),
        force=dict(type="bool", default=False),
        fail_on_unsupported=dict(type="bool", default=False),
    )
    args.update(COMMON_ARGS)
    module = AnsibleModule(argument_spec=args, supports_check_mode=True,
                           mutually_exclusive=[("source", "mirror")])
    cli = find_cli(module)
    {"present": present, "absent": absent, "verified": verified}[module.params["state"]](module, cli)


if __name__ == "__main__":
    main()
