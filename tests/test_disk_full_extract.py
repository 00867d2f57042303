"""Every ENOSPC while extracting is the one disk-full outcome (exit 4, PERMISSION) naming the
folder that filled, never an internal error or a damaged-archive verdict (issue 35, finding 7):
the archive's members on a disk too small for them, and the extraction's index written when the
members just fit. Real tmpfs mounts; real Debian packages built by the test fixtures.

    with small_disk(tmp_path / "disk", 64 << 10) as disk: extract_selected(deb, lambda n: True, disk / "s")
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.sources.unpack import extract_selected
from tests.test_cli_newuser import fill, small_disk
from tests.test_install import mr


def _files(name: str) -> bool:
    return name.endswith((".co", ".dat", ".hsaco"))


pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to mount a tmpfs")


def test_members_that_do_not_fit_name_the_staging_folder(tmp_path):
    deb = Path(mr.build_source_deb(tmp_path / "librocblas4_6.4.4-4_amd64.deb")["path"])
    with small_disk(tmp_path / "disk", 16 << 10) as disk:
        with pytest.raises(RevError) as e:
            extract_selected(deb, _files, disk / "stage")
        assert e.value.code == "PERMISSION", e.value
        assert e.value.message.startswith(f"no space left in {disk / 'stage'} while extracting"), e.value.message
        assert not (disk / "stage").exists() or not any(p.is_file() for p in (disk / "stage").rglob("*"))


def test_the_index_write_on_a_full_disk_is_the_disk_full_outcome(tmp_path, monkeypatch):
    from rocmrevive.install import extract as ex

    deb = Path(mr.build_source_deb(tmp_path / "librocblas4_6.4.4-4_amd64.deb")["path"])
    real = ex._members

    def then_fill(*a, **kw):     # the members fit; the disk fills before the index is written
        out = real(*a, **kw)
        fill(disk)
        return out

    with small_disk(tmp_path / "disk", 8 << 20) as disk:
        monkeypatch.setattr(ex, "_members", then_fill)

        class Fetched:
            path, basename, sha256 = str(deb), deb.name, "ab" * 32

        class Manifest:
            id = "m"

            select = staticmethod(_files)

        class Source:
            member_prefix, expected_files = "./", None

        with pytest.raises(RevError) as e:
            ex._extracted_locked(Fetched, Manifest, Source, disk / "cache", "k", lambda m: None)
        assert e.value.code == "PERMISSION" and e.value.message.startswith(
            f"no space left in {disk / 'cache' / 'extracted'} while writing the index"), e.value.message
        assert not (disk / "cache/extracted/k").exists()
