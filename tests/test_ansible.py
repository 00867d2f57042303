"""The Ansible collection with real ansible-core (2.19, from tests/fixtures/ansible_env.sh).

A fleet of five hosts with ``ansible_connection=local``, each its own machine in a folder
(``--root``), built from the captures: dual MI50 and MI50 + Radeon VII (ROCm 6.4.3 whose rocBLAS
lacks gfx906), an MI100 (gfx908 only), a desktop without an AMD GPU, and a Radeon VII machine with
a bad tree (a folder where a gfx906 file must go). The collection is built and installed with
ansible-galaxy and its example playbook (``rocmrevive.gfx906.fleet``) is what runs: fetch once on
the control node, copy (or serve over HTTP) the export, install, verify, smoke, collect.

Network: any request not to 127.0.0.1 goes to a dead proxy, so a run that tried to download from
anywhere else would fail. Set ROCMREVIVE_ANSIBLE_LOG_DIR to keep every run's output.
"""
from __future__ import annotations

import functools
import hashlib
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.machines.build import build

sys.path.insert(0, str(REPO / "demo"))
import minirocblas as mr  # noqa: E402

COLLECTION = REPO / "collections/ansible_collections/rocmrevive/gfx906"
LIB = "/opt/rocm-6.4.3/lib/rocblas/library"
DEB = "librocblas4_6.4.4-4_amd64.deb"
HOSTS = {"mi50": "dual-mi50", "vii": "mi50-radeon-vii", "mi100": "mi100-gfx908", "nogpu": "no-amd-gpu",
         "bad": "mi50-radeon-vii"}
GFX906_OK = {"mi50", "vii"}
BAD_MESSAGE = f"{LIB}/TensileLibrary_lazy_gfx906.dat exists and is not a regular file"
RECAP = re.compile(r"^(\S+)\s+:\s+ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+"
                   r"skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)", re.M)

pytestmark = pytest.mark.slow


# ---- the environment: ansible-core, the installed collection, the machines --------------------

