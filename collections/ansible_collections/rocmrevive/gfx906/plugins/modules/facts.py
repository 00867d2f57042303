#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: rocmrevive contributors
# SPDX-License-Identifier: MIT
from __future__ import annotations

DOCUMENTATION = r"""
---
module: facts
short_description: Gather AMD GPU, ROCm and rocBLAS facts for gfx906 hosts
version_added: "0.1.0"
description:
  - Runs C(rocmrevive detect --json) (and C(rocmrevive status --json)) on the managed node and returns
    the result as the host fact C(ansible_facts.rocmrevive) - the AMD GPUs and their targets, the ROCm
    installs, every rocBLAS copy and which of them lack files the host's gfx906 GPUs need, and what
    rocmrevive has installed and whether it is still intact.
  - Reads files only; never changes the host. A host without an AMD GPU is not an error.
author:
  - rocmrevive contributors (@rocmrevive)
requirements:
  - The C(rocmrevive) CLI on the managed node.
options:
  python:
    description:
      - Python interpreters or environments to look in for ROCm wheels (PyTorch's bundled rocBLAS).
    type: list
    elements: path
  tree:
    description:
      - Extra rocBLAS library folders to include.
    type: list
    elements: str
  status:
    description:
      - Also report rocmrevive's own transactions (C(rocmrevive status)) as C(managed).
    type: bool
    default: true
  state_dir:
    description:
      - rocmrevive's journal folder for O(status) (default C(/var/lib/rocmrevive)).
    type: path
  full:
    description:
      - Also return the whole C(detect) document (PCIe topology, GPU pairs, IOMMU) as C(ansible_facts.rocmrevive.detect).
    type: bool
    default: false
  root:
    description:
      - Treat this folder as the host's C(/) (images, chroots, test fixtures).
    type: path
  rocmrevive_bin:
    description:
      - Path of the C(rocmrevive) executable (default C(rocmrevive) on the PATH or in a usual install folder).
    type: path
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  diff_mode:
    support: none
    description: Nothing is changed, so there is no diff.
  facts:
    support: full
    description: Returns C(ansible_facts.rocmrevive).
  platform:
    support: full
    platforms: posix
    description: Linux hosts.
seealso:
  - module: rocmrevive.gfx906.gfx906_patch
"""

EXAMPLES = r"""
- name: Learn the GPUs and rocBLAS copies
  rocmrevive.gfx906.facts:

- name: Patch only the hosts that need it
  rocmrevive.gfx906.gfx906_patch:
  when: ansible_facts.rocmrevive.needs | length > 0

- name: Group the fleet by GPU target
  ansible.builtin.group_by:
    key: "gfx906_{{ ansible_facts.rocmrevive.gfx906 }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: dict
  contains:
    rocmrevive:
      description: What rocmrevive found on the host.
      type: dict
      contains:
        bin:
          description: The rocmrevive executable the facts came from (use it in C(command) tasks).
          type: str
        gfx906:
          description: True when at least one GPU is gfx906.
          type: bool
        gpus:
          description: AMD GPUs (C(index), C(bdf), C(target), C(processor), C(model), C(vram_bytes), C(render_node)).
          type: list
          elements: dict
        targets:
          description: Distinct full target ids of the GPUs (for example C(gfx906:sramecc+:xnack-)).
          type: list
          elements: str
        rocm_installs:
          description: ROCm installs (C(path), C(version), C(default)).
          type: list
          elements: dict
        trees:
          description: Every rocBLAS copy (C(path), C(layout), C(rocblas_version), C(rocm_version), C(targets),
            C(missing_for_gpus)).
          type: list
          elements: dict
        needs:
          description: Library folders of the rocBLAS copies that lack files a GPU of this host needs.
          type: list
          elements: str
        pending:
          description: Transactions a killed run left open (run C(rocmrevive recover) on the node); the
            module never finishes or undoes them, in check mode or not.
          type: list
          elements: str
        managed:
          description: Per tree rocmrevive changed, its state (intact, drifted, missing, partial, interrupted)
            and transactions; empty when O(status=false).
          type: list
          elements: dict
        problems:
          description: Problems detect noticed (human lines).
          type: list
          elements: str
        message:
          description: Why there is nothing to do here, when that is the case.
          type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.rocmrevive.gfx906.plugins.module_utils.rocmrevive import (
    COMMON_ARGS, add_option, base_command, find_cli, run_cli)

GPU_KEYS = ("index", "bdf", "target", "processor", "gfx_target_version", "model", "vram_bytes", "render_node",
            "numa_node", "problems")
TREE_KEYS = ("path", "layout", "owner", "rocblas_version", "rocm_version", "targets", "missing_for_gpus", "problems")


def main():
    args = dict(
        python=dict(type="list", elements="path"),
        tree=dict(type="list", elements="str"),
        status=dict(type="bool", default=True),
        state_dir=dict(type="path"),
        full=dict(type="bool", default=False),
    )
    args.update(COMMON_ARGS)
    module = AnsibleModule(argument_spec=args, supports_check_mode=True)
    p = module.params
    cli = find_cli(module)
    base = base_command(module, cli)
    cmd = base + ["detect"]
    add_option(cmd, "--python", p["python"])
    add_option(cmd, "--tree", p["tree"])
    det = run_cli(module, cmd)
    # INTERRUPTED: detect reported a transaction a killed run left open (and left it alone)
    if det.code not in ("OK", "NOTHING_SUPPORTED", "INTERRUPTED"):
        module.fail_json(**det.failure(changed=False))
    if det.code == "INTERRUPTED":
        module.warn("rocmrevive detect: %s" % det.message)
    doc = det.doc
    gpus = [{k: g.get(k) for k in GPU_KEYS} for g in doc.get("gpus") or []]
    trees = [{k: c.get(k) for k in TREE_KEYS} for c in doc.get("rocblas_copies") or []]
    facts = {
        "bin": cli,
        "schema_version": doc.get("schema_version"),
        "gpus": gpus,
        "gfx906": any(g.get("processor") == "gfx906" for g in gpus),
        "targets": sorted({g["target"] for g in gpus if g.get("target")}),
        "rocm_installs": [{k: i.get(k) for k in ("path", "version", "build", "default")}
                          for i in doc.get("rocm_installs") or []],
        "trees": trees,
        "needs": [c["path"] for c in trees if c.get("missing_for_gpus")],
        "problems": list(doc.get("problems") or []),
        "message": det.message if det.code != "OK" else "",
        "pending": list(doc.get("pending") or []),
        "managed": [],
    }
    if p["full"]:
        facts["detect"] = {k: v for k, v in doc.items() if k not in ("warnings", "error")}
    if p["status"]:
        cmd = base + ["status"]
        add_option(cmd, "--state-dir", p["state_dir"])
        st = run_cli(module, cmd)
        if st.code not in ("OK", "DRIFT", "INTERRUPTED"):
            module.fail_json(**st.failure(changed=False))
        facts["managed"] = st.doc.get("trees") or []
        if st.code != "OK":
            module.warn("rocmrevive status: %s" % st.message)
    module.exit_json(changed=False, ansible_facts={"rocmrevive": facts})


if __name__ == "__main__":
    main()
