"""Debian's snapshot archive: the second home of every Debian pin once its suite has moved on.

Debian keeps only the current version of a package in sid and experimental; when a pinned
version is replaced, its file leaves the pool of every mirror. The snapshot archive keeps every
file ever in the archive and serves it two ways (both tried, in this order, each verified by the
manifest's sha256 and size like a mirror's file):

- by content: ``<snapshot>/file/<sha1>`` where the manifest records the file's ``sha1``;
- by date: ``<snapshot>/archive/debian/<YYYYMMDDTHHMMSSZ>/<filename>``, the archive as it was when
  the suite last listed the pin (the manifest's ``seen``).

The address is a setting like the mirror (``--snapshot URL``, ``snapshot = "URL"`` in
/etc/rocmrevive/config.toml); ``none`` turns the fallback off.

    base = snapshot_base(None)            # DEFAULT_SNAPSHOT
    snapshot_urls(base, source)           # [(url, "by content"), (url, "as of 20261030T080801Z")]
"""
from __future__ import annotations

from rocmrevive.sources.manifest import Source

# Debian's snapshot archive: the one place its address is written (docs/manifests.md, config.py)
DEFAULT_SNAPSHOT = "https://snapshot.debian.org"
OFF = "none"


def snapshot_base(setting: str | None) -> str | None:
    """The snapshot archive to fall back on: the setting (``--snapshot``, config file), Debian's
    when none is given, None when the setting is ``none``."""
    if setting is None or not setting.strip():
        return DEFAULT_SNAPSHOT
    if setting.strip().lower() == OFF:
        return None
    return setting.strip().rstrip("/")


def snapshot_urls(base: str, source: Source) -> list[tuple[str, str]]:
    """(url, how) of ``source``'s file in the snapshot archive at ``base``: by content when the
    manifest records its sha1, then by the date its suite last listed it; [] for neither."""
    out: list[tuple[str, str]] = []
    if source.sha1:
        out.append((f"{base}/file/{source.sha1}", "by content"))
    if source.seen and source.filename:
        out.append((f"{base}/archive/debian/{source.seen}/{source.filename}", f"as of {source.seen}"))
    return out
