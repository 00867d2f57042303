"""``fetch --extract``: the selected files of a verified artifact in DIR/<manifest>/<source>/ with
a SHA256SUMS, replacing an earlier extraction only once the new one is complete.

Every folder is reached through ``rocmrevive.fs`` descriptors: a link planted at
``DIR/<manifest>`` or ``DIR/<manifest>/<source>`` is refused, the old extraction is renamed and
removed relative to its folder (never through a link), and a refused extraction leaves nothing.

    info = extract_into(artifact, Path("/srv/gfx906"), "rocblas-6.4", source, manifest.select)
"""
from __future__ import annotations

import os
import secrets
import shutil
import tempfile
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.fs import Dir, open_regular
from rocmrevive.sources.unpack import extract_selected


def extract_into(artifact: Path, base: Path, manifest_id: str, source, select) -> dict:
    with Dir.open(base, create=True, what="extract folder") as bd, bd.sub(manifest_id, create=True) as md:
        final = source.name
        tmp = f".{final}.new-{secrets.token_hex(4)}"
        _clean_leftovers(md, final)
        private = None
        try:
            if md.shared:
                # others can rename entries here: unpack privately, then copy in through descriptors
                private = Path(tempfile.mkdtemp(prefix="rocmrevive-extract-"))
                where = private / "files"
            else:
                os.mkdir(tmp, 0o755, dir_fd=md.fd)
                where = md.path / tmp
            staged = extract_selected(artifact, select, where, member_prefix=source.member_prefix)
            if source.expected_files is not None and len(staged) != source.expected_files:
                raise RevError("VERIFY_FAILED", f"{source.key}: {len(staged)} files selected, the manifest "
                                                f"expects {source.expected_files}; nothing kept")
            if not staged:
                raise RevError("VERIFY_FAILED", f"{source.key}: no member under {source.member_prefix} matches "
                                                f"the manifest's patterns; nothing kept")
            if private is not None:
                os.mkdir(tmp, 0o755, dir_fd=md.fd)
                with md.sub(tmp) as td:
                    for f in staged:
                        _copy_member(td, f)
            sums = "".join(f"{f.sha256}  {f.name}\n" for f in sorted(staged, key=lambda f: f.name))
            with md.sub(tmp) as td:
                td.write_atomic("SHA256SUMS", sums.encode())
            old = f".{final}.old-{secrets.token_hex(4)}"
            if md.lstat(final) is not None:
                md.replace(final, old)
            md.replace(tmp, final)
            md.fsync()
            md.rmtree(old)
        except BaseException:
            md.rmtree(tmp)
            raise
        finally:
            if private is not None:
                shutil.rmtree(private, ignore_errors=True)
    out = base / manifest_id / final
    return {"dir": str(out), "files": len(staged), "bytes": sum(f.size for f in staged),
            "sha256sums": str(out / "SHA256SUMS")}


def _copy_member(td: Dir, f) -> None:
    parts = f.name.split("/")
    d = td
    opened = []
    try:
        for part in parts[:-1]:
            d = d.sub(part, create=True)
            opened.append(d)
        fd = open_regular(f.path)
        try:
            d.copy_in(parts[-1], fd, mode=f.mode, expect_sha256=f.sha256)
        finally:
            os.close(fd)
    finally:
        for o in opened:
            o.close()


def _clean_leftovers(md: Dir, final: str) -> None:
    """Remove what a killed earlier run left: .<source>.new-* and .<source>.old-* folders."""
    for name in md.listdir():
        if name.startswith((f".{final}.new-", f".{final}.old-")):
            md.rmtree(name)
