"""RCCL on multi-GPU boxes: which ``librccl.so`` copies the user's programs may load and which
cards each can serve (``audit``), a multi-target RCCL installed side by side through the
transaction core (``install``) or the build recipe for this machine's targets (``recipe``), and
peer-to-peer readiness with the RCCL/NCCL environment that suits the topology (``p2p``).

    from rocmrevive.rccl.audit import audit
    rep = audit(Root("/"), env_files=["/etc/vllm.env"])
    [(c.path, c.serves) for c in rep.copies]

Nothing here prints or exits; the CLI (``rocmrevive rccl``) renders the results.
"""
