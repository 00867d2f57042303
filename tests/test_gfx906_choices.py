"""Issue 31: for a stock TheRock tree (7.13, 7.14, 10.0, 10.1) without gfx906 device code, no command
rocmrevive prints may name a package, version, tarball, tag or address that does not exist for that
release. Every line recipe, doctor, verify, audit, explain and install print for such a tree (human and
JSON) is read by ``unresolvable`` against the checked table ``rocmrevive/data/therock-gfx906.toml``
(each entry with its source); the lines the old code printed (AMD's "device package of the same
release") are shown to fail the same reader. The trees are tests/fixtures/therock.py's (Debian's real
rocBLAS 5.2 files and code objects in TheRock's .kpack layout), relabelled per release."""
from __future__ import annotations

import json
import re

import pytest

from rocmrevive.trees import gfx906_choices as G
from tests.fixtures import therock as F
from tests.test_install import rr

pytestmark = [pytest.mark.debian]
RELEASES = ["7.13.0", "7.14.0", "10.0.0", "10.1.0"]
EXPLAIN = ("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary.dat: No such file or directory "
           "for GPU arch : gfx906")

_URL = re.compile(r"https?://[^\s\"'`)\]\\]+")
_PKG = re.compile(r"(?<![\w/.-])(amdrocm[\w.+-]*|rocm-sdk-[\w.-]+|amd-torch-device-[\w.-]+)(?:(==?)([\w.+~-]+))?")
_REQ = re.compile(r"\brocm\[[^\]]*\](?:==?[\w.+-]+)?")
_TARBALL = re.compile(r"therock-dist-[^\s\"'`]*?\.tar\.gz")
_BRANCH = re.compile(r"--branch\s+(\S+)")


def allowed(line: str | None) -> dict[str, set[str]]:
    """What exists for release line ``line`` according to the table."""
    t = G.table()
    amd, b = t["amd"], t["build"]
    urls = {amd["wheel_index"], amd["tarball_index"], b["repository"]}
    pkgs = {amd["nightly_device_package"], *t["placeholders"]["names"]}
    versions: set[str] = set()
    for s in t["stack"]:
        if line in s["releases"]:
            urls |= {s["repository"], s["repository"] + ".git"}
            pkgs |= set(s.get("packages", []))
            versions |= {s["version"]} if "version" in s else set()
    tags = {t["tags"][line]} if line in t["tags"] else set()
    return {"urls": urls, "pkgs": pkgs, "versions": versions, "tags": tags,
            "reqs": {amd["wheel_requirement"]}, "tarballs": {amd["tarball_name"]}}


def unresolvable(text: str, rocm_version: str) -> list[str]:
    """Each name in ``text`` that does not exist for ``rocm_version``'s release (empty: all resolve)."""
    ok = allowed(G.release_line(rocm_version))
    if G.nightly(rocm_version):         # a nightly's own device wheel exists at its own version
        ok["versions"].add(rocm_version)
    bad = [f"address {u}" for u in _URL.findall(text) if u.rstrip(".,;:") not in ok["urls"]]
    for name, op, ver in _PKG.findall(text):
        name = name.rstrip(".,;:")
        if name not in ok["pkgs"]:
            bad.append(f"package {name}")
        elif op and ver not in ok["versions"]:
            bad.append(f"version {name}{op}{ver}")
    bad += [f"requirement {r}" for r in _REQ.findall(text) if r not in ok["reqs"]]
    bad += [f"tarball {n}" for n in _TARBALL.findall(text) if n not in ok["tarballs"]]
    bad += [f"tag {tag}" for tag in _BRANCH.findall(text) if tag not in ok["tags"]]
    return bad


def test_the_reader_flags_what_the_old_code_printed():
    """The commands rocmrevive printed before issue 31: each names something that does not exist."""
    old = [
        'pip install --index-url https://rocm.nightlies.amd.com/whl-multi-arch/ "rocm[libraries,device-gfx906]==10.1.0"',
        "curl -fLO https://rocm.nightlies.amd.com/tarball-multi-arch/therock-dist-linux-gfx906-10.1.0.tar.gz && "
        "sudo mkdir -p /opt/rocm-10.1.0-gfx906 && sudo tar -xf therock-dist-linux-gfx906-10.1.0.tar.gz -C /opt/x",
        "sudo apt-get install amdrocm10.1-gfx906",
        "git clone --branch therock-10.1 https://github.com/ROCm/TheRock.git TheRock",
        "sudo apt-get install amdrocm7.14-gfx906=7.14.0-gfx906+20260802001858",     # a 7.14 stack on 10.1
    ]
    for line in old:
        assert unresolvable(line, "10.1.0"), line
    assert unresolvable(old[0], "10.1.0") == ["requirement rocm[libraries,device-gfx906]==10.1.0"]
    assert unresolvable(old[4], "7.14.0") == []        # the same line is right for a 7.14 tree


