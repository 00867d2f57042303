"""Target ids: parsing, printing and the runtime's load rule (AMDGPUUsage "Target ID")."""
import pytest

from rocmrevive.codeobj.elf import MACH_NAMES, ElfHeader
from rocmrevive.codeobj.targetid import ANY, OFF, ON, TargetId, processor_from_gfx_target_version

MI50 = TargetId.parse("gfx906:sramecc+:xnack-")
RADEON_VII = TargetId.parse("gfx906:sramecc-:xnack-")


@pytest.mark.parametrize("text,proc,sramecc,xnack,printed", [
    ("gfx906", "gfx906", ANY, ANY, "gfx906"),
    ("gfx906:sramecc+:xnack-", "gfx906", ON, OFF, "gfx906:sramecc+:xnack-"),
    ("gfx906:xnack-:sramecc+", "gfx906", ON, OFF, "gfx906:sramecc+:xnack-"),
    ("hipv4-amdgcn-amd-amdhsa--gfx906:xnack+", "gfx906", ANY, ON, "gfx906:xnack+"),
    ("amdgcn-amd-amdhsa--gfx90a:xnack-", "gfx90a", ANY, OFF, "gfx90a:xnack-"),
    ("amdgcn-amd-amdhsa-unknown-gfx1151", "gfx1151", None, None, "gfx1151"),
    ("hip-amdgcn-amd-amdhsa-gfx906", "gfx906", ANY, ANY, "gfx906"),
    ("amdgcn-amd-amdhsa--gfx9-generic:sramecc+:xnack-", "gfx9-generic", ON, OFF, "gfx9-generic:sramecc+:xnack-"),
    ("gfx1030", "gfx1030", None, None, "gfx1030"),
])
def test_parse_and_print(text, proc, sramecc, xnack, printed):
    t = TargetId.parse(text)
    assert (t.processor, t.sramecc, t.xnack) == (proc, sramecc, xnack)
    assert str(t) == printed
    assert TargetId.parse(str(t)) == t


@pytest.mark.parametrize("bad", ["", "gfx", "sm_80", "gfx906:xnack", "gfx906:foo+", "gfx1030:xnack+",
                                 "gfx906:xnack+:xnack-", "host-x86_64-unknown-linux-gnu-"])
def test_parse_rejects(bad):
    with pytest.raises(ValueError):
        TargetId.parse(bad)


@pytest.mark.parametrize("code,device,ok", [
    ("gfx906", MI50, True), ("gfx906", RADEON_VII, True),
    ("gfx906:sramecc+", MI50, True), ("gfx906:sramecc+", RADEON_VII, False),
    ("gfx906:sramecc-:xnack-", RADEON_VII, True), ("gfx906:xnack+", MI50, False),
    ("gfx9-generic", MI50, True), ("gfx9-generic:xnack-", MI50, True),
    ("gfx908", MI50, False), ("gfx90a", MI50, False), ("gfx10-3-generic", MI50, False),
    ("gfx10-3-generic", TargetId.parse("gfx1030"), True),
])
def test_can_load_on(code, device, ok):
    assert TargetId.parse(code).can_load_on(device) is ok


@pytest.mark.parametrize("gtv,name", [(90006, "gfx906"), (90008, "gfx908"), (90010, "gfx90a"),
                                      (90400, "gfx940"), (90402, "gfx942"), (100100, "gfx1010"),
                                      (100300, "gfx1030"), (110000, "gfx1100"), (120001, "gfx1201"),
                                      (0, None), (90099, None)])
def test_kfd_gfx_target_version(gtv, name):
    assert processor_from_gfx_target_version(gtv) == name


# e_flags measured with clang-15 (COv4) and clang 22 (COv6), docs/formats.md §1.2
@pytest.mark.parametrize("flags,abiv,printed", [
    (0x52F, 2, "gfx906"), (0x62F, 2, "gfx906:xnack-"), (0x72F, 2, "gfx906:xnack+"),
    (0xD2F, 2, "gfx906:sramecc+"), (0x92F, 2, "gfx906:sramecc-"), (0xE2F, 2, "gfx906:sramecc+:xnack-"),
    (0xB2F, 2, "gfx906:sramecc-:xnack+"), (0x12C, 2, "gfx900"), (0x22C, 2, "gfx900:xnack-"),
    (0x53F, 4, "gfx90a"), (0x73F, 4, "gfx90a:xnack+"), (0x36, 4, "gfx1030"),
    (0x01000151, 4, "gfx9-generic"), (0x22F, 1, "gfx906:sramecc+:xnack-"),
    (0x32F, 1, "gfx906:sramecc+:xnack+"),
])
def test_target_from_e_flags(flags, abiv, printed):
    hdr = ElfHeader(2, 1, 64, abiv, 3, 224, flags, 0, 64, 0, 0)
    assert str(hdr.target()) == printed
    assert hdr.co_version == abiv + 2


def test_every_mach_name_parses():
    for name in MACH_NAMES.values():
        assert TargetId.parse(name).processor == name


@pytest.mark.parametrize("code,device,verdict", [
    ("gfx906", MI50, "yes"), ("gfx906:sramecc+", MI50, "yes"), ("gfx906:sramecc+", RADEON_VII, "no"),
    ("gfx906:xnack-", TargetId.parse("gfx906"), "if-mode"), ("gfx9-generic", MI50, "yes"),
    ("gfx908", MI50, "no"), ("gfx906:sramecc+:xnack-", TargetId.parse("gfx906:sramecc+"), "if-mode"),
])
def test_load_verdict(code, device, verdict):
    t = TargetId.parse(code)
    assert t.load_verdict(device) == verdict
    assert t.can_load_on(device) is (verdict == "yes")


def test_coverage_per_device():
    """One answer to "does this file's code load on these devices", with the code that does."""
    from rocmrevive.codeobj.targetid import Coverage

    code = [TargetId.parse(t) for t in ("gfx906:xnack+", "gfx906:sramecc-:xnack-", "gfx1030")]
    mode_unknown = TargetId.parse("gfx906")
    cov = TargetId.coverage(code, [MI50, RADEON_VII, mode_unknown, TargetId.parse("gfx90a")])
    assert [c.device for c in cov] == [MI50, RADEON_VII, mode_unknown, TargetId.parse("gfx90a")]
    assert [c.verdict for c in cov] == ["other-mode", "yes", "if-mode", "missing"]
    assert [c.ok for c in cov] == [False, True, False, False]
    assert cov[1].loads == (code[1],) and cov[0].covering == tuple(code[:2])
    assert cov[2].conditional == tuple(code[:2]) and not cov[2].loads
    assert isinstance(cov[0], Coverage)


def test_coverage_of_a_real_bundle(codeobjects):
    """FileReport.coverage keeps the entries (offsets, code object versions) that load."""
    from rocmrevive.codeobj.inspect import inspect_file

    rep = inspect_file(codeobjects["bundler_host_gfx906_gfx906sx_gfx1030"].path)
    mi50, radeon7, gfx1030 = rep.coverage([MI50, RADEON_VII, TargetId.parse("gfx1030")])
    assert sorted(str(e.target) for e in mi50.loads) == ["gfx906", "gfx906:sramecc+:xnack-"]
    assert [str(e.target) for e in radeon7.loads] == ["gfx906"] and len(radeon7.covering) == 2
    assert [str(e.target) for e in gfx1030.loads] == ["gfx1030"]
    assert all(e in rep.entries and e.co_version == 4 for e in mi50.loads)
