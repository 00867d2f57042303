"""trees.select, the one ``--tree`` resolver: each tree converted once with its links resolved
inside the machine, the copies and library folders it names, and one set of error lines."""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from machines.build import build
from machines.catalog import MACHINES

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.trees.installs import find_installs
from rocmrevive.trees.select import given_trees, library_folders, nothing_found, rocblas_copies
from rocmrevive.trees.trust import TreeTrust

REPO = Path(__file__).resolve().parent.parent


def _machine(tmp_path: Path) -> Root:
    """/opt/rocm-6.4.3 with its rocBLAS behind a link inside the tree (lib -> lib.real), and /opt/rocm
    an absolute link to it: absolute as AMD's packages make it, so it only leads there under the
    root."""
    m = tmp_path / "m"
    inst = m / "opt/rocm-6.4.3"
    (inst / ".info").mkdir(parents=True)
    (inst / ".info/version").write_text("6.4.3-128\n")
    lib = inst / "lib.real"
    (lib / "rocblas/library").mkdir(parents=True)
    (lib / "rocblas/library/TensileLibrary_lazy_gfx908.dat").write_text("x")
    (lib / "librocblas.so.4.4").write_text("x")
    os.symlink("librocblas.so.4.4", lib / "librocblas.so.4")
    os.symlink("lib.real", inst / "lib")
    os.symlink("/opt/rocm-6.4.3", m / "opt/rocm")
    return Root(m)


def test_a_tree_is_resolved_inside_the_machine_once(tmp_path):
    root = _machine(tmp_path)
    (t,) = given_trees(root, ["/opt/rocm"])
    assert (t.typed, t.path, t.real) == ("/opt/rocm", "/opt/rocm-6.4.3", root.base / "opt/rocm-6.4.3")
    (c,) = rocblas_copies(root, [t], installs=find_installs(root)[0])
    # named as its install knows it, the link inside the tree resolved: the same folder once
    assert c.path == "/opt/rocm-6.4.3/lib/rocblas/library" and c.found.layout == "amd"
    assert c.real == root.base / "opt/rocm-6.4.3/lib.real/rocblas/library"
    assert c.host == root.base / "opt/rocm-6.4.3/lib.real/librocblas.so.4.4"
    assert c.rocm_version == "6.4.3" and c.tree == t
    assert isinstance(c.trust, TreeTrust) and c.trust.path == str(c.real)
    assert rocblas_copies(root, [t, *given_trees(root, ["/opt/rocm-6.4.3/lib/rocblas/library"])],
                          installs=find_installs(root)[0]) == [c]
    # without a --tree: every copy found, the same selection
    assert [x.real for x in rocblas_copies(root, [], installs=find_installs(root)[0])] == [c.real]


def test_library_folders_of_a_tree_and_of_the_machine(tmp_path):
    root = _machine(tmp_path)
    installs = find_installs(root)[0]
    (f,) = library_folders(root, given_trees(root, ["/opt/rocm"]), installs)
    assert (f.path, f.rocm_version) == ("/opt/rocm-6.4.3/lib.real", "6.4.3")
    assert library_folders(root, [], installs) == [f]
    (g,) = library_folders(root, given_trees(root, ["/opt/rocm-6.4.3/lib"]), installs)
    assert g.real == f.real and g.rocm_version == "6.4.3"
    # the tree's lib an absolute link, as a package may make it: followed inside the machine
    lib = root.base / "opt/rocm-6.4.3/lib"
    lib.unlink()
    os.symlink("/opt/rocm-6.4.3/lib.real", lib)
    assert library_folders(root, given_trees(root, ["/opt/rocm"]), installs) == [f]


@pytest.mark.parametrize("typed, code, line", [
    ("/opt/nowhere", "USAGE", "--tree /opt/nowhere does not exist (no such folder) under "),
    ("/opt/rocm/.info/version", "USAGE", "--tree /opt/rocm/.info/version is not a folder under "),
    ("/opt/loop", "USAGE", "--tree /opt/loop: too many symbolic links"),
])
def test_one_line_for_a_tree_that_is_not_one(tmp_path, typed, code, line):
    root = _machine(tmp_path)
    os.symlink("/opt/loop2", root.base / "opt/loop")
    os.symlink("/opt/loop", root.base / "opt/loop2")
    with pytest.raises(RevError) as exc:
        given_trees(root, [typed])
    assert exc.value.code == code and exc.value.message.startswith(line), exc.value.message


def test_a_file_is_a_tree_only_where_the_command_takes_one(tmp_path):
    root = _machine(tmp_path)
    (t,) = given_trees(root, ["/opt/rocm/lib/librocblas.so.4"], files=True)
    assert t.path == "/opt/rocm-6.4.3/lib.real/librocblas.so.4.4"
    with pytest.raises(RevError, match="does not exist \\(no such file or folder\\)"):
        given_trees(root, ["/opt/none"], files=True)


def test_a_tree_without_rocblas_and_a_machine_without_any(tmp_path):
    root = _machine(tmp_path)
    (root.base / "opt/empty").mkdir()
    with pytest.raises(RevError) as exc:
        rocblas_copies(root, given_trees(root, ["/opt/empty"]))
    assert exc.value.code == "NOTHING_SUPPORTED"
    assert exc.value.message.startswith("--tree /opt/empty: no rocBLAS Tensile library folder in it")
    assert rocblas_copies(Root(root.base / "opt/empty"), []) == []
    assert nothing_found(root).code == "NOTHING_SUPPORTED"


# ---- one selection for every command: detect --tree lists what verify --tree checks -----------

def _cli(*args):
    from click.testing import CliRunner

    from rocmrevive.cli.main import cli

    res = CliRunner().invoke(cli, ["--json", *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.stdout)


def _fixture_machines(tmp_path) -> list[Path]:
    """Every catalog machine, and the committed demo machine (``make demo``'s, before its rocBLAS)."""
    roots = [build(name, tmp_path / name) for name in MACHINES]
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "demo/machines/dual-mi50", demo, symlinks=True)
    return [*roots, demo]


def test_detect_and_verify_list_the_same_copies_of_a_tree_on_every_fixture_machine(tmp_path):
    """``detect --tree T`` lists every copy ``detect`` lists plus exactly the copies ``verify
    --tree T`` checks: a ROCm install's folder is never a copy of its own (issue 41: detect listed
    /opt/rocm-6.4.3 itself beside its lib/rocblas/library)."""
    compared = 0
    for root in _fixture_machines(tmp_path):
        code, plain = _cli("--root", str(root), "detect")
        every = {c["path"] for c in plain["rocblas_copies"]}
        installs = [i["path"] for i in plain["rocm_installs"]]
        for tree in dict.fromkeys([*installs, *sorted(every)]):
            dcode, detect = _cli("--root", str(root), "detect", "--tree", tree)
            vcode, verify = _cli("--root", str(root), "verify", "--tree", tree, "--target", "gfx906")
            if vcode == 3:   # no rocBLAS folder in this tree: neither lists anything
                assert dcode == 3 and verify["error"]["code"] == detect["error"]["code"] == "NOTHING_SUPPORTED", tree
                continue
            listed = {c["path"] for c in detect["rocblas_copies"]}
            checked = {c["library"] for c in verify["copies"]}
            assert checked and listed == every | checked, (root.name, tree, listed, checked)
            assert all(c["rocblas_version"] or c["layout"] != "user" for c in detect["rocblas_copies"]), tree
            compared += 1
    assert compared >= len(MACHINES)   # most machines have an install or a copy to name
