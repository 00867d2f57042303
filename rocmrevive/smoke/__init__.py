"""Smoke tests: does the user's software compute right on their GPUs, and how fast?

- ``probe.py``: the PyTorch probe, a self-contained script run by the user's interpreter
  (rocmrevive never imports torch); ``torch_runner`` runs it and reads its JSON lines.
- ``llama``: the user's llama.cpp on a tiny model from ``gguf_model``, per GPU and on all.
- ``record``: the status record ``/var/lib/rocmrevive/smoke/last.json``.
- ``run``: ``run_smoke``, both parts, the verdict and the record (imported by the commands that run a
  smoke only: ``status`` reads ``record`` without loading the runners).

- ``expect``: per-shape speed against the device's last pass on the same stack and the card's
  floor (``rocmrevive/data/cards.toml``); records in ``/var/lib/rocmrevive/smoke/perf/``.
- health (``rocmrevive.hardware.health``, read here, root-side): RAS/ECC and PCIe AER counters
  before and after, temperatures, clocks and throttling sampled each second during the run.

Verdict (the CLI's exit code): any check failed, or a new uncorrectable RAS/AER error during the
run -> SMOKE_FAILED (10); a part asked for by name (``--torch``/``--llama``) that could not run
while another did -> SMOKE_FAILED; nothing could run at all (no GPU devices, no PyTorch, no
llama.cpp) -> NOTHING_SUPPORTED (3); results right but a shape class several times slower than
the record or the floor, or llama.cpp's time per token several times its last passes with the
same build and model -> SMOKE_SLOW (12); else OK (0).
"""
