"""What an archive may declare before it is refused, and how a refusal is worded.

    Limits(max_members=1000)                # a tarball of more than 1000 entries is an error
    raise ArchiveError("member 'a/../b' climbs out with '..'")
"""
from __future__ import annotations

from dataclasses import dataclass

GiB = 1 << 30


@dataclass(frozen=True)
class Limits:
    """Bounds that turn archive bombs into errors instead of full disks or endless loops."""

    max_member_bytes: int = 4 * GiB       # one selected member (rocBLAS' largest gfx906 file: 17 MB)
    max_selected_bytes: int = 32 * GiB    # all selected members together
    max_stream_bytes: int = 256 * GiB     # the whole decompressed tar stream, skipped parts included
    max_members: int = 2_000_000
    max_meta_bytes: int = 1 << 20         # one GNU long name / pax header


class ArchiveError(Exception):
    """What is wrong with an archive, in a few words; becomes a RevError naming the archive."""
