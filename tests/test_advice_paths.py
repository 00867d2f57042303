"""Issue 44: `recipe --paths` answers "which path for this box" from what detect/audit know, ranked
for what the owner runs; every name, command, address and claim it prints resolves against the
sourced table rocmrevive/data/gfx906-paths.toml (TheRock whole stacks against therock-gfx906.toml,
read by test_gfx906_choices' own reader). Machines: the demo (dual MI50, ROCm 6.4.3), Debian 13 with
Debian's rocBLAS, a ROCm 10.2 TheRock tree whose rocBLAS version only its files tell, a venv with a
PyTorch whose libtorch_hip (compiled here by clang-15) has no gfx906 code, a llama.cpp-with-Vulkan
box, and (with the Debian fixtures) TheRock's 7.14 whole-stack install."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from rocmrevive.advice import paths as A
from rocmrevive.cli.recipe import USES
from rocmrevive.trees import gfx906_choices as G
from tests.conftest import REPO
from tests.machines.build import build
from tests.test_gfx906_choices import unresolvable
from tests.test_install import rr

PATHS_TOML = (REPO / "rocmrevive/data/gfx906-paths.toml").read_text()
THEROCK_TOML = (REPO / "rocmrevive/data/therock-gfx906.toml").read_text()
RELEASE_OF_STACK = {"mixa3607": "7.14.0", "romulosk": "10.0.0", "nightly": None}
_URL = re.compile(r"https?://[^\s\"'`)\]\\]+")
_ENV = re.compile(r"\b([A-Z][A-Z0-9_]{5,})=")
_APT = re.compile(r"apt-get install ((?:[a-z0-9][a-z0-9.+-]+(?:=[\w.+~-]+)? ?)+)")


def os_release(root: Path, id_: str, version: str, pretty: str) -> Path:
    (root / "etc").mkdir(parents=True, exist_ok=True)
    (root / "etc/os-release").write_text(f'PRETTY_NAME="{pretty}"\nID={id_}\nVERSION_ID="{version}"\n')
    return root


def paths(root: Path, *args, rc: int = 0) -> dict:
    r = rr(root, "--json", "recipe", "--paths", *args)
    assert r.returncode == rc, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return json.loads(r.stdout)


def human(root: Path, *args) -> str:
    r = rr(root, "recipe", "--paths", *args)
    assert r.returncode == 0, (r.returncode, r.stderr[-2000:])
    return r.stdout


def unresolved(doc: dict, text: str = "") -> list[str]:
    """Each printed command, check, claim, source, address, variable or apt package that is not in
    the tables (empty: everything resolves)."""
    t = A.table()
    by_id = {p["id"]: p for p in t["path"]}
    bad: list[str] = []
    for p in doc["paths"]:
        e = by_id.get(p["id"])
        if e is None:
            bad.append(f"path {p['id']}")
            continue
        allowed = set(e.get("commands", []))
        allowed.add(f"export {t['vulkan']['env_host_visible']}=1   # a card here has a BAR smaller than its VRAM")
        checks = {e["check"]}
        if p["id"] in RELEASE_OF_STACK:
            v = RELEASE_OF_STACK[p["id"]]
            tree = "/opt/therock-nightly-gfx906/lib/rocblas/library" if v is None else "/opt/rocm/lib/rocblas/library"
            kind = "nightly-build" if v is None else "whole-stack"
            for c in G.choices(v, tree=tree, layout="amd"):
                if c.kind == kind:
                    allowed |= set(c.commands)
                    checks.add(c.check)
            bad += [f"{p['id']}: {x}" for cmd in p["commands"] for x in unresolvable(cmd, v or "7.14.0")]
        bad += [f"{p['id']}: command {c!r}" for c in p["commands"] if c not in allowed]
        if p["check"] not in checks:
            bad.append(f"{p['id']}: check {p['check']!r}")
        ent = p["entails"]
        for key in ("replaces", "stops"):
            bad += [f"{p['id']}: {key} {x!r}" for x in ent[key] if x not in e[key]]
        bad += [f"{p['id']}: installs {x!r}" for x in ent["installs"]
                if x not in e["installs"] and not x.startswith("nothing new (already here")]
        if ent["undo"] != e["undo"]:
            bad.append(f"{p['id']}: undo")
        bad += [f"{p['id']}: source {s!r}" for s in p["sources"] if s not in PATHS_TOML]
        bad += [f"{p['id']}: unconfirmed {s!r}" for s in p["unconfirmed"] if s not in PATHS_TOML]
        if not p["sources"]:
            bad.append(f"{p['id']}: no source")
        for cmd in p["commands"]:
            bad += [f"{p['id']}: variable {v}" for v in _ENV.findall(cmd) if v not in PATHS_TOML + THEROCK_TOML]
            for group in _APT.findall(cmd):
                bad += [f"{p['id']}: package {n}" for n in group.split()
                        if n.split("=")[0] not in PATHS_TOML + THEROCK_TOML]
    both = PATHS_TOML + THEROCK_TOML
    bad += [f"address {u}" for u in _URL.findall(text + json.dumps(doc)) if u.rstrip(".,;:").removesuffix(".git") not in both]
    return bad


# ---- the table ------------------------------------------------------------------------------

def test_every_entry_has_a_source_and_a_fit_for_every_use():
    t = A.table()
    assert USES == A.uses() == ["chat", "long-context", "moe", "training", "comfyui", "vllm"]
    ids = [p["id"] for p in t["path"]]
    assert ids == ["graft", "debian", "mixa3607", "gentoo", "nightly", "romulosk", "stay-6.3", "vulkan"]
    keys = {"rocblas-served", "rocblas-unserved", "therock-no-gfx906", "torch-no-gfx906", "ollama-rocm-no-gfx906",
            "llama-hip-no-gfx906"}
    for p in t["path"]:
        assert p["sources"] and all(isinstance(s, str) and len(s) > 20 for s in p["sources"]), p["id"]
        assert set(p["fit"]) == set(USES) and set(p["fit"].values()) <= set(A.FITS), p["id"]
        assert set(p["fixes"]) <= keys and p["installs"] and p["replaces"] and p["stops"] and p["undo"], p["id"]
        assert p["check"].startswith(("rocmrevive verify", "build-vulkan/bin/llama-cli")), p["id"]
        if "stack" in p:   # a whole stack named here exists in therock-gfx906.toml
            assert p["stack"] in {s["id"] for s in G.table()["stack"]}
    for section in ("vulkan", "ollama", "no_vulkan_route"):
        assert t[section]["sources"], section
    assert [p["fit"][u] for p in t["path"] if p["kind"] == "vulkan" for u in ("training", "comfyui", "vllm")] == ["no"] * 3
    assert all(t["uses"][u]["needs_rocm"] == (u in ("training", "comfyui", "vllm")) for u in USES)


def test_the_reader_catches_what_is_not_in_the_table(tmp_path):
    root = os_release(build("dual-mi50", tmp_path / "m"), "ubuntu", "24.04", "Ubuntu 24.04.2 LTS")
    doc = paths(root)
    assert unresolved(doc) == []
    for mutate, expect in (
        (lambda p: p["commands"].append("sudo apt-get install rocm-gfx906"), "command"),
        (lambda p: p["commands"].append("curl -O https://repo.example.org/rocm-gfx906.deb"), "address"),
        (lambda p: p["sources"].append("a forum post"), "source"),
        (lambda p: p["entails"]["stops"].append("nothing at all"), "stops"),
        (lambda p: p.update(check="rocminfo"), "check"),
        (lambda p: p["commands"].append("export HSA_OVERRIDE_GFX_VERSION=9.0.6"), "variable"),
    ):
        bad_doc = json.loads(json.dumps(doc))
        mutate(bad_doc["paths"][0])
        found = unresolved(bad_doc)
        assert found and any(expect in b for b in found), (expect, found)


# ---- the machines ---------------------------------------------------------------------------

def test_demo_machine_ranks_by_what_the_owner_runs(tmp_path):
    """Dual MI50 32GB (BAR 16 GiB of 32), ROCm 6.4.3 without gfx906, Ubuntu 24.04, no apps."""
    root = os_release(build("dual-mi50", tmp_path / "m"), "ubuntu", "24.04", "Ubuntu 24.04.2 LTS")
    doc = paths(root)
    assert doc["use"] == "chat" and "no llama.cpp" in doc["use_from"]
    (tree,) = doc["box"]["trees"]
    assert tree["rocblas_version"] == "4.4.1" and tree["gfx906"] is False and tree["served_by"] == "rocblas-4.4-gfx906"
    assert [c["bar_bytes"] for c in doc["box"]["cards"]] == [16 << 30, 16 << 30]
    ids = [p["id"] for p in doc["paths"] if p["applies"]]
    assert ids[:2] == ["vulkan", "graft"], ids                 # short-context chat: Vulkan's token rate, then ROCm
    assert {"mixa3607", "nightly", "romulosk", "stay-6.3"} <= set(ids) and not {"debian", "gentoo"} & set(ids)
    by = {p["id"]: p for p in doc["paths"]}
    assert by["graft"]["fixes"] == [doc["box"]["findings"][0]["text"]] and by["vulkan"]["fixes"] == []
    assert any(c.startswith("GPU0: BAR 16 GiB of 32 GiB VRAM") for c in by["vulkan"]["cliffs"])
    assert "export GGML_VK_DISABLE_HOST_VISIBLE_VIDMEM=1   # a card here has a BAR smaller than its VRAM" in \
        by["vulkan"]["commands"]
    assert by["mixa3607"]["commands"][-1] == ("sudo apt-get install amdrocm7.14-gfx906=7.14.0-gfx906+20260802001858 "
                                              "amdrocm-core-sdk7.14-gfx906=7.14.0-gfx906+20260802001858 "
                                              "amdrocm7.14=7.14.0-gfx906+20260802001858 "
                                              "amdrocm-core-sdk7.14=7.14.0-gfx906+20260802001858")
    text = human(root)
    assert unresolved(doc, text) == []
    assert "1. Vulkan (Mesa RADV)" in text and "2. rocmrevive's graft" in text and "$ sudo rocmrevive install" in text
    assert "check: rocmrevive verify" in text and "undo: sudo rocmrevive rollback" in text
    # what the owner runs changes the order: training has no Vulkan route
    doc = paths(root, "--for", "training")
    first, *_rest, last = doc["paths"]
    assert first["id"] == "graft" and last["id"] == "vulkan" and last["applies"] is False
    assert "PyTorch and vLLM have no Vulkan route" in last["not_here"]
    assert any("pytorch/pytorch#139354" in s for s in last["sources"])
    assert doc["notes"][0].startswith("PyTorch and vLLM have no Vulkan route")
    assert [p["id"] for p in paths(root, "--for", "long-context")["paths"]][0] == "graft"   # ROCm wins long context
    assert unresolved(doc) == []
    r = rr(root, "recipe", "--for", "gaming")
    assert r.returncode == 2 and "gaming" in r.stderr
    r = rr(root, "recipe", "--paths", "--tree", "/opt/rocm")
    assert r.returncode == 2 and r.stdout == "" and "take none of --tree" in r.stderr
    info = tmp_path / "vulkaninfo.txt"
    info.write_text("GPU id : 0 (AMD Radeon Graphics (RADV VEGA20)):\nGPU id : 1 (AMD Radeon Graphics (RADV VEGA20)):\n")
    doc = paths(root, "--vulkaninfo", str(info))
    assert doc["box"]["vulkan_devices"] == ["AMD Radeon Graphics (RADV VEGA20)"]
    assert any("Vulkan serves a card with a small BAR here (Vulkan device AMD Radeon Graphics (RADV VEGA20))" in n
               for n in doc["notes"])


def test_debian_13_with_debians_rocm(tmp_path):
    """Debian 13 with Debian's librocblas (gfx906 built in) and no /opt/rocm: Debian's stack is
    already here; nothing is left to graft."""
    from tests.machines.catalog import MACHINES

    spec = MACHINES["dual-mi50"]()
    spec["rocm"], spec["rocm_link"] = [], None
    spec["debian_rocblas"] = MACHINES["rocm643-torch-venv"]()["debian_rocblas"]
    from tests.machines.build import build_machine

    root = os_release(build_machine(spec, tmp_path / "m"), "debian", "13", "Debian GNU/Linux 13 (trixie)")
    doc = paths(root)
    by = {p["id"]: p for p in doc["paths"]}
    assert by["debian"]["applies"] and by["debian"]["present"] == "already here: librocblas4 6.4.4-4"
    assert by["graft"]["applies"] is False and "no rocBLAS copy here lacks gfx906" in by["graft"]["not_here"]
    assert by["mixa3607"]["applies"] is False and "Debian GNU/Linux 13" in by["mixa3607"]["not_here"]
    assert doc["box"]["findings"] == [] and doc["box"]["distro"] == "debian"
    assert unresolved(doc, human(root)) == []
    # the same box calling itself Gentoo gets the USE flag, not Debian's packages
    os_release(root, "gentoo", "2.17", "Gentoo Linux")
    by = {p["id"]: p for p in paths(root)["paths"]}
    assert by["gentoo"]["applies"] and not by["debian"]["applies"]
    assert "echo 'sci-libs/rocBLAS amdgpu_targets_gfx906' | sudo tee -a /etc/portage/package.use/gfx906" in \
        by["gentoo"]["commands"]


def _rocm102(root: Path, soname: str = "librocblas.so.5.8.0") -> Path:
    """A ROCm 10.2 TheRock-style tree with gfx1100 files only; no version header: its rocBLAS
    version (5.8.0, what AMDGPU.jl v2.13.0 records for ROCm 10.2: issue 44) is in its files (the
    SONAME file name) and nowhere else."""
    tree = root / "opt/rocm-10.2.0"
    (tree / ".info").mkdir(parents=True)
    (tree / ".info/version").write_text("10.2.0\n")
    lib = tree / "lib"
    (lib / "rocblas/library").mkdir(parents=True)
    (lib / soname).write_bytes(b"\x7fELF placeholder")
    (lib / "librocblas.so.5").symlink_to(soname)
    for n in ("TensileLibrary_lazy_gfx1100.dat", "Kernels.so-000-gfx1100.hsaco"):
        (lib / "rocblas/library" / n).write_text("placeholder")
    man = tree / "share/therock/therock_manifest.json"
    man.parent.mkdir(parents=True)
    man.write_text(json.dumps({"the_rock_commit": "ab" * 20, "github_run_id": "29000000001",
                               "rocm_package_version": "10.2.0"}))
    (root / "opt/rocm").symlink_to("rocm-10.2.0")
    return tree


def test_a_rocm_10_2_tree_reads_its_rocblas_version_from_its_files(tmp_path):
    from tests.machines.build import build_machine
    from tests.machines.catalog import MACHINES

    spec = MACHINES["dual-mi50"]()
    spec["rocm"], spec["rocm_link"] = [], None
    root = os_release(build_machine(spec, tmp_path / "m"), "ubuntu", "24.04", "Ubuntu 24.04.2 LTS")
    _rocm102(root)
    doc = paths(root)
    (tree,) = doc["box"]["trees"]
    assert (tree["rocm_version"], tree["rocblas_version"], tree["rocblas_version_from"]) == \
        ("10.2.0", "5.8.0", "librocblas.so.5.8.0"), tree
    assert tree["therock"] is True and tree["build"]["github_run_id"] == "29000000001"
    assert [i["key"] for i in doc["box"]["findings"]] == ["therock-no-gfx906"]
    by = {p["id"]: p for p in doc["paths"]}
    assert by["graft"]["applies"] is False and ".kpack" in by["graft"]["not_here"]
    for pid in ("nightly", "romulosk", "mixa3607"):
        assert by[pid]["fixes"] and "10.2.0" in by[pid]["fixes"][0], pid
    assert unresolved(doc, human(root)) == []
    # the version follows the file, not a table keyed by the ROCm version
    (root / "opt/rocm-10.2.0/lib/librocblas.so.5").unlink()
    (root / "opt/rocm-10.2.0/lib/librocblas.so.5.8.0").rename(root / "opt/rocm-10.2.0/lib/librocblas.so.5.9.1")
    (tree,) = paths(root)["box"]["trees"]
    assert (tree["rocblas_version"], tree["rocblas_version_from"]) == ("5.9.1", "librocblas.so.5.9.1")


@pytest.fixture(scope="module")
def torch_hip_lib(tmp_path_factory) -> Path:
    """A real HIP library with gfx90a code only (compiled by clang-15): a libtorch_hip lacking gfx906."""
    clang = shutil.which("clang-15")
    assert clang, "clang-15 is needed (scripts/setup-system.sh installs it)"
    out = tmp_path_factory.mktemp("hip") / "libtorch_hip.so"
    src = REPO / "tests/fixtures/src"
    subprocess.run([clang, "-x", "hip", "--offload-arch=gfx90a", "-nogpulib", "-nogpuinc", "-fPIC", "-shared",
                    "-fuse-ld=lld", str(src / "hip_vadd.hip"), "-o", str(out)], check=True, cwd=src)
    return out


def test_a_pytorch_wheel_without_gfx906(tmp_path, torch_hip_lib):
    """The venv's torch (2.7.1+rocm6.3) has a libtorch_hip with gfx90a kernels only: training is
    the default use, the graft fixes the ROCm tree, and no path changes the wheel (said so)."""
    root = os_release(build("rocm643-torch-venv", tmp_path / "m"), "ubuntu", "24.04", "Ubuntu 24.04.2 LTS")
    lib = root / "home/alice/venvs/torch/lib/python3.12/site-packages/torch/lib"
    shutil.copy(torch_hip_lib, lib / "libtorch_hip.so")
    doc = paths(root)
    assert doc["use"] == "training" and doc["use_from"].startswith("torch found at /home/alice/venvs/torch")
    keys = [i["key"] for i in doc["box"]["findings"]]
    assert "torch-no-gfx906" in keys, keys
    assert any("no path above changes the wheel itself" in n for n in doc["notes"])
    by = {p["id"]: p for p in doc["paths"]}
    assert doc["paths"][0]["id"] == "graft" and by["vulkan"]["applies"] is False
    assert not any("libtorch_hip" in f for p in doc["paths"] for f in p["fixes"])
    assert unresolved(doc, human(root)) == []
    (lib / "libtorch_hip.so").unlink()      # the wheel's kernels gone: the finding goes with them
    assert "torch-no-gfx906" not in [i["key"] for i in paths(root)["box"]["findings"]]


def test_a_llama_cpp_with_vulkan_machine(tmp_path):
    """A llama.cpp build with libggml-vulkan.so beside its binaries and Ollama with a Vulkan
    runner: chat by default, Vulkan is 'already here', and the small BAR is named with its two
    ways out (recipe and doctor); with a full BAR the cliff and the finding go."""
    root = os_release(build("dual-mi50", tmp_path / "m"), "ubuntu", "24.04", "Ubuntu 24.04.2 LTS")
    bin_dir = root / "home/alice/llama.cpp/build/bin"
    bin_dir.mkdir(parents=True)
    for n in ("llama-cli", "llama-server", "libggml-vulkan.so", "libggml-base.so"):
        (bin_dir / n).write_bytes(b"\x7fELF placeholder")
    (root / "usr/local/lib/ollama/vulkan").mkdir(parents=True)
    doc = paths(root)
    assert doc["use"] == "chat" and doc["use_from"] == "llama.cpp found at /home/alice/llama.cpp/build/bin"
    apps = {(a["kind"], a["where"]): a["backends"] for a in doc["box"]["apps"]}
    assert apps == {("llama.cpp", "/home/alice/llama.cpp/build/bin"): ["vulkan"],
                    ("ollama", "/usr/local/lib/ollama"): ["vulkan"]}
    v = doc["paths"][0]
    assert v["id"] == "vulkan" and v["present"].startswith("already here: llama.cpp at /home/alice/llama.cpp/build/bin")
    assert any("Vulkan serves a card with a small BAR" in n for n in doc["notes"])
    assert unresolved(doc, human(root)) == []
    r = rr(root, "--json", "doctor")
    found = [f for f in json.loads(r.stdout)["findings"] if f["id"] == "vulkan-small-bar"]
    assert [f["subject"] for f in found] == ["GPU0", "GPU1"]
    assert "GGML_VK_DISABLE_HOST_VISIBLE_VIDMEM=1" in found[0]["fix"] and "Resizable BAR" in found[0]["fix"]
    assert "token generation drops several-fold" in found[0]["cause"]
    # full BAR (all VRAM CPU-visible): no cliff, no finding
    devs = [(root / "sys/bus/pci/devices" / dev).resolve() for dev in ("0000:19:00.0", "0000:67:00.0")]
    small = [(d / "mem_info_vis_vram_total").read_text() for d in devs]
    for d in devs:
        (d / "mem_info_vis_vram_total").write_text((d / "mem_info_vram_total").read_text())
    doc = paths(root)
    assert not any(c.startswith("GPU") for c in doc["paths"][0]["cliffs"])

    def vulkan_bar() -> list:
        return [f for f in json.loads(rr(root, "--json", "doctor").stdout)["findings"] if f["id"] == "vulkan-small-bar"]
    assert vulkan_bar() == []
    # small BAR again, but no Vulkan build on the box: no Vulkan finding (the plain small-bar one stays)
    for d, text in zip(devs, small):
        (d / "mem_info_vis_vram_total").write_text(text)
    assert len(vulkan_bar()) == 2
    shutil.rmtree(bin_dir)
    shutil.rmtree(root / "usr/local/lib/ollama")
    assert vulkan_bar() == []
    # a vulkaninfo listing the card's RADV device is enough
    info = tmp_path / "vulkaninfo.txt"
    info.write_text("GPU id : 0 (AMD Radeon Graphics (RADV VEGA20)):\n")
    r = rr(root, "--json", "doctor", "--vulkaninfo", str(info))
    assert [f["subject"] for f in json.loads(r.stdout)["findings"] if f["id"] == "vulkan-small-bar"] == ["GPU0", "GPU1"]


@pytest.mark.debian
def test_a_therock_7_14_whole_stack(tmp_path, debian_pkgs, codeobjects):
    """mixa3607's 7.14 whole gfx906 stack installed: that path is 'already here', nothing lacks gfx906."""
    from tests.fixtures import therock_layouts as L

    root = L.BUILDERS["whole-stack-7.14"](tmp_path / "m", debian_pkgs, codeobjects)
    os_release(root, "ubuntu", "24.04", "Ubuntu 24.04.2 LTS")
    doc = paths(root)
    by = {p["id"]: p for p in doc["paths"]}
    assert by["mixa3607"]["present"] == "already here: a TheRock gfx906 whole-stack build"
    assert doc["box"]["findings"] == [] and by["graft"]["applies"] is False
    assert any(t["rocm_version"] and t["rocm_version"].startswith("7.14") for t in doc["box"]["trees"])
    assert unresolved(doc, human(root)) == []


