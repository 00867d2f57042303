"""The opt-in apt hook (issue 9, surviving upgrades): `rocmrevive hook install|remove|status|run`.

Real parts: the hook file is read by the real `apt-config`, the command apt would run is run by
/bin/sh exactly as written, the package manager's lock is a real fcntl lock on
/var/lib/dpkg/lock-frontend (what apt holds while its Post-Invoke hooks run), and the rocBLAS
files come from a real .deb through a real install transaction."""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.install.hooks import HookConfig, parse, render
from tests.conftest import REPO
from tests.machines.build import build
from tests.test_ansible import DEB, LIB, _manifest, tree_hash

sys.path.insert(0, str(REPO / "demo"))
import minirocblas as mr  # noqa: E402

HOOK = "etc/apt/apt.conf.d/99rocmrevive"


def _cli(path: Path) -> Path:
    """The CLI as apt would run it. Registers `hook` if this checkout's cli/main.py does not yet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"#!/bin/sh\nPYTHONPATH={REPO}${{PYTHONPATH:+:$PYTHONPATH}} exec {sys.executable} -c "
        "'from rocmrevive.cli import main as m; m.COMMANDS.setdefault(\"hook\", (\"rocmrevive.cli.hook:hook\", "
        "\"The apt hook.\")); m.main()' \"$@\"\n")
    path.chmod(0o755)
    return path


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    base = tmp_path_factory.mktemp("hook-source")
    deb = Path(mr.build_source_deb(base / DEB)["path"])
    _manifest(base / "manifests", deb)
    return base


@pytest.fixture
def machine(tmp_path, source):
    """A dual-MI50 machine with apt's configuration folder (and another file in it), ROCm 6.4.3
    whose rocBLAS lacks gfx906, and the CLI."""
    root = build("dual-mi50", tmp_path / "m")
    mr.build_tree(root, rocm_version="6.4.3", arches_present=("gfx908",), replace=True)
    conf = root / "etc/apt/apt.conf.d"
    conf.mkdir(parents=True)
    (conf / "20auto-upgrades").write_text('APT::Periodic::Update-Package-Lists "1";\n')
    (root / "var/lib/dpkg").mkdir(parents=True, exist_ok=True)
    cli = _cli(tmp_path / "bin/rocmrevive")
    install_args = ["--from", str(source / DEB), "--manifests", str(source / "manifests"),
                    "--cache", str(tmp_path / "cache")]
    return root, cli, install_args


def rr(cli: Path, root: Path, *args, rc=None) -> subprocess.CompletedProcess:
    r = subprocess.run([str(cli), "--root", str(root), *args], capture_output=True, text=True,
                       env={**os.environ, "NO_COLOR": "1"})
    if rc is not None:
        assert r.returncode == rc, (r.returncode, r.stdout[-2000:], r.stderr[-2000:])
    return r


def apt_hook_commands(root: Path) -> list[str]:
    """The DPkg::Post-Invoke commands apt reads from the hook file (apt-config, apt.conf(5))."""
    r = subprocess.run(["apt-config", "-c", str(root / HOOK), "dump"], capture_output=True, text=True, check=True)
    prefix = 'DPkg::Post-Invoke:: "'
    return [line[len(prefix):-2] for line in r.stdout.splitlines()
            if line.startswith(prefix) and "hook run" in line]


def run_as_apt(root: Path, command: str) -> subprocess.CompletedProcess:
    """What apt does after dpkg: /bin/sh -c COMMAND (the machine in a folder via ROCMREVIVE_ROOT)."""
    return subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True,
                          env={**os.environ, "ROCMREVIVE_ROOT": str(root), "NO_COLOR": "1"}, timeout=60)


def test_install_status_remove_round_trip(machine):
    root, cli, _ = machine
    before = tree_hash(root / "etc")
    doc = json.loads(rr(cli, root, "--json", "hook", "install", "--bin", str(cli), rc=0).stdout)
    assert doc["changed"] is True and doc["txid"] and doc["mode"] == "warn"
    text = (root / HOOK).read_text()
    assert text == doc["content"] and parse(text).bin == [str(cli)]
    (cmd,) = apt_hook_commands(root)
    assert cmd == f"if [ -x {cli} ]; then {cli} hook run --mode warn || true; fi" == doc["command"]
    assert (root / HOOK).stat().st_mode & 0o777 == 0o644  # like the folder's other files

    doc = json.loads(rr(cli, root, "--json", "hook", "install", "--bin", str(cli), rc=0).stdout)
    assert doc["changed"] is False and doc["state"] == "unchanged" and doc["txid"] is None
    st = json.loads(rr(cli, root, "--json", "hook", "status", rc=0).stdout)
    assert st["installed"] and st["intact"] is True and st["config"]["mode"] == "warn"
    assert len(st["transactions"]) == 1 and st["findings"] == []

    # switching to reapply is a second transaction (a replace); remove undoes both
    doc = json.loads(rr(cli, root, "--json", "hook", "install", "--reapply", "--bin", str(cli),
                        "--from", "/srv/export", rc=0).stdout)
    assert doc["changed"] is True and [a["op"] for a in doc["actions"]] == ["replace"]
    (cmd,) = apt_hook_commands(root)
    assert cmd.endswith("hook run --mode reapply -- --from /srv/export || true; fi")

    dry = json.loads(rr(cli, root, "--json", "hook", "remove", "--dry-run", rc=0).stdout)
    assert dry["changed"] is False and (root / HOOK).exists()
    doc = json.loads(rr(cli, root, "--json", "hook", "remove", rc=0).stdout)
    assert doc["changed"] is True and [t["actions"][0]["op"] for t in doc["transactions"]] == ["restore", "remove"]
    assert not (root / HOOK).exists() and tree_hash(root / "etc") == before
    doc = json.loads(rr(cli, root, "--json", "hook", "remove", rc=0).stdout)
    assert doc["changed"] is False and doc["transactions"] == []
    assert "not installed" in rr(cli, root, "hook", "status", rc=0).stdout


def test_hook_journal_is_apart_from_the_installs(machine):
    """`rocmrevive rollback` undoes the last rocBLAS install, never the hook; status lists trees only."""
    root, cli, install_args = machine
    rr(cli, root, "--json", "install", "--yes", *install_args, rc=0)
    rr(cli, root, "hook", "install", "--bin", str(cli), rc=0)
    doc = json.loads(rr(cli, root, "--json", "rollback", rc=0).stdout)
    assert doc["tree"] == LIB and doc["changed"] is True
    assert (root / HOOK).is_file()
    st = json.loads(rr(cli, root, "--json", "status", rc=0).stdout)
    assert [t["tree"] for t in st["trees"]] == [LIB]


def test_an_edited_hook_is_kept_unless_forced(machine):
    root, cli, _ = machine
    rr(cli, root, "hook", "install", "--bin", str(cli), rc=0)
    with open(root / HOOK, "a") as f:
        f.write('// my own note\n')
    edited = (root / HOOK).read_bytes()
    st = json.loads(rr(cli, root, "--json", "hook", "status", rc=0).stdout)
    assert st["intact"] is False
    r = rr(cli, root, "hook", "remove", rc=8)
    assert "99rocmrevive" in r.stderr and "--force" in r.stderr
    assert (root / HOOK).read_bytes() == edited
    r = rr(cli, root, "hook", "remove", "--force", rc=0)
    assert not (root / HOOK).exists()
    kept = root / "var/lib/rocmrevive/hook/backups" / hashlib.sha256(edited).hexdigest()
    assert kept.read_bytes() == edited


def test_warns_after_a_dpkg_run_took_the_files(machine):
    root, cli, install_args = machine
    rr(cli, root, "--json", "install", "--yes", *install_args, rc=0)
    rr(cli, root, "hook", "install", "--bin", str(cli), rc=0)
    (cmd,) = apt_hook_commands(root)
    r = run_as_apt(root, cmd)
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""  # all in place: silent

    lib = root / LIB.lstrip("/")
    for f in lib.glob("*gfx906*"):  # what an upgrade of the rocblas package does
        f.unlink()
    r = run_as_apt(root, cmd)
    assert r.returncode == 0
    assert f"rocmrevive hook: {LIB} lost 9 gfx906 files rocmrevive installed (transaction 0001-" in r.stdout
    assert "run `rocmrevive install`" in r.stdout and not list(lib.glob("*gfx906*"))

    shutil.rmtree(root / "opt/rocm-6.4.3")  # an upgrade to another ROCm release
    r = run_as_apt(root, cmd)
    assert r.returncode == 0 and f"{LIB} is gone" in r.stdout and "rocmrevive rollback 0001-" in r.stdout


def test_reapply_waits_for_apt_then_installs_again(machine, tmp_path):
    root, cli, install_args = machine
    rr(cli, root, "--json", "install", "--yes", *install_args, rc=0)
    lib = root / LIB.lstrip("/")
    installed = {f.name: f.read_bytes() for f in lib.glob("*gfx906*")}
    rr(cli, root, "hook", "install", "--reapply", "--bin", str(cli), *install_args, rc=0)
    (cmd,) = apt_hook_commands(root)
    for f in lib.glob("*gfx906*"):
        f.unlink()

    fd = os.open(root / "var/lib/dpkg/lock-frontend", os.O_RDWR | os.O_CREAT, 0o640)
    try:
        fcntl.lockf(fd, fcntl.LOCK_EX)  # apt holds it while DPkg::Post-Invoke runs
        t0 = time.monotonic()
        r = run_as_apt(root, cmd)
        assert r.returncode == 0 and time.monotonic() - t0 < 20  # apt is not kept waiting
        assert "re-installing in the background once apt has finished" in r.stdout
        time.sleep(2.0)
        assert not list(lib.glob("*gfx906*"))  # nothing written while apt holds its lock
    finally:
        os.close(fd)  # apt finishes
    log = root / "var/log/rocmrevive/hook.log"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "install exited" not in (log.read_text() if log.exists() else ""):
        time.sleep(0.2)
    text = log.read_text()
    assert f"install exited 0: {LIB}: installed" in text, text
    assert {f.name: f.read_bytes() for f in lib.glob("*gfx906*")} == installed
    rr(cli, root, "verify", rc=0)
    st = json.loads(rr(cli, root, "--json", "status", rc=0).stdout)
    assert st["trees"][0]["state"] == "intact" and len(st["transactions"]) == 2


def test_reapply_never_writes_its_log_through_a_link(machine, tmp_path):
    """A link at the hook's log: the re-install is not started, apt goes on (exit 0), the hook
    says why in one line, and the file the link names is untouched."""
    root, cli, install_args = machine
    rr(cli, root, "--json", "install", "--yes", *install_args, rc=0)
    rr(cli, root, "hook", "install", "--reapply", "--bin", str(cli), *install_args, rc=0)
    (cmd,) = apt_hook_commands(root)
    lib = root / LIB.lstrip("/")
    for f in lib.glob("*gfx906*"):
        f.unlink()
    victim = tmp_path / "victim"
    victim.write_text("not a log\n")
    log = root / "var/log/rocmrevive/hook.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(victim, log)
    r = run_as_apt(root, cmd)
    assert r.returncode == 0 and f"{LIB} lost 9 gfx906 files" in r.stdout, r
    (line,) = [x for x in r.stdout.splitlines() if "could not" in x]
    assert line.startswith("rocmrevive hook: could not start the re-install: ") and "symbolic link" in line
    assert victim.read_text() == "not a log\n" and "re-installing" not in r.stdout
    assert not list(lib.glob("*gfx906*"))


def test_needs_apt(machine):
    root, cli, _ = machine
    shutil.rmtree(root / "etc/apt")
    r = rr(cli, root, "hook", "install", "--bin", str(cli), rc=3)
    assert "apt-based systems" in r.stderr


def test_hook_config_is_safe_in_apt_syntax():
    cfg = HookConfig(mode="reapply", bin=["/usr/local/bin/rocmrevive"], install_args=["--from", "/srv/a b"])
    assert parse(render(cfg)) == cfg
    assert "'/srv/a b'" in cfg.shell_command()
    with pytest.raises(RevError) as e:
        HookConfig(bin=["/usr/bin/rocmrevive"], install_args=["--from", '/srv/"x"'])
    assert e.value.code == "USAGE"
    with pytest.raises(RevError):
        HookConfig(bin=["rocmrevive"])  # apt's PATH is not the user's: an absolute path
    with pytest.raises(RevError):
        HookConfig(mode="sometimes", bin=["/usr/bin/rocmrevive"])
    assert parse("DPkg::Post-Invoke { \"true\"; };\n") is None


def test_the_hook_names_the_rocmrevive_that_ran_not_the_first_on_path(machine, tmp_path):
    """A console script (what pip/pipx install) started by its path, with another install's shim
    first on PATH: the hook records the script that ran. Started as `python -m`, it records that."""
    root, _, _ = machine
    script = tmp_path / "venv-a/bin/rocmrevive"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\n"
                      "from rocmrevive.cli.main import main\nsys.exit(main())\n")
    script.chmod(0o755)
    link = tmp_path / "local-bin/rocmrevive"                  # pipx's ~/.local/bin link
    link.parent.mkdir()
    link.symlink_to(script)
    shim = _cli(tmp_path / "other-install/bin/rocmrevive")    # another rocmrevive, first on PATH
    env = {**os.environ, "NO_COLOR": "1", "PATH": f"{shim.parent}:{os.environ['PATH']}"}
    for started in (script, link):
        r = subprocess.run([str(started), "--root", str(root), "--json", "hook", "install", "--dry-run"],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["config"]["bin"] == [str(script)]
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "--json", "hook",
                        "install", "--dry-run"], capture_output=True, text=True, cwd=REPO,
                       env={**env, "PYTHONPATH": str(REPO)})
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["config"]["bin"] == [sys.executable, "-m", "rocmrevive.cli.main"]
    assert not (root / HOOK).exists()
