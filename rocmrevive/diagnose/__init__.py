"""Diagnosis: what the GPUs still lack and what that breaks, in plain words.

* ``libraries``: the ROCm libraries rocmrevive knows, what each one's device code is for and
  what to do when a GPU target is missing from it;
* ``audit``: libraries × targets, read from the fat binaries by structure (headers only);
* ``verify``: the checks behind ``rocmrevive verify`` for one rocBLAS copy and one device;
* ``explain``: recognising known ROCm failure messages by their structure.

Same layer as ``tensile``: it may use ``tensile`` and ``codeobj``, never the CLI, ``txn`` or
``trees`` (callers pass in what those know).
"""
