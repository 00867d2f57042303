"""The collection as Ansible users check collections: `ansible-lint --profile production` and
`ansible-test sanity`, both offline. tests/fixtures/ansible_qa_env.sh makes their environments
once (`make fixtures`; the only step that downloads) and caches them outside the repository;
here every request but 127.0.0.1 meets a dead proxy and pip may use no index, so a run that
tried to download anything would fail. Each gate is also shown to catch a real defect."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow
COLLECTION = REPO / "collections/ansible_collections/rocmrevive/gfx906"
OFFLINE = {"http_proxy": "http://127.0.0.1:9", "https_proxy": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9",
           "HTTPS_PROXY": "http://127.0.0.1:9", "no_proxy": "127.0.0.1", "NO_PROXY": "127.0.0.1",
           "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": "", "NO_COLOR": "1", "ANSIBLE_NOCOLOR": "1"}


@pytest.fixture(scope="module")
def qa() -> dict[str, Path]:
    r = subprocess.run(["bash", str(REPO / "tests/fixtures/ansible_qa_env.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    return {k: Path(v) for k, v in (line.split("=", 1) for line in r.stdout.split())}


def _copy(tmp_path: Path, name: str = "c") -> Path:
    """The collection where ansible wants it (.../ansible_collections/NS/NAME), in version control."""
    dest = tmp_path / name / "ansible_collections/rocmrevive/gfx906"
    shutil.copytree(COLLECTION, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "tests/output"))
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)
    subprocess.run(["git", "add", "-A"], cwd=dest, check=True)
    subprocess.run(["git", "-c", "user.email=t@x", "-c", "user.name=t", "commit", "-qm", "t"], cwd=dest, check=True)
    return dest


def _env(venv: Path, tmp_path: Path, **kw) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "PIP_"))}
    env.update(OFFLINE, PATH=f"{venv}/bin:{os.environ['PATH']}", ANSIBLE_HOME=str(tmp_path / ".ansible"),
               ANSIBLE_LOCAL_TEMP=str(tmp_path / ".ansible/tmp"), XDG_CACHE_HOME=str(tmp_path / ".cache"), **kw)
    return env


def lint(qa, coll: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    env = _env(qa["LINT_VENV"], tmp_path, ANSIBLE_COLLECTIONS_PATH=str(coll.parents[2]))
    return subprocess.run([str(qa["LINT_VENV"] / "bin/ansible-lint"), "--offline", "--profile", "production",
                           "--nocolor"], capture_output=True, text=True, cwd=coll, env=env)


def sanity(qa, coll: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    venv = qa["ANSIBLE_VENV"]
    pyver = subprocess.run([str(venv / "bin/python"), "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, check=True).stdout.strip()
    env = _env(venv, tmp_path, HOME=str(qa["SANITY_HOME"]))
    return subprocess.run([str(venv / "bin/ansible-test"), "sanity", "--local", "--python", pyver, *args],
                          capture_output=True, text=True, cwd=coll, env=env)


def test_ansible_lint_production_profile_passes_offline(qa, tmp_path):
    r = lint(qa, _copy(tmp_path), tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Passed: 0 failure(s), 0 warning(s)" in out and "Profile 'production' was required" in out, out[-2000:]


def test_ansible_lint_catches_what_the_review_found(qa, tmp_path):
    coll = _copy(tmp_path)
    galaxy = coll / "galaxy.yml"
    galaxy.write_text("\n".join(line for line in galaxy.read_text().splitlines() if not line.startswith("repository:")))
    (coll / "CHANGELOG.md").unlink()
    play = coll / "playbooks/fleet.yml"
    play.write_text(play.read_text().replace("        - name: Copy the export to the node\n",
                                             "        - name: Copy the export to the node" + " and so on" * 20 + "\n", 1))
    r = lint(qa, coll, tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    for rule in ("galaxy[no-repository]", "galaxy[no-changelog]", "yaml[line-length]"):
        assert rule in out, (rule, out[-3000:])


def test_ansible_test_sanity_passes_offline(qa, tmp_path):
    r = sanity(qa, _copy(tmp_path), tmp_path)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    for test in ("validate-modules", "pylint", "pep8", "yamllint", "runtime-metadata", "import", "shellcheck",
                 "ansible-doc"):
        assert f'Running sanity test "{test}"' in out, (test, out[-3000:])
    assert "Download" not in out and 'Required program "shellcheck" not found' not in out, out[-3000:]


def test_ansible_test_sanity_catches_a_module_doc_that_lies(qa, tmp_path):
    coll = _copy(tmp_path)
    mod = coll / "plugins/modules/gfx906_patch.py"
    mod.write_text(mod.read_text().replace("    choices: [present, absent, verified]\n", "    choices: [present, absent]\n", 1))
    subprocess.run(["git", "commit", "-qam", "lie"], cwd=coll,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_COMMITTER_NAME": "t",
                        "GIT_AUTHOR_EMAIL": "t@x", "GIT_COMMITTER_EMAIL": "t@x"}, check=True)
    r = sanity(qa, coll, tmp_path, "--test", "validate-modules")
    out = r.stdout + r.stderr
    assert r.returncode != 0
    assert "gfx906_patch.py" in out and "doc-choices-do-not-match-spec" in out, out[-3000:]
