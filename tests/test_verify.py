"""``rocmrevive verify`` from the outside: Debian's real rocBLAS copies, pristine and broken,
an AMD-layout tree whose ROCm is too old for code object v6, a tree patched through a real
journaled transaction and then tampered with, and a machine whose GPUs come from a KFD
topology built from a real capture."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.codeobj.targetid import TargetId
from tests.fixtures.fetched import gfx906_files
from tests.test_tensile import HS_PLACEHOLDER, SS_FALLBACK, debian_copy, kernels_of, link_file, rewrite

GFX906 = "gfx906:sramecc+:xnack-"

# /sys/class/kfd/kfd/topology/nodes/0/properties of an MI100 (gfx908), verbatim from
# captures/negative_gfx908_mi100_kfd_properties_fixture.txt (the machine catalog keeps it).
from tests.machines.catalog import GFX908_PROPERTIES as MI100_PROPERTIES  # noqa: E402


def run(*args, root: Path | None = None) -> tuple[int, dict]:
    pre = ["--json"] + (["--root", str(root)] if root else [])
    res = CliRunner().invoke(cli, pre + list(args), catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def run_text(*args, root: Path | None = None) -> tuple[int, str]:
    pre = ["--no-progress"] + (["--root", str(root)] if root else [])
    res = CliRunner().invoke(cli, pre + list(args), catch_exceptions=False)
    return res.exit_code, res.output


def checks(doc: dict) -> dict[tuple[str, str], dict]:
    out = {}
    for c in doc["copies"]:
        out[("(copy)", "integrity")] = c["integrity"]
        for d in c["devices"]:
            for ch in d["checks"]:
                out[(d["target"], ch["name"])] = ch
    return out


def statuses(doc: dict) -> dict[tuple[str, str], str]:
    return {k: v["status"] for k, v in checks(doc).items()}


# ------------------------------------------------------------------------------------------
# pristine copies

@pytest.mark.debian
def test_pristine_441_passes_for_an_mi50(debian_pkgs):
    tree = debian_pkgs["librocblas4_6.4.4-4_amd64"] / "usr/lib/x86_64-linux-gnu"
    code, doc = run("verify", "--tree", str(tree), "--target", GFX906)
    assert code == 0 and doc["ok"] and doc["error"] is None
    assert statuses(doc) == {("(copy)", "integrity"): "skip", (GFX906, "targets"): "pass",
                             (GFX906, "tensile"): "pass", (GFX906, "host"): "pass"}
    (copy,) = doc["copies"]
    assert copy["library"].endswith("rocblas/4.4.1/library")
    assert copy["host_library"].endswith("librocblas.so.4.4")
    t = copy["devices"][0]["tensile"]
    assert (t["placeholders"], t["solutions"], t["kernels_found"]) == (88, 7761, 7761)
    assert (t["code_objects_referenced"], t["code_objects_on_disk"]) == (100, 100)
    # no ROCm version in a bare package folder: the host library's code objects say v6 loads
    assert copy["runtime_max_code_object_version"] == 6


@pytest.mark.debian
def test_pristine_52_passes_for_two_targets(debian_pkgs):
    tree = debian_pkgs["librocblas5_7.2.4-1~exp1_amd64"] / "usr/lib/x86_64-linux-gnu/rocblas/5/library"
    code, doc = run("verify", "--tree", str(tree), "--target", "gfx906", "--target", "gfx1030")
    assert code == 0, doc["error"]
    assert set(statuses(doc).values()) == {"pass", "skip"}
    assert doc["targets"] == ["gfx906", "gfx1030"]


@pytest.mark.debian
def test_pristine_247_built_without_lazy_loading_serves_gfx906(debian_pkgs):
    """Debian's librocblas0 5.5.1 (rocBLAS 2.47): one TensileLibrary.dat for every architecture,
    no lazy index. rocBLAS falls back to it; its gfx906 row holds 7,261 solutions, its TruePred
    row the generic rest, and every kernel is in TensileLibrary_gfx906.co or the helper object."""
    tree = debian_pkgs["librocblas0_5.5.1+dfsg-7_amd64"] / "usr/lib/x86_64-linux-gnu"
    code, doc = run("verify", "--tree", str(tree), "--target", GFX906)
    assert code == 0 and doc["ok"], doc["error"]
    (copy,) = doc["copies"]
    (dev,) = copy["devices"]
    assert dev["verdict"] == "serves"
    t = dev["tensile"]
    assert t["lazy"] is False and t["lazy_index"] == "TensileLibrary.dat"
    assert t["solutions"] == t["kernels_found"] == 7963
    code, text = run_text("verify", "--tree", str(tree), "--target", GFX906)
    assert code == 0 and f"{GFX906}: serves" in text


@pytest.mark.debian
def test_detect_counts_the_targets_of_a_library_built_without_lazy_loading(rocblas247):
    from rocmrevive.trees.rocblas import RocblasCopy, scan_library

    copy = RocblasCopy(path=str(rocblas247), layout="debian")
    scan_library(str(rocblas247), copy)
    assert copy.targets == ["gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx1030", "gfx1100",
                            "gfx1101", "gfx1102"]
    assert copy.covers(TargetId.parse(GFX906), "gfx906")


# ------------------------------------------------------------------------------------------
# broken copies: each reported precisely, file and kernel

@pytest.fixture
def copy441(tmp_path, rocblas441) -> Path:
    return debian_copy(tmp_path, rocblas441)


def _break(kind: str, lib: Path, rocblas441: Path, rocblas52: Path) -> tuple[str, str, str | None]:
    """Break ``lib`` as users do; return (check, file, a kernel that must be named or None)."""
    if kind == "delete-co":
        f = HS_PLACEHOLDER + ".co"
        (lib / f).unlink()
        return "tensile", f, next(s for s in _asm_kernels(rocblas441 / (HS_PLACEHOLDER + ".dat")))
    if kind == "gfx908-co":
        f = HS_PLACEHOLDER + ".co"
        rewrite(lib / f, (rocblas441 / f.replace("gfx906", "gfx908")).read_bytes())
        return "targets", f, next(s for s in _asm_kernels(rocblas441 / (HS_PLACEHOLDER + ".dat")))
    if kind == "truncate-hsaco":
        f = SS_FALLBACK + "_gfx906.hsaco"
        data = (lib / f).read_bytes()
        rewrite(lib / f, data[:4096])
        return "tensile", f, kernels_of(rocblas441 / (SS_FALLBACK + ".dat"))[0]
    if kind == "drop-lazy-index":
        f = "TensileLibrary_lazy_gfx906.dat"
        (lib / f).unlink()
        return "tensile", f, None
    if kind == "foreign-fallback-dat":
        dat = SS_FALLBACK + ".dat"
        rewrite(lib / dat, (rocblas52 / dat).read_bytes())
        return "tensile", SS_FALLBACK + "_gfx906.hsaco", kernels_of(rocblas52 / dat)[0]
    raise AssertionError(kind)


def _asm_kernels(dat: Path) -> list[str]:
    import msgpack

    d = msgpack.unpackb(dat.read_bytes(), raw=False, strict_map_key=False)
    return [s["name"] for s in d["solutions"] if not s["sizeMapping"]["sourceKernel"]]


BREAKS = ["delete-co", "gfx908-co", "truncate-hsaco", "drop-lazy-index", "foreign-fallback-dat"]


@pytest.mark.debian
@pytest.mark.parametrize("kind", BREAKS)
def test_breakage_is_reported_with_file_and_kernel(kind, copy441, rocblas441, rocblas52):
    check, file, kernel = _break(kind, copy441, rocblas441, rocblas52)
    tree = copy441.parent.parent.parent
    code, doc = run("verify", "--tree", str(tree), "--target", GFX906)
    assert code == 6 and doc["error"]["code"] == "VERIFY_FAILED" and not doc["ok"]
    st = statuses(doc)
    assert st[(GFX906, check)] == "fail"
    assert st[(GFX906, "host")] == "pass"  # librocblas.so itself is untouched
    offenders = checks(doc)[(GFX906, check)]["offenders"]
    hit = [o for o in offenders if o["file"] == file]
    assert hit, offenders[:3]
    if kernel is not None:
        assert kernel in hit[0]["kernels"]
    # the human output names the file (and the first kernel) too
    code_t, text = run_text("verify", "--tree", str(tree), "--target", GFX906)
    assert code_t == 6 and file in text
    if kernel is not None:
        assert "kernel Cijk_" in text


@pytest.mark.debian
def test_json_lists_every_offender_text_shows_a_few(copy441, rocblas441):
    # three code objects gone: the text shows all three files; JSON every kernel of each
    gone = [HS_PLACEHOLDER + ".co", HS_PLACEHOLDER + ".hsaco",
            "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.co",
            "TensileLibrary_Type_DD_Contraction_l_Ailk_Bjlk_Cijk_Dijk_gfx906.co"]
    for f in gone:
        (copy441 / f).unlink()
    tree = copy441.parent.parent.parent
    code, doc = run("verify", "--tree", str(tree), "--target", GFX906)
    offenders = checks(doc)[(GFX906, "tensile")]["offenders"]
    assert sorted(o["file"] for o in offenders) == sorted(gone)
    total = sum(len(o["kernels"]) for o in offenders)
    assert doc["copies"][0]["devices"][0]["tensile"]["kernels_found"] + total <= 7761
    _, text = run_text("verify", "--tree", str(tree), "--target", GFX906)
    assert "1 more (--json lists all)" in text


@pytest.mark.debian
def test_host_library_without_gfx906(copy441, codeobjects):
    """A librocblas.so built without gfx906 (compiled here for gfx908 and gfx1030)."""
    host = copy441.parent.parent.parent / "librocblas.so.4.4"
    rewrite(host, codeobjects["libhip_gfx908_gfx1030"].path.read_bytes())
    code, doc = run("verify", "--tree", str(copy441.parent.parent.parent), "--target", GFX906)
    assert code == 6
    st = statuses(doc)
    assert st[(GFX906, "host")] == "fail" and st[(GFX906, "tensile")] == "pass"
    (o,) = checks(doc)[(GFX906, "host")]["offenders"]
    assert o["file"].endswith("librocblas.so.4.4") and "gfx1030, gfx908" in o["problem"]
    # ... and the same library serves a gfx908 card
    code, doc = run("verify", "--tree", str(copy441.parent.parent.parent), "--target", "gfx908")
    assert code == 0


# ------------------------------------------------------------------------------------------
# code object versions against the tree's ROCm

def amd_tree(root: Path, version: str, rocblas441: Path, *, without: str | None = None) -> Path:
    """``<root>/opt/rocm-<version>``: AMD's layout, its .info/version, the 4.4.1 library linked
    in (files containing ``without`` left out) and librocblas.so.4.4 in lib/."""
    base = root / f"opt/rocm-{version}"
    lib = base / "lib/rocblas/library"
    lib.mkdir(parents=True)
    for f in rocblas441.iterdir():
        if without is None or without not in f.name:
            link_file(f, lib / f.name)
    link_file(rocblas441.parent.parent.parent / "librocblas.so.4.4", base / "lib/librocblas.so.4.4")
    (base / ".info").mkdir()
    (base / ".info/version").write_text(f"{version}-1\n")
    return base


@pytest.mark.debian
def test_cov6_code_objects_need_rocm_63(tmp_path, rocblas441):
    amd_tree(tmp_path, "6.2.0", rocblas441)
    code, doc = run("verify", "--tree", "/opt/rocm-6.2.0", "--target", GFX906, root=tmp_path)
    assert code == 6
    copy = doc["copies"][0]
    assert copy["library"] == "/opt/rocm-6.2.0/lib/rocblas/library"  # shown as a machine path
    assert copy["rocm_version"] == "6.2.0" and copy["runtime_max_code_object_version"] == 5
    st = statuses(doc)
    assert st[(GFX906, "targets")] == "fail" and st[(GFX906, "tensile")] == "pass"
    offenders = checks(doc)[(GFX906, "targets")]["offenders"]
    files = {o["file"] for o in offenders}
    # the .hsaco files are COv6 (clang 21), the Tensile .co files COv4 (FORMATS §5.1)
    assert files and all(f.endswith(".hsaco") for f in files)
    assert len(files) == 63  # 12 source-kernel + 50 fallback + Kernels.so
    assert "ROCm 6.3" in offenders[0]["problem"]


@pytest.mark.debian
def test_cov6_code_objects_load_on_rocm_643(tmp_path, rocblas441):
    amd_tree(tmp_path, "6.4.3", rocblas441)
    code, doc = run("verify", "--tree", "/opt/rocm-6.4.3", "--target", GFX906, root=tmp_path)
    assert code == 0, doc["error"]
    assert doc["copies"][0]["runtime_basis"] == "ROCm 6.4.3"


# ------------------------------------------------------------------------------------------
# integrity against the journal of a real transaction

@pytest.mark.debian
def test_patched_tree_then_tampered(tmp_path, rocblas441):
    from rocmrevive.rootfs import Root
    from rocmrevive.txn.apply import apply_plan
    from rocmrevive.txn.plan import FileChange, Plan

    # AMD's 6.4.3 tree as shipped: no gfx906 Tensile files
    amd_tree(tmp_path, "6.4.3", rocblas441, without="gfx906")
    code, doc = run("verify", "--tree", "/opt/rocm-6.4.3", "--target", GFX906, root=tmp_path)
    assert code == 6
    assert checks(doc)[(GFX906, "tensile")]["offenders"][0]["kind"] == "lazy-index-missing"

    # install the package's gfx906 files as one journaled transaction
    lib_m = "/opt/rocm-6.4.3/lib/rocblas/library"
    changes = []
    for f in sorted(rocblas441.glob("*gfx906*")):
        data = f.read_bytes()
        changes.append(FileChange(f"{lib_m}/{f.name}", staged=f, sha256=hashlib.sha256(data).hexdigest(),
                                  size=len(data), op="create", source="deb:librocblas4_6.4.4-4_amd64.deb"))
    assert len(changes) == len(gfx906_files(rocblas441)) > 100   # 140 in 6.4.4-4
    res = apply_plan(Root(tmp_path), Plan("/opt/rocm-6.4.3", changes))
    assert res.changed and res.txid

    code, doc = run("verify", "--tree", "/opt/rocm-6.4.3", "--target", GFX906, root=tmp_path)
    assert code == 0, doc["error"]
    integ = doc["copies"][0]["integrity"]
    assert integ["status"] == "pass" and f"{len(changes)} file(s) from transaction(s) {res.txid}" in integ["summary"]

    # someone overwrites one file and deletes another
    changed = tmp_path / lib_m.lstrip("/") / "Kernels.so-000-gfx906.hsaco"
    data = bytearray(changed.read_bytes())  # a copy the transaction made, not a link
    data[-100] ^= 0xFF
    changed.write_bytes(bytes(data))
    gone = tmp_path / lib_m.lstrip("/") / (HS_PLACEHOLDER + ".co")
    gone.unlink()
    code, doc = run("verify", "--tree", "/opt/rocm-6.4.3", "--target", GFX906, root=tmp_path)
    assert code == 6
    integ = doc["copies"][0]["integrity"]
    assert integ["status"] == "fail"
    assert {(o["kind"], o["file"]) for o in integ["offenders"]} == {
        ("file-changed", f"{lib_m}/Kernels.so-000-gfx906.hsaco"),
        ("file-missing", f"{lib_m}/{HS_PLACEHOLDER}.co")}
    assert statuses(doc)[(GFX906, "tensile")] == "fail"


# ------------------------------------------------------------------------------------------
# GPUs from the machine

def kfd_node(root: Path, node: int, *, gpu_id: int = 42700, name: str = "arcturus", **override) -> None:
    """A KFD topology node: the captured MI100 properties with ``override`` applied."""
    props = dict(line.split(" ", 1) for line in MI100_PROPERTIES.splitlines())
    props.update({k: str(v) for k, v in override.items()})
    d = root / f"sys/class/kfd/kfd/topology/nodes/{node}"
    d.mkdir(parents=True)
    (d / "properties").write_text("".join(f"{k} {v}\n" for k, v in props.items()))
    (d / "gpu_id").write_text(f"{gpu_id}\n")
    (d / "name").write_text(name + "\n")


@pytest.mark.debian
def test_detected_gpus_and_copies(tmp_path, rocblas441):
    """An MI50 and an MI100 (the MI100 node is a real capture; the MI50 is the same node with
    gfx906's target version and device id), rocBLAS installed Debian's way."""
    kfd_node(tmp_path, 1, gpu_id=1234, name="vega20", gfx_target_version=90006, device_id=0x66A1,
             location_id=0x300, unique_id=1)
    kfd_node(tmp_path, 2)
    debian_copy(tmp_path, rocblas441)
    code, doc = run("verify", root=tmp_path)
    assert code == 0, doc["error"]
    assert doc["target_source"] == "detected"
    assert doc["targets"] == ["gfx906:sramecc+:xnack-", "gfx908:sramecc+:xnack-"]
    assert [c["library"] for c in doc["copies"]] == ["/usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library"]


def test_no_gpu_and_no_target_is_nothing_supported(tmp_path):
    code, doc = run("verify", root=tmp_path)
    assert code == 3 and "--target" in doc["error"]["message"]


def test_bad_target_and_tree(tmp_path):
    code, doc = run("verify", "--target", "gfx906:bogus+", "--tree", str(tmp_path))
    assert code == 2 and "gfx906:bogus+" in doc["error"]["message"]
    code, doc = run("verify", "--target", "gfx906", "--tree", str(tmp_path))
    assert code == 3 and "no rocBLAS Tensile library" in doc["error"]["message"]
    code, doc = run("verify", "--target", "gfx906", "--tree", str(tmp_path / "absent"))
    assert code == 2
