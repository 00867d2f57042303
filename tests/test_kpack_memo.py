"""One open per ``.kpack`` per command (issue 40): the readers of a TheRock tree (the copy's survey,
its host libraries' ``.rocm_kpack_ref`` archives, the kpack checks) all ask ``read_kpack``, which
reads an archive once and answers later calls from the file's identity; a changed or swapped
archive is read again."""
from __future__ import annotations

import builtins
import os
from collections import Counter

import pytest

from rocmrevive.codeobj import kpack
from rocmrevive.diagnose.verify import verify_machine
from rocmrevive.rootfs import Root
from tests.fixtures import therock_layouts as T

pytestmark = pytest.mark.debian


@pytest.fixture
def opens(monkeypatch):
    """Every open of a ``.kpack`` file (os.open and open), by name, around the real calls."""
    seen: Counter = Counter()
    real_os_open, real_open = os.open, builtins.open

    def os_open(path, *a, **kw):
        if str(path).endswith(".kpack") and os.path.basename(str(path)) != ".kpack":  # a file, not the folder
            seen[os.path.basename(str(path))] += 1
        return real_os_open(path, *a, **kw)

    def py_open(file, *a, **kw):
        if isinstance(file, (str, os.PathLike)) and str(file).endswith(".kpack") and \
                os.path.basename(str(file)) != ".kpack":
            seen[os.path.basename(str(file))] += 1
        return real_open(file, *a, **kw)
    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(builtins, "open", py_open)
    kpack.clear_memo()
    yield seen
    kpack.clear_memo()


@pytest.fixture
def stack(tmp_path, debian_pkgs, codeobjects):
    return T.build_whole_stack_714(tmp_path / "m", debian_pkgs, codeobjects), T.LAYOUTS["whole-stack-7.14"]


def test_verify_opens_each_kpack_once(stack, opens):
    root, lay = stack
    rep = verify_machine(Root(root))
    names = {os.path.basename(lay.kpack_archive(a, arch)) for a in ("blas", "miopen") for arch in lay.arches}
    assert names <= set(opens), (names, opens)
    assert all(n == 1 for n in opens.values()), f"archives opened more than once by one verify: {dict(opens)}"
    assert all(c.status == "pass" for r in rep.results for d in r.devices for c in d.checks if c.name == "kpack")
    # the same command again: nothing is opened (the memo answers from the identity)
    opens.clear()
    verify_machine(Root(root))
    assert not opens, dict(opens)


def test_a_changed_or_swapped_archive_is_read_again(stack, opens):
    root, lay = stack
    a = root / lay.kpack_archive("blas", "gfx906").lstrip("/")
    first = kpack.read_kpack(a)
    assert first.problems == [] and first.arches == ["gfx906"]
    first.arches.append("mutated")                       # a caller's change stays its own
    assert kpack.read_kpack(a).arches == ["gfx906"]
    assert opens[a.name] == 1
    data = a.read_bytes()
    a.unlink()                                           # a hard link into the cache: never written through
    a.write_bytes(data[:-1] + bytes([data[-1] ^ 0xFF]))  # same size, one byte of the TOC changed
    opens.clear()
    kpack.read_kpack(a)
    assert opens[a.name] == 1, "a changed archive was answered from the memo"
    a.unlink()
    a.symlink_to(root / lay.kpack_archive("blas", "gfx1100").lstrip("/"))  # a link at the name
    again = kpack.read_kpack(a)
    assert again.problems and again.arches == [], "a link at the name must still be refused"
