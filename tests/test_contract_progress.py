"""Install shows real progress (issue 16, "Honest, complete output"): the core reports its stages
through a callback (downloading bytes, extracting members, verifying checks) with real counts,
the CLI draws them on a terminal only, and every bar is closed before the `apply?` prompt."""
from __future__ import annotations

import re
import subprocess

import pytest

from tests.fixtures.fetched import gfx906_files, manifests_for_fetched
from tests.test_contract_readonly import rr, source  # noqa: F401  (source: pytest's fixture)
from tests.test_contract_terminal import RR, Pty, machine  # noqa: F401  (machine: pytest's fixture)
from tests.test_install import tree_hash

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\r")


def _plain(text: str) -> str:
    return ANSI.sub("\n", text)


def _declined_install(argv: list[str], timeout: float = 400) -> str:
    """``rocmrevive ARGV`` on a real pseudo-terminal of 100 columns, answered ``n`` at the apply
    prompt (waited for up to ``timeout`` seconds); the exit status must be 0. Returns all it drew."""
    t = Pty(RR + argv, cols=100)
    t.read_until("apply? [Y/n]", timeout=timeout)
    t.send("n\n")
    rc, out = t.finish()
    assert rc == 0, out[-2000:]
    return out


def test_the_terminal_shows_members_and_checks_then_no_bar_under_the_prompt(machine):
    root, args = machine
    before = tree_hash(root)
    out = _declined_install(["--root", str(root), "install", *args])
    head, prompt, after = out.partition("apply? [Y/n]")
    assert prompt, out[-2000:]
    shown = _plain(head)
    # the demo source selects 9 gfx906 members; one device, three checks on the staged overlay
    members = re.findall(r"extracting.*?(\d+)/(\d+) members", shown)
    checks = re.findall(r"verifying.*?(\d+)/(\d+) checks", shown)
    assert ("9", "9") in members, shown[-2000:]
    assert checks and checks[-1][0] == checks[-1][1] and int(checks[-1][1]) % 3 == 0, shown[-2000:]
    assert "0/? bytes" not in shown  # the stuck bar of the issue
    # nothing of a bar is drawn after the prompt: no stage name, no count, no cursor games
    for word in ("downloading", "extracting", "verifying", "members", "checks", "━"):
        assert word not in after, after
    assert tree_hash(root) == before


@pytest.mark.parametrize("flag", ["--no-progress", "-q"])
def test_no_bar_with_no_progress_or_quiet(machine, flag):
    root, args = machine
    out = _declined_install([flag, "--root", str(root), "install", *args])
    assert "members" not in out and "checks" not in out, out[-2000:]


def test_the_core_reports_its_stages_in_order_with_real_counts(machine):
    """In process, with a recording progress callback: downloading (or the --from copy) bytes,
    then extracting members, then verifying checks; each stage ends with done == total."""
    from rocmrevive.install.pipeline import install
    from rocmrevive.install.run import InstallOptions
    from rocmrevive.rootfs import Root

    root, args = machine
    opts = dict(zip(args[0::2], args[1::2]))
    seen: list[tuple[str, int, int | None, str]] = []
    rep = install(Root(root), InstallOptions(manifests_dir=opts["--manifests"], from_path=opts["--from"],
                                             cache=opts["--cache"], check=True),
                  progress=lambda stage, done, total, unit: seen.append((stage, done, total, unit)))
    (copy,) = rep.copies
    assert copy.status == "planned", copy.reason
    order = [s for i, (s, *_r) in enumerate(seen) if i == 0 or seen[i - 1][0] != s]
    assert order[-2:] == ["extracting", "verifying"], order
    assert set(order) <= {"downloading", "extracting", "verifying"} and len(order) == len(set(order)), order
    units = {s: u for s, _d, _t, u in seen}
    assert units["extracting"] == "members" and units["verifying"] == "checks"
    for stage in order:
        done, total = [(d, t) for s, d, t, _u in seen if s == stage][-1]
        assert done == total, (stage, done, total)
        dones = [d for s, d, _t, _u in seen if s == stage]
        assert dones == sorted(dones), (stage, dones)
    assert [(d, t) for s, d, t, _u in seen if s == "extracting"][-1] == (9, 9)
    assert copy.verify_staged is not None
    devices = len(copy.verify_staged.devices)
    assert [(d, t) for s, d, t, _u in seen if s == "verifying"][-1] == (3 * devices, 3 * devices)


def test_an_install_refused_by_the_dpkg_lock_says_nothing_was_changed(machine):
    import fcntl

    root, args = machine
    lock = root / "var/lib/dpkg/lock-frontend"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.touch()
    before = tree_hash(root)
    with open(lock, "r+") as f:
        fcntl.lockf(f, fcntl.LOCK_EX)
        # the lock is held by another process (this one): a child sees it as taken
        r = rr(root, "install", "--yes", *args)
    assert r.returncode == 7, r.stderr
    assert "package manager" in r.stderr and "nothing was changed" in r.stderr, r.stderr
    assert tree_hash(root) == before


def test_pipes_draw_nothing(machine):
    root, args = machine
    r = subprocess.run(RR + ["--root", str(root), "install", "--check", *args], capture_output=True, text=True,
                       env=__import__("tests.test_contract_readonly", fromlist=["env"]).env())
    assert "members" not in r.stderr and "━" not in r.stderr, r.stderr


def test_the_real_280_mb_package_shows_its_140_members_and_its_checks_before_the_prompt(
        tmp_path, debian_debs, debian_pkgs):
    """Debian's real librocblas4 .deb with the shipped manifest, on a real pseudo-terminal: the
    extraction counts the package's gfx906 members (140 in 6.4.4-4), the checks end at N/N, and no bar is drawn after
    the prompt; `n` changes nothing."""
    from tests.machines.build import build_amd_layout_from_debian

    root = build_amd_layout_from_debian(tmp_path / "m", debian_pkgs["librocblas4_6.4.4-4_amd64"])
    before = tree_hash(root / "opt")
    deb = debian_debs["librocblas4_6.4.4-4_amd64"]
    n = str(len(gfx906_files(debian_pkgs["librocblas4_6.4.4-4_amd64"] / "usr/lib/x86_64-linux-gnu/rocblas/4.4.1/library")))
    out = _declined_install(["--root", str(root), "install", "--no-libraries", "--from", str(deb),
                             "--manifests", str(manifests_for_fetched(tmp_path)),
                             "--cache", str(tmp_path / "cache")], timeout=500)
    head, prompt, after = out.partition("apply? [Y/n]")
    assert prompt, out[-2000:]
    shown = _plain(head)
    assert (n, n) in re.findall(r"extracting.*?(\d+)/(\d+) members", shown), shown[-2000:]
    checks = re.findall(r"verifying.*?(\d+)/(\d+) checks", shown)
    assert checks and checks[-1][0] == checks[-1][1] != "0", shown[-2000:]
    assert "0/? bytes" not in shown
    for word in ("downloading", "extracting", "verifying", "members", "checks", "━"):
        assert word not in after, after
    assert tree_hash(root / "opt") == before
