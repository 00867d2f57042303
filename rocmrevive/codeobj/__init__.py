"""AMDGPU code objects: target ids, raw ELF, offload bundles, CCOB, host fat binaries.

The lowest layer: it imports nothing else of rocmrevive but ``errors``.
"""
