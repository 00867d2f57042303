"""rocmrevive as a user gets it: `python -m build` of the tracked files, the wheel installed into a
fresh venv with every dependency at its floor (Debian 12's own versions), then `rocmrevive
--version` and the demo (demo/run.sh) run with that installed copy, not this checkout."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import tomllib
from packaging.requirements import Requirement
from packaging.version import Version

from tests.conftest import REPO

pytestmark = pytest.mark.slow
PIP = ["-m", "pip", "install", "-q", "--disable-pip-version-check"]


def _pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


def floor_pins() -> list[str]:
    """Each dependency at exactly its lowest allowed version (`click>=8.1.3` -> `click==8.1.3`)."""
    pins = []
    for spec in _pyproject()["project"]["dependencies"]:
        req = Requirement(spec)
        if req.marker is not None and not req.marker.evaluate():
            continue
        lows = [s.version for s in req.specifier if s.operator == ">="]
        assert len(lows) == 1, f"{spec}: a dependency needs one >= floor"
        pins.append(f"{req.name}=={lows[0]}")
    return pins


def tracked_copy(src: Path) -> Path:
    """The tracked (and untracked, not ignored) files of this checkout copied into ``src``: what a
    clean clone has."""
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           cwd=REPO, capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        a, b = REPO / rel, src / rel
        if not a.is_symlink() and not a.exists():
            continue  # deleted in the work tree
        b.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(a, b, follow_symlinks=False)
    return src


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    """sdist and wheel from a copy of the tracked files (what a clean clone has), built the way
    a user builds them: `python -m build` (the wheel is built from the unpacked sdist)."""
    src = tracked_copy(tmp_path_factory.mktemp("src"))
    out = tmp_path_factory.mktemp("dist")
    r = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(src)],
                       capture_output=True, text=True)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    (sdist,) = out.glob("rocmrevive-*.tar.gz")
    (wheel,) = out.glob("rocmrevive-*.whl")
    return {"sdist": sdist, "wheel": wheel}


def test_sdist_has_the_license_and_docs_and_leaves_the_tests_out(built):
    with tarfile.open(built["sdist"]) as tf:
        names = {n.split("/", 1)[1] for n in tf.getnames() if "/" in n}
    assert {"LICENSE", "README.md", "pyproject.toml", "docs/rocmrevive.1"} <= names
    assert "rocmrevive/data/manifests/rocblas-4.4-gfx906.toml" in names
    # tests need the repository's fixtures (machines, demo, collection): an sdist does not carry them
    assert not [n for n in names if n.startswith(("tests/", "demo/", "collections/"))]


def test_wheel_metadata_is_complete(built):
    with zipfile.ZipFile(built["wheel"]) as zf:
        meta_name = next(n for n in zf.namelist() if n.endswith(".dist-info/METADATA"))
        meta = zf.read(meta_name).decode()
        names = zf.namelist()
    assert "License-Expression: MIT" in meta
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert re.search(r"^Classifier: Operating System :: POSIX :: Linux$", meta, re.M)
    assert re.search(r"^Project-URL: Source, https://", meta, re.M)
    assert "Description-Content-Type: text/markdown" in meta
    assert "rocmrevive/data/manifests/rocblas-4.4-gfx906.toml" in names
    assert "rocmrevive-0.1.0.data/data/share/man/man1/rocmrevive.1" in names   # `man rocmrevive` after pipx


def install_section() -> list[str]:
    """The README Install section's first shell block: its command lines, comments dropped."""
    text = (REPO / "README.md").read_text()
    sec = text[text.index("## Install"):]
    block = sec[sec.index("```sh\n") + 6:]
    block = block[:block.index("```")]
    return [ln.split("   #")[0].strip() for ln in block.splitlines() if ln.strip()]