def test_every_choice_resolves_for_every_release():
    for v in RELEASES:
        for layout in ("amd", "python-rocm-sdk"):
            cs = G.choices(v, tree="/opt/x/lib/rocblas/library", layout=layout)
            text = G.script(v, "/opt/x/lib/rocblas/library", ["gfx906"], cs)
            assert unresolvable(text, v) == [], (v, layout)
            kinds = [c.kind for c in cs]
            assert kinds[-2:] == ["nightly-build", "local-build"]
            assert ("whole-stack" in kinds) == (G.release_line(v) in ("7.14", "10.0")), (v, kinds)
            assert all(c.check.startswith("rocmrevive verify") for c in cs)
    assert "sudo apt-get install amdrocm7.14-gfx906=7.14.0-gfx906+20260802001858" in G.script(
        "7.14.0", "/t", ["gfx906"], G.choices("7.14.0", tree="/t"))
    ten_one = G.script("10.1.0", "/t", ["gfx906"], G.choices("10.1.0", tree="/t"))
    assert "--branch" not in ten_one and "not in rocmrevive's table" in ten_one   # no tag verified for 10.1


@pytest.fixture(scope="module", params=RELEASES)
def release_machine(request, tmp_path_factory, debian_pkgs):
    v = request.param
    return v, F.build_therock_machine(tmp_path_factory.mktemp(f"therock-{v}") / "m", debian_pkgs, rocm=v)


def test_everything_printed_for_the_tree_resolves(release_machine, tmp_path):
    v, m = release_machine
    tree = f"/opt/rocm-{v}"
    printed: list[str] = []
    runs = [("recipe",), ("doctor",), ("verify", "--tree", tree), ("audit", "--tree", tree, "--no-programs"),
            ("explain", EXPLAIN), ("install", "--check", "--yes", "--cache", str(tmp_path / "c"))]
    for args in runs:
        for fmt in ((), ("--json",)):
            r = rr(m, *fmt, *args)
            assert r.returncode in (0, 3, 6, 11, 20), (args, r.returncode, r.stderr[-1500:])
            printed.append(r.stdout + r.stderr)
            if fmt:
                json.loads(r.stdout)
    text = "\n".join(printed)
    assert "AMD publishes no gfx906 device package for ROCm " + G.release_line(v) in text
    assert f"rocmrevive recipe --tree {tree}" in text or f"--tree {tree}/lib/rocblas/library" in text
    assert unresolvable(text, v) == []


@pytest.fixture(scope="module", params=["stock-10.1", "whole-stack-7.14", "isolated-10.0"])
def layout_machine(request, tmp_path_factory, debian_pkgs, codeobjects):
    """tests/fixtures/therock_layouts.py's machines: AMD's stock 10.1 packages (no gfx906), the
    7.14 whole-stack gfx906 install, RomuloSK's isolated 10.0 prefix."""
    from tests.fixtures import therock_layouts as L

    name = request.param
    return L.LAYOUTS[name], L.BUILDERS[name](tmp_path_factory.mktemp(name) / "m", debian_pkgs, codeobjects)


def test_everything_printed_for_the_layouts_resolves(layout_machine, tmp_path):
    """Stock 10.1: the choices, every name resolving for 10.1 (no stack, no tag exists for it);
    the whole stacks serve gfx906: no choices printed, and nothing unresolvable either."""
    lay, m = layout_machine
    printed: list[str] = []
    runs = [("recipe", "--tree", lay.tensile), ("doctor",), ("verify", "--tree", lay.prefix),
            ("audit", "--tree", lay.prefix, "--no-programs"), ("explain", EXPLAIN),
            ("install", "--check", "--yes", "--cache", str(tmp_path / "c"))]
    for args in runs:
        for fmt in ((), ("--json",)):
            r = rr(m, *fmt, *args)
            assert r.returncode in (0, 3, 6, 11, 20), (args, r.returncode, r.stderr[-1500:])
            printed.append(r.stdout + r.stderr)
    text = "\n".join(printed)
    assert unresolvable(text, lay.rocm) == [], (lay.name, unresolvable(text, lay.rocm))
    no_package = "AMD publishes no gfx906 device package for ROCm " + G.release_line(lay.rocm)
    assert (no_package in text) == (lay.name == "stock-10.1"), lay.name
    if lay.name == "stock-10.1":
        doc = json.loads(rr(m, "--json", "recipe", "--tree", lay.tensile).stdout)
        assert [c["kind"] for c in doc["choices"]] == ["nightly-build", "local-build"]
        assert "--branch" not in doc["script"]            # no TheRock tag of 10.1 is verified
    else:   # a whole gfx906 stack: nothing to choose, nothing to install
        r = rr(m, "--json", "recipe", "--tree", lay.tensile)
        assert r.returncode == 3 and "already carries gfx906 device code" in json.loads(r.stdout)["error"]["message"]
        r = rr(m, "--json", "install", "--check", "--yes", "--cache", str(tmp_path / "c2"))
        doc = json.loads(r.stdout)
        assert r.returncode == 0 and {c["status"] for c in doc["copies"]} == {"satisfied"}, (r.returncode, doc)
        # the check the choice prints for this stack is the one that passes on it (the same verify)
        (stack,) = [c for c in G.choices(lay.rocm, tree=lay.tensile) if c.kind == "whole-stack"]
        args = stack.check.split()[1:]
        assert args[:2] == ["verify", "--tree"]
        r = rr(m, *args)
        assert r.returncode == 0, (stack.check, r.stdout[-1500:], r.stderr[-500:])


