"""Environment files as services and containers use them: shell (``export K=V``), Docker
``--env-file`` (``K=V``) and systemd (``Environment="K=V" "K2=V2"``), read without running them.

    parse_env_text('export VLLM_NCCL_SO_PATH="/opt/r/lib/librccl.so.1"\\n')
    # {'VLLM_NCCL_SO_PATH': '/opt/r/lib/librccl.so.1'}
    path_list("/opt/x/lib:$LD_LIBRARY_PATH")      # ['/opt/x/lib']  (references to other variables dropped)
"""
from __future__ import annotations

import re
import shlex

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _assignments(words: list[str]) -> list[tuple[str, str]]:
    out = []
    for w in words:
        key, eq, value = w.partition("=")
        if eq and _KEY.match(key):
            out.append((key, value))
    return out


def parse_env_text(text: str) -> dict[str, str]:
    """Variables set by an environment file; the last assignment wins. Lines that are not
    assignments (comments, commands, unit sections) are ignored."""
    env: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(("#", ";", "[")):
            continue
        if line.startswith("Environment="):          # systemd: several quoted assignments
            body = line[len("Environment="):]
        elif line.startswith("export "):
            body = line[len("export "):]
        else:
            body = line
        try:
            words = shlex.split(body, comments=True)
        except ValueError:
            words = body.split()
        for key, value in _assignments(words):
            env[key] = value
    return env


def path_list(value: str | None) -> list[str]:
    """The directories of a ``PATH``-like value, without entries that reference other
    variables (``$LD_LIBRARY_PATH``, ``${X:+:$X}``): those are unknown here."""
    if not value:
        return []
    value = re.sub(r"\$\{[^}]*\}", "", value)
    return [p for p in value.split(":") if p and "$" not in p]