def test_the_readme_install_section_as_written_on_debian_12(tmp_path):
    """The Install section's lines as written, with Debian 12's own python3 and pipx (1.1.0:
    scripts/setup-system.sh installs it), the system paths under a temporary folder and `sudo`
    left out (this runs as root): the wheel builds without touching the system's pip, pipx installs
    it, `man` finds the page, and the installed copy runs the demo."""
    lines = install_section()
    build, apt, pipx, man, check = lines[:5]
    assert build.startswith("python3 -m venv ") and "pip install build" in build and apt.startswith("sudo apt-get")
    pkg = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "pipx"], capture_output=True, text=True)
    assert pkg.returncode == 0, "pipx is not installed: run scripts/setup-system.sh"
    top = tmp_path / "sys"
    subs = {"/tmp/rocmrevive-build": str(tmp_path / "build-venv"), "/opt/pipx": str(top / "opt/pipx"),
            "/usr/local/bin": str(top / "usr/local/bin"), "/usr/local/share/man": str(top / "usr/local/share/man"),
            "sudo ": ""}
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV", "PIPX"))}
    env.update(PATH=f"{top}/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", MANPATH=str(top / "usr/local/share/man"),
               HOME=str(tmp_path / "home"), NO_COLOR="1")
    src = tracked_copy(tmp_path / "src")

    def run(line: str) -> str:
        for a, b in subs.items():
            line = line.replace(a, b)
        r = subprocess.run(["bash", "-c", f"set -euo pipefail; {line}"], cwd=src, capture_output=True, text=True,
                           env=env)
        assert r.returncode == 0, (line, (r.stdout + r.stderr)[-4000:])
        return r.stdout

    run(build)
    assert (src / "dist/rocmrevive-0.1.0-py3-none-any.whl").is_file()
    run(pipx)
    run(man)
    out = run(check)
    assert out.splitlines()[-1].endswith("/share/man/man1/rocmrevive.1"), out   # man -w: where it found the page
    assert (top / "usr/local/share/man/man1/rocmrevive.1").exists()
    page = run("man -P cat rocmrevive")
    assert "rocmrevive install" in page, page[:2000]
    exe = top / "usr/local/bin/rocmrevive"
    r = subprocess.run(["bash", str(REPO / "demo/run.sh")], capture_output=True, text=True, cwd=REPO,
                       env=dict(env, ROCMREVIVE=str(exe)))
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "rollback restored /opt byte for byte" in r.stdout


def test_fresh_venv_with_the_floors_runs_the_demo(built, tmp_path):
    venv = tmp_path / "venv"
    # nothing of this checkout or of the test run's environment reaches the venv
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    env["PATH"] = f"{venv}/bin:{env['PATH']}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    py = venv / "bin/python"
    pins = floor_pins()
    r = subprocess.run([str(py), *PIP, *pins, str(built["wheel"])], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    r = subprocess.run([str(py), "-m", "pip", "list", "--format=freeze", "--disable-pip-version-check"],
                       capture_output=True, text=True, check=True, env=env, cwd=tmp_path)
    have = dict(line.lower().replace("_", "-").split("==") for line in r.stdout.split())
    for pin in pins:  # exactly the floors, nothing newer sneaked in
        name, version = pin.lower().split("==")
        assert Version(have[name]) == Version(version), (name, have[name])

    exe = venv / "bin/rocmrevive"
    r = subprocess.run([str(exe), "--version"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0].split()[-1] == _pyproject()["project"]["version"]
    assert f"installed in {venv}" in r.stdout   # --version names the installed copy (issue 39)
    # the installed copy, not this checkout
    r = subprocess.run([str(py), "-c", "import rocmrevive; print(rocmrevive.__file__)"],
                       capture_output=True, text=True, env=env, cwd=tmp_path, check=True)
    assert r.stdout.strip().startswith(str(venv))

    r = subprocess.run(["bash", str(REPO / "demo/run.sh")], capture_output=True, text=True, cwd=REPO,
                       env=dict(env, ROCMREVIVE=str(exe), NO_COLOR="1"))
    assert r.returncode == 0, (r.stdout + r.stderr)[-4000:]
    assert "rollback restored /opt byte for byte" in r.stdout
    assert "changed: False | copies: ['satisfied']" in r.stdout