def test_recipe_names_the_build_the_tree_says_it_is(tmp_path, debian_pkgs):
    """TheRock writes share/therock/therock_manifest.json (commit, CI run, package version) into every
    tree; the nightly choice names that run as the only same build. A manifest planted as a link is
    refused, never read."""
    m = F.build_therock_machine(tmp_path / "m", debian_pkgs, rocm="10.1.0")
    man = m / "opt/rocm-10.1.0/share/therock/therock_manifest.json"
    man.parent.mkdir(parents=True)
    man.write_text(json.dumps({"the_rock_commit": "0123abcd" * 5, "github_run_id": "28484694006",
                               "rocm_package_version": "10.1.0a20260930", "submodules": []}))
    doc = json.loads(rr(m, "--json", "recipe").stdout)
    assert doc["build"] == {"manifest": "/opt/rocm-10.1.0/share/therock/therock_manifest.json",
                            "the_rock_commit": "0123abcd" * 5, "github_run_id": "28484694006",
                            "rocm_package_version": "10.1.0a20260930"}
    (nightly,) = [c for c in doc["choices"] if c["kind"] == "nightly-build"]
    assert any("run 28484694006, package version 10.1.0a20260930" in e for e in nightly["entails"])
    assert unresolvable(doc["script"], "10.1.0") == []
    man.unlink()
    man.symlink_to("/etc/passwd")
    doc = json.loads(rr(m, "--json", "recipe").stdout)
    assert list(doc["build"]) == ["problem"] and "link" in doc["build"]["problem"]
    assert not any("run " in e for c in doc["choices"] for e in c["entails"])


def test_a_nightly_venv_gets_its_own_builds_device_wheel(tmp_path, debian_pkgs):
    """TheRock nightly wheels in a venv (rocm-sdk-libraries 7.15.0a20260630, a .kpack for gfx1100 only):
    the same build's gfx906 device wheel exists on the nightly index at that very version, and is the
    first choice; nothing printed names anything else."""
    from tests.conftest import TRIPLET
    from tests.fixtures.rocm71 import machine_with_tree

    ver = "7.15.0a20260630"
    root, _tree = machine_with_tree(tmp_path / "m", "7.13.0", (5, 2, 0))
    venv = "/home/alice/rocm-venv"
    site = f"{venv}/lib/python3.12/site-packages"
    pkg = root / site.lstrip("/") / "_rocm_sdk_libraries_custom"
    lib = pkg / "lib/rocblas/library"
    lib.mkdir(parents=True)
    (root / venv.lstrip("/") / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.12.3\n")
    (root / site.lstrip("/") / f"rocm_sdk_libraries-{ver}.dist-info").mkdir()
    src = debian_pkgs[F.PKG52] / TRIPLET / "rocblas/5/library"
    for e in src.iterdir():
        if "gfx1100" in e.name or "gfx" not in e.name:
            (lib / e.name).write_bytes(e.read_bytes())
    F.write_kpack(pkg / ".kpack/blas_lib_gfx1100.kpack", group="blas", family="gfx1100",
                  kernels={"lib/librocblas.so.5": {"gfx1100": (src / "Kernels.so-000-gfx1100.hsaco").read_bytes()}})
    tree = f"{site}/_rocm_sdk_libraries_custom/lib/rocblas/library"
    doc = json.loads(rr(root, "--json", "recipe", "--tree", tree).stdout)
    assert doc["rocm_version"] == ver and [c["kind"] for c in doc["choices"]] == ["same-build-payload", "local-build"]
    assert doc["choices"][0]["commands"] == [
        f'{venv}/bin/pip install --index-url https://rocm.nightlies.amd.com/whl-multi-arch/ '
        f'"rocm-sdk-device-gfx906=={ver}"']
    printed = [rr(root, *fmt, *args) for args in (("recipe", "--tree", tree), ("doctor", "--python", venv),
                                                   ("verify", "--tree", tree)) for fmt in ((), ("--json",))]
    assert [r.returncode for r in printed] == [0, 0, 11, 11, 6, 6], [(r.returncode, r.stderr[-300:]) for r in printed]
    text = "\n".join(r.stdout + r.stderr for r in printed)
    assert f"rocm-sdk-device-gfx906=={ver} on its nightly index" in text
    assert unresolvable(text, ver) == []
    assert unresolvable(text.replace(ver, "7.15.0"), "7.15.0")      # the same pin for a stable 7.15: refused