@pytest.mark.debian
def test_debian_13_with_trixies_real_librocblas0(tmp_path, debian_pkgs):
    """Debian 13's own librocblas0 5.5.1+dfsg-7 (rocBLAS 2.47.0, built by Debian for gfx906), the real
    package's files: its version comes from its files and dpkg, Debian's path is already here."""
    from tests.machines.build import build_machine, link_or_copy
    from tests.machines.catalog import MACHINES

    spec = MACHINES["dual-mi50"]()
    spec["rocm"], spec["rocm_link"] = [], None
    root = os_release(build_machine(spec, tmp_path / "m"), "debian", "13", "Debian GNU/Linux 13 (trixie)")
    src = debian_pkgs["librocblas0_5.5.1+dfsg-7_amd64"] / "usr/lib/x86_64-linux-gnu"
    shutil.copytree(src, root / "usr/lib/x86_64-linux-gnu", symlinks=True, dirs_exist_ok=True,
                    copy_function=link_or_copy)      # hard links into the cache (2.2 GB otherwise)
    status = root / "var/lib/dpkg/status"
    status.parent.mkdir(parents=True, exist_ok=True)
    status.write_text("Package: librocblas0\nStatus: install ok installed\nVersion: 5.5.1+dfsg-7\n")
    doc = paths(root)
    (tree,) = doc["box"]["trees"]
    assert tree["layout"] == "debian" and tree["gfx906"] is True and tree["rocblas_version"] == "2.47.0", tree
    assert tree["rocm_version"] == "5.5.1" and tree["rocm_version_from"] == "dpkg: librocblas0 5.5.1+dfsg-7"
    by = {p["id"]: p for p in doc["paths"]}
    assert by["debian"]["present"] == "already here: librocblas0 5.5.1+dfsg-7" and by["debian"]["applies"]
    assert doc["box"]["findings"] == [] and by["graft"]["applies"] is False
    assert unresolved(doc, human(root)) == []


def test_a_box_without_gfx906_says_so(tmp_path):
    root = build("mi100-gfx908", tmp_path / "m")
    r = rr(root, "--json", "recipe", "--paths")
    doc = json.loads(r.stdout)
    assert r.returncode == 3 and doc["error"]["code"] == "NOTHING_SUPPORTED" and "no gfx906 GPU" in doc["error"]["message"]
