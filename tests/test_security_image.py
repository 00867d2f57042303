"""A ``--root`` image whose ``var/lib`` or ``var/cache`` belongs to an ordinary user (issue 35,
finding 3): the user's link named ``rocmrevive`` there must not send root's lock, journals and
backups into the image's rocBLAS folder, nor its cache into the image's ``/etc``. Root's state
and cache folders are walked from the image's root component by component, owners and modes
checked before a link is followed (fs.check_under); refused with one line, nothing written.

    att = attacker(); root, args = demo(place); own_var(root, "lib", att, "opt/rocm-6.4.3/lib/rocblas/library")
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.fs import check_under
from rocmrevive.txn.fsutil import tree_hash
from tests.security_support import attacker, one_line_error, run_cli
from tests.test_security_trees import demo, install, place  # noqa: F401  (place: the shared fixture)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a user's folder")




def own_var(root: Path, sub: str, who: tuple[int, int], target: str) -> Path:
    """``var/<sub>`` the user's, holding the user's link ``rocmrevive`` -> ``/<target>``."""
    d = root / "var" / sub
    d.mkdir(parents=True, exist_ok=True)
    if (d / "rocmrevive").is_symlink():
        (d / "rocmrevive").unlink()
    os.chown(d, *who)
    os.symlink("/" + target, d / "rocmrevive")
    os.lchown(d / "rocmrevive", *who)
    return d


def test_check_under_refuses_a_users_folder_and_link_and_passes_roots(place):
    att = attacker()
    img = place / "img"
    (img / "var/lib").mkdir(parents=True)
    check_under(img, "/var/lib/rocmrevive", what="state folder")          # missing below root's: fine
    (img / "etc").mkdir()
    os.symlink("/etc", img / "var/lib/rocmrevive")                         # root's own link: followed
    check_under(img, "/var/lib/rocmrevive", what="state folder")
    own_var(img, "lib", att, "etc")
    with pytest.raises(RevError) as e:
        check_under(img, "/var/lib/rocmrevive", what="state folder")
    assert e.value.code == "PERMISSION" and "/var/lib" in e.value.message and "\n" not in e.value.message
    os.chown(img / "var/lib", 0, 0)                                       # root's folder, the user's link
    with pytest.raises(RevError) as e:
        check_under(img, "/var/lib/rocmrevive", what="state folder")
    assert "refusing to follow the symbolic link /var/lib/rocmrevive" in e.value.message
    os.chmod(img / "var", 0o777)                                          # a folder everyone may write
    with pytest.raises(RevError):
        check_under(img, "/var/lib/rocmrevive", what="state folder")


@pytest.mark.parametrize("sub,target", [("lib", "opt/rocm-6.4.3/lib/rocblas/library"), ("cache", "etc")])
def test_an_image_with_a_users_var_is_refused_and_untouched(place, sub, target):
    att = attacker()
    root, args = demo(place)
    (root / "etc").mkdir(exist_ok=True)
    own_var(root, sub, att, target)
    before = {d: tree_hash(root / d) for d in ("opt", "etc")}
    rc, doc, err = run_cli(["--root", str(root), "install", *args])    # the default cache: under the image
    msg = one_line_error(rc, doc, err, "PERMISSION")
    assert f"/var/{sub}" in msg, msg
    for cmd in (["status"], ["rollback"], ["recover"]) if sub == "lib" else ():
        rc, doc, err = run_cli(["--root", str(root), *cmd])
        one_line_error(rc, doc, err, "PERMISSION")
    assert {d: tree_hash(root / d) for d in ("opt", "etc")} == before
    assert not (root / target / "lock").exists() and not (root / target / "tx").exists()


def test_an_image_with_roots_var_still_installs(place):
    root, args = demo(place)
    rc, doc, err = install(root, place, args)
    assert rc == 0, err[-2000:]
