"""Diagnosis: what the machine and its GPUs lack, what that breaks, and what rocmrevive changed.
It only reads: it never imports ``install`` or the CLI (callers pass in what those know, as
``audit``'s remedy column is handed ``graft_for``).

* ``libraries``: the ROCm libraries rocmrevive knows, what each one's device code is for and
  what to do when a GPU target is missing from it;
* ``audit``: libraries × targets, read from the fat binaries by structure (headers only);
* ``verify``: the checks behind ``rocmrevive verify``, for one rocBLAS copy and one device, and
  over every copy ``trees.select`` picks (``verify_machine``);
* ``status``: what rocmrevive changed, per tree (``machine_status``), and ``orphans``: installed
  files no journal records;
* ``explain``: recognising known ROCm failure messages by their structure.
"""
