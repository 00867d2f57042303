"""Fixture machines for ``--root``: ``build.py`` writes them, ``catalog.py`` describes them (with
the capture each value comes from). Test modules import the ``machine`` fixture from here:

    from machines import machine, CAPTURES   # noqa: F401  (pytest finds the fixture by name)
    def test_x(machine): root = machine("dual-mi50")
"""
from __future__ import annotations

from pathlib import Path

import pytest

from .build import build

REPO = Path(__file__).resolve().parents[2]
# the real command output the machines are built from, kept in the repo (each file's first line
# names the original capture and the report it came from)
CAPTURES = REPO / "tests" / "captures"


def capture(name: str) -> str:
    """The text of ``tests/captures/<name>``; a missing capture is an error, never a skip."""
    return (CAPTURES / name).read_text()


@pytest.fixture(scope="session")
def machine(tmp_path_factory):
    """``machine(name, **overrides)`` → the folder of a built catalog machine (built once)."""
    cache: dict = {}

    def get(name: str, **overrides) -> Path:
        key = (name, tuple(sorted(overrides.items())))
        if key not in cache:
            cache[key] = build(name, tmp_path_factory.mktemp(name.replace("-", "_")) / "root", **overrides)
        return cache[key]

    return get


@pytest.fixture
def fresh_machine(tmp_path):
    """A private copy to damage: ``fresh_machine(name, **overrides)``."""
    def get(name: str, **overrides) -> Path:
        return build(name, tmp_path / name, **overrides)

    return get