@pytest.fixture(scope="session")
def ansible_venv() -> Path:
    r = subprocess.run(["bash", str(REPO / "tests/fixtures/ansible_env.sh")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr[-3000:]
    venv = Path(r.stdout.strip().splitlines()[-1])
    assert (venv / "bin/ansible-playbook").is_file()
    return venv


@pytest.fixture(scope="session")
def installed_collection(ansible_venv, tmp_path_factory) -> Path:
    """`ansible-galaxy collection build` + `install`: the playbooks run the installed copy."""
    work = tmp_path_factory.mktemp("galaxy")
    galaxy = str(ansible_venv / "bin/ansible-galaxy")
    r = subprocess.run([galaxy, "collection", "build", str(COLLECTION), "--output-path", str(work)],
                       capture_output=True, text=True, env=_env(ansible_venv, work))
    assert r.returncode == 0, r.stdout + r.stderr
    (tarball,) = work.glob("rocmrevive-gfx906-*.tar.gz")
    dest = work / "installed"
    r = subprocess.run([galaxy, "collection", "install", str(tarball), "-p", str(dest)],
                       capture_output=True, text=True, env=_env(ansible_venv, work))
    assert r.returncode == 0, r.stdout + r.stderr
    assert (dest / "ansible_collections/rocmrevive/gfx906/playbooks/fleet.yml").is_file()
    assert not list(dest.rglob("__pycache__"))
    return dest


def _cli(path: Path) -> Path:
    """`rocmrevive` for the hosts: this checkout's CLI under this interpreter."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\nPYTHONPATH={REPO}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} "
                    f"-m rocmrevive.cli.main \"$@\"\n")
    path.chmod(0o755)
    return path


@pytest.fixture(scope="session")
def template(tmp_path_factory) -> Path:
    """The five machines, the source .deb (a small real rocBLAS 4.4.1 package for gfx906), a
    manifest pinned to it and the CLI; each test copies this folder."""
    base = tmp_path_factory.mktemp("fleet-template")
    for name, machine in HOSTS.items():
        root = build(machine, base / name)
        mr.build_tree(root, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    (base / "bad" / LIB.lstrip("/") / "TensileLibrary_lazy_gfx906.dat").mkdir()
    deb = Path(mr.build_source_deb(base / DEB)["path"])
    _manifest(base / "manifests", deb)
    _cli(base / "bin/rocmrevive")
    return base


def _manifest(folder: Path, deb: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    data = deb.read_bytes()
    body = (REPO / "manifests/rocblas-4.4-gfx906.toml").read_text().split("[[sources]]")[0]
    body = body.replace('id = "rocblas-4.4-gfx906"', 'id = "rocblas-4.4-gfx906-fleet"')
    src = {"name": "test-source", "kind": "debian", "package": "librocblas4", "version": "6.4.4-4",
           "suite": "sid", "filename": f"pool/main/r/rocblas/{DEB}", "size": len(data),
           "sha256": hashlib.sha256(data).hexdigest(),
           "member_prefix": "./usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library/",
           "rocblas_version": "4.4.1", "compatible": ">=4.4.0,<4.5"}
    (folder / "fleet.toml").write_text(body + "[[sources]]\n" + "".join(f"{k} = {json.dumps(v)}\n"
                                                                       for k, v in src.items()))


def _env(venv: Path, base: Path, cli_dir: Path | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(
        PATH=os.pathsep.join([str(cli_dir)] * bool(cli_dir) + [str(venv / "bin"), os.environ.get("PATH", "")]),
        ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", ANSIBLE_HOST_KEY_CHECKING="0", ANSIBLE_RETRY_FILES_ENABLED="0",
        ANSIBLE_LOCAL_TEMP=str(base / ".ansible/tmp"), ANSIBLE_REMOTE_TEMP=str(base / ".ansible/remote"),
        ANSIBLE_HOME=str(base / ".ansible"), ANSIBLE_FORKS="5", NO_COLOR="1",
        # nothing but 127.0.0.1: every other request meets a dead proxy
        http_proxy="http://127.0.0.1:9", https_proxy="http://127.0.0.1:9", HTTP_PROXY="http://127.0.0.1:9",
        HTTPS_PROXY="http://127.0.0.1:9", no_proxy="127.0.0.1,localhost", NO_PROXY="127.0.0.1,localhost",
    )
    return env


def tree_hash(top: Path) -> str:
    """The transaction core's tree hash ('' when ``top`` does not exist)."""
    from rocmrevive.txn.fsutil import tree_hash as _tree_hash

    return _tree_hash(top) if top.exists() else ""


class Run:
    def __init__(self, rc: int, out: str, results: dict, seconds: float):
        self.rc, self.out, self.results, self.seconds = rc, out, results, seconds
        self.recap = {m[0]: dict(zip(("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored"),
                                     map(int, m[1:]))) for m in RECAP.findall(out)}

    def changed_hosts(self) -> set[str]:
        return {h for h, r in self.recap.items() if r["changed"] and h != "localhost"}

    def failed_hosts(self) -> set[str]:
        return {h for h, r in self.recap.items() if r["failed"]}


class Fleet:
    """A copy of the template with an inventory; ``play(*args)`` runs the collection's fleet playbook."""

    def __init__(self, template: Path, base: Path, venv: Path, collections: Path):
        self.base, self.venv, self.collections = base, venv, collections
        shutil.copytree(template, base, symlinks=True)
        self.cli = base / "bin/rocmrevive"
        _cli(self.cli)
        self.runs = 0
        lines = ["[gpu_nodes]"] + [f"{h} rocmrevive_root={base / h}" for h in HOSTS] + [
            "", "[all:vars]", "ansible_connection=local",
            'ansible_python_interpreter="{{ ansible_playbook_python }}"',
            f"rocmrevive_manifests={base / 'manifests'}",
            f"rocmrevive_export_dir={base / 'export'}",
            f"rocmrevive_fetch_args=['--from', '{base / DEB}', '--cache', '{base / 'control-cache'}']",
            "rocmrevive_smoke=false", ""]
        (base / "inventory.ini").write_text("\n".join(lines))

    def root(self, host: str) -> Path:
        return self.base / host

    def hashes(self) -> dict[str, tuple[str, str]]:
        return {h: (tree_hash(self.root(h) / "opt"), tree_hash(self.root(h) / "var/lib/rocmrevive")) for h in HOSTS}

    def play(self, *args: str, name: str = "") -> Run:
        self.runs += 1
        results = self.base / f"results-{self.runs}"
        cmd = [str(self.venv / "bin/ansible-playbook"), "-i", str(self.base / "inventory.ini"),
               "rocmrevive.gfx906.fleet", "-e", f"rocmrevive_results_dir={results}", *args]
        env = _env(self.venv, self.base, self.cli.parent)
        env["ANSIBLE_COLLECTIONS_PATH"] = str(self.collections)
        t0 = time.monotonic()
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=self.base)
        seconds = time.monotonic() - t0
        out = r.stdout + r.stderr
        log_dir = os.environ.get("ROCMREVIVE_ANSIBLE_LOG_DIR")
        if log_dir:
            Path(log_dir).mkdir(parents=True, exist_ok=True)
            Path(log_dir, f"{name or 'run'}-{self.runs}.txt").write_text(
                f"$ ansible-playbook -i inventory.ini rocmrevive.gfx906.fleet {' '.join(args)}\n"
                f"# {seconds:.1f} s, exit {r.returncode}\n{out}")
        res = {p.stem: json.loads(p.read_text()) for p in results.glob("*.json")} if results.is_dir() else {}
        return Run(r.returncode, out, res, seconds)

    def status(self, host: str) -> dict:
        r = subprocess.run([str(self.cli), "--root", str(self.root(host)), "--json", "status"],
                           capture_output=True, text=True)
        return json.loads(r.stdout)


# ---- the main sequence: check, first run, second run, absent --------------------------------

@pytest.fixture(scope="module")
def sequence(template, ansible_venv, installed_collection, tmp_path_factory):
    """check on fleet A; on fleet B: first run (with smoke), second run, absent. The hashes of
    every tree and journal are kept between steps. (absent in check mode, and absent twice, are
    in the collection's unit tests.)"""
    a = Fleet(template, tmp_path_factory.mktemp("fleet") / "a", ansible_venv, installed_collection)
    b = Fleet(template, tmp_path_factory.mktemp("fleet") / "b", ansible_venv, installed_collection)
    s = {"a": a, "b": b, "original": b.hashes()}
    s["check_before"] = a.hashes()
    s["check"] = a.play("--check", "--diff", name="check")
    s["check_after"] = a.hashes()
    s["first"] = b.play("-e", "rocmrevive_smoke=true", name="first")
    s["installed"] = b.hashes()
    s["installed_files"] = {h: {f"{LIB}/{f.name}": hashlib.sha256(f.read_bytes()).hexdigest()
                                for f in (b.root(h) / LIB.lstrip("/")).iterdir() if "gfx906" in f.name}
                            for h in GFX906_OK}
    s["second"] = b.play(name="second")
    s["second_after"] = b.hashes()
    s["check_again"] = b.play("--check", "--diff", name="check-again")   # after a real run: nothing to predict
    s["check_again_after"] = b.hashes()
    s["status_before_absent"] = {h: b.status(h) for h in GFX906_OK}
    s["absent"] = b.play("-e", "rocmrevive_state=absent", "--diff", name="absent")
    s["absent_after"] = b.hashes()
    return s


def test_first_run_changes_exactly_the_gfx906_hosts(sequence):
    run = sequence["first"]
    assert run.rc == 2, run.out[-3000:]  # the bad host failed; the others went on
    assert set(run.recap) == set(HOSTS) | {"localhost"}
    assert {h for h, r in run.results.items() if r["changed"]} == GFX906_OK
    assert run.failed_hosts() == {"bad"}
    for h in ("mi100", "nogpu"):
        assert run.recap[h]["changed"] == 0 and run.results[h]["supported"] is False
        assert run.results[h]["msg"].startswith("nothing to do: no ")
    for h in GFX906_OK:
        r = run.results[h]
        assert r["failed"] is False and r["verified"] is True and r["smoke"] in ("unavailable", "passed")
        assert r["msg"].startswith(f"installed 9 files into {LIB} (transaction ")
        assert len(r["files"]) == 9 and all(v["before"] is None for v in r["files"].values())
        assert sequence["installed_files"][h] == {p: v["after"] for p, v in r["files"].items()}


def test_install_used_the_export_copied_from_the_control_node(sequence):
    b = sequence["b"]
    export = json.loads((b.base / "export/rocmrevive-export.json").read_text())
    (src,) = export["sources"]
    for h in GFX906_OK:
        (tx,) = sequence["status_before_absent"][h]["transactions"]
        art = tx["meta"]["artifact"]
        assert art["sha256"] == src["sha256"]
        assert art["provenance"]["from"] == str(b.root(h) / "var/cache/rocmrevive-export")
    # the control node fetched once: the hosts' copies are byte for byte the export
    for h in GFX906_OK | {"bad"}:
        copy = b.root(h) / "var/cache/rocmrevive-export" / src["file"]
        assert hashlib.sha256(copy.read_bytes()).hexdigest() == src["sha256"]
    assert not (b.root("mi100") / "var/cache/rocmrevive-export").exists()


def test_a_bad_tree_fails_with_the_cli_message_and_the_others_go_on(sequence):
    run = sequence["first"]
    bad = run.results["bad"]
    assert bad["failed"] is True and BAD_MESSAGE in bad["msg"]
    assert bad["error"]["code"] == "VERIFY_FAILED" and bad["error"]["exit"] == 6
    assert re.search(r"fatal: \[bad\]: FAILED! => .*" + re.escape(BAD_MESSAGE), run.out)
    assert sequence["installed"]["bad"] == sequence["original"]["bad"]  # nothing written to its tree
    assert run.recap["bad"]["failed"] == 1 and run.recap["mi50"]["failed"] == 0


def test_second_run_changes_nothing(sequence):
    run = sequence["second"]
    assert all(r["changed"] == 0 for r in run.recap.values()), run.out[-3000:]
    assert run.failed_hosts() == {"bad"}
    for h in GFX906_OK:
        assert run.results[h]["msg"] == f"{LIB}: already complete" and run.results[h]["verified"] is True
    assert sequence["second_after"] == sequence["installed"]


def test_check_predicts_the_real_run_and_writes_nothing(sequence):
    check, real = sequence["check"], sequence["first"]
    assert sequence["check_after"] == sequence["check_before"]  # trees and journals untouched
    assert check.failed_hosts() == real.failed_hosts() == {"bad"}
    for h in HOSTS:
        c, r = check.results[h], real.results[h]
        assert c["check_mode"] is True and r["check_mode"] is False
        assert (c["changed"], c["supported"], c["failed"]) == (r["changed"], r["supported"], r["failed"]), h
        assert c["files"] == r["files"], h
    assert check.results["bad"]["msg"] == real.results["bad"]["msg"]
    for h in GFX906_OK:
        assert check.results[h]["msg"] == f"would install 9 files into {LIB}"
    # nothing landed on a node: no export copy, no cache, no staging (issue 39: it copied the export)
    a = sequence["a"]
    for h in HOSTS:
        assert not (a.root(h) / "var/cache").exists() or not any((a.root(h) / "var/cache").iterdir()), h
    # changed only where the real run changes: the same hosts, task for task
    assert {h: r["changed"] for h, r in check.recap.items() if h != "localhost"} == \
        {h: r["changed"] for h, r in real.recap.items() if h != "localhost"}, (check.recap, real.recap)
    # --diff shows each file with its sha256 before and after
    assert check.out.count(f"+++ after: {LIB} (after install)") == 2
    assert check.out.count("-TensileLibrary_lazy_gfx906.dat  absent") == 2
    sha = real.results["mi50"]["files"][f"{LIB}/TensileLibrary_lazy_gfx906.dat"]["after"]
    assert f"+TensileLibrary_lazy_gfx906.dat  sha256:{sha}" in check.out


def test_check_after_a_real_run_predicts_nothing_and_writes_nothing(sequence):
    run = sequence["check_again"]
    assert sequence["check_again_after"] == sequence["second_after"]
    assert all(r["changed"] == 0 for h, r in run.recap.items() if h != "localhost"), run.out[-3000:]
    assert run.failed_hosts() == {"bad"}
    for h in GFX906_OK:
        assert run.results[h]["msg"] == f"{LIB}: already complete", run.results[h]


def test_absent_rolls_back_byte_for_byte(sequence):
    run = sequence["absent"]
    assert run.rc == 0, run.out[-3000:]
    assert {h for h, r in run.results.items() if r["changed"]} == GFX906_OK
    assert run.changed_hosts() == GFX906_OK
    assert run.out.count(f"+++ after: {LIB} (after rollback)") == 2
    for h in GFX906_OK:
        (tx,) = sequence["status_before_absent"][h]["transactions"]
        assert run.results[h]["msg"] == f"rolled back transaction {tx['txid']} on {LIB} (9 files)"
        assert set(run.results[h]["files"]) == {c["path"] for c in tx["changes"]}
        assert all(v["after"] is None for v in run.results[h]["files"].values())
        assert sequence["absent_after"][h][0] == sequence["original"][h][0]  # /opt as before the install
    for h in ("mi100", "nogpu", "bad"):
        assert run.results[h]["changed"] is False and run.results[h]["failed"] is False


# ---- the fleet cache over HTTP ------------------------------------------------------------------

class _Quiet(http.server.SimpleHTTPRequestHandler):
    requests: list

    def log_message(self, fmt, *args):
        self.requests.append((self.command, self.path, args[1] if len(args) > 1 else ""))


def test_fetch_once_then_install_everywhere_from_an_http_mirror(template, ansible_venv, installed_collection,
                                                                tmp_path):
    fleet = Fleet(template, tmp_path / "fleet", ansible_venv, installed_collection)
    export = fleet.base / "export"
    r = subprocess.run([str(fleet.cli), "--json", "fetch", "--manifests", str(fleet.base / "manifests"),
                        "--from", str(fleet.base / DEB), "--cache", str(fleet.base / "control-cache"),
                        "--to", str(export)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    (exported,) = json.loads(r.stdout)["export"]["files"]

    handler = type("Handler", (_Quiet,), {"requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                             functools.partial(handler, directory=str(export)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/sources/test-source"
        run = fleet.play("-e", f"rocmrevive_mirror={url}", name="mirror")
    finally:
        server.shutdown()
        server.server_close()
    assert run.failed_hosts() == {"bad"}, run.out[-3000:]
    assert {h for h, res in run.results.items() if res["changed"]} == GFX906_OK
    gets = [p for m, p, _ in handler.requests if m == "GET"]
    # one download per gfx906 host with a tree to fill (bad is refused before it downloads or after)
    assert set(gets) == {"/" + exported["path"]} and 2 <= len(gets) <= 3
    for h in GFX906_OK:
        (tx,) = fleet.status(h)["transactions"]
        assert tx["meta"]["artifact"]["url"] == f"{url}/pool/main/r/rocblas/{DEB}"
        assert tx["meta"]["artifact"]["sha256"] == exported["sha256"]
        assert not (fleet.root(h) / "var/cache/rocmrevive-export").exists()  # served, not copied


# ---- the collection itself ---------------------------------------------------------------------

def test_collection_unit_tests(template, ansible_venv, tmp_path):
    """The modules' unit tests (tests/unit in the collection), run by the venv's pytest with the
    real CLI and two machines of the template."""
    hosts = tmp_path / "hosts"
    hosts.mkdir()
    for name in ("mi50", "nogpu", "manifests"):
        shutil.copytree(template / name, hosts / name, symlinks=True)
    shutil.copy(template / DEB, hosts / DEB)
    env = _env(ansible_venv, tmp_path)
    env.update(ROCMREVIVE_TEST_HOSTS=str(hosts), ROCMREVIVE_TEST_CLI=str(_cli(tmp_path / "bin/rocmrevive")),
               PYTHONDONTWRITEBYTECODE="1")
    r = subprocess.run([str(ansible_venv / "bin/python"), "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        str(COLLECTION / "tests/unit")], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    m = re.search(r"(\d+) passed", r.stdout)
    assert m and int(m.group(1)) >= 10 and "skipped" not in r.stdout, r.stdout[-2000:]


def test_ansible_doc_shows_the_modules(ansible_venv, installed_collection, tmp_path):
    env = _env(ansible_venv, tmp_path)
    env["ANSIBLE_COLLECTIONS_PATH"] = str(installed_collection)
    r = subprocess.run([str(ansible_venv / "bin/ansible-doc"), "--json", "rocmrevive.gfx906.gfx906_patch",
                        "rocmrevive.gfx906.facts"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    docs = json.loads(r.stdout)
    patch = docs["rocmrevive.gfx906.gfx906_patch"]
    assert set(patch["doc"]["options"]["state"]["choices"]) == {"present", "absent", "verified"}
    assert patch["doc"]["options"]["source"]["aliases"] == ["from"]
    assert patch["doc"]["attributes"]["check_mode"]["support"] == "full"
    assert {"msg", "rc", "copies", "files"} <= set(patch["return"])
    assert "rocmrevive.gfx906.gfx906_patch:" in patch["examples"]
    assert "rocmrevive" in docs["rocmrevive.gfx906.facts"]["return"]["ansible_facts"]["contains"]
    r = subprocess.run([str(ansible_venv / "bin/ansible-doc"), "rocmrevive.gfx906.gfx906_patch"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "state" in r.stdout and "check_mode" in r.stdout


def test_the_old_module_name_still_works_with_a_deprecation_warning(template, ansible_venv, installed_collection,
                                                                    tmp_path):
    """`patch` was renamed `gfx906_patch` (in short form `patch` is ansible.posix.patch): the old
    full name is redirected by meta/runtime.yml and warns."""
    base = tmp_path / "old"
    shutil.copytree(template / "nogpu", base / "nogpu", symlinks=True)
    (base / "play.yml").write_text(
        "- hosts: localhost\n  gather_facts: false\n  tasks:\n"
        "    - rocmrevive.gfx906.patch:\n        state: verified\n"
        f"        root: {base / 'nogpu'}\n        rocmrevive_bin: {template / 'bin/rocmrevive'}\n"
        "      register: old\n"
        "    - ansible.builtin.assert:\n        that: [old.supported == false, old.rc == 3]\n")
    env = _env(ansible_venv, base)
    env.update(ANSIBLE_COLLECTIONS_PATH=str(installed_collection), ANSIBLE_DEPRECATION_WARNINGS="1")
    r = subprocess.run([str(ansible_venv / "bin/ansible-playbook"), "-i", "localhost,", "-c", "local",
                        "-e", "ansible_python_interpreter={{ ansible_playbook_python }}", str(base / "play.yml")],
                       capture_output=True, text=True, env=env, cwd=base)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-3000:]
    assert "rocmrevive.gfx906.gfx906_patch" in out and "deprecated" in out.lower(), out[-3000:]
