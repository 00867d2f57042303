"""Shared fixtures: Debian's real ROCm packages, fetched once into a cache outside the repo."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest

# A run started in the background without job control (`make test &`, nohup) inherits SIGINT
# ignored, and every rocmrevive the tests start would too: the Ctrl-C tests (a real SIGINT at the
# prompt, the kill seam's INT) would then see nothing happen. Put the default back for the children.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

REPO = Path(__file__).resolve().parent.parent
CACHE = Path(os.environ.get("ROCMREVIVE_TEST_CACHE", "/var/tmp/rocmrevive-test-cache"))

TRIPLET = "usr/lib/x86_64-linux-gnu"


def _ensure_debian() -> tuple[dict[str, Path], dict[str, Path]]:
    """The pinned "rocm" packages (tests/fixtures/debian-packages.txt), fetched when a cached
    file does not match its pin, and unpacked once per package (tests/fixtures/fixcache.py)."""
    from tests.fixtures import fixcache

    debs_dir = CACHE / "debs"
    missing = [p for p in fixcache.pins("rocm") if not fixcache.deb_ok(debs_dir / p.deb, p)]
    if missing:
        # a pin its suite no longer serves is replaced by the suite's current version (drift)
        subprocess.run(["bash", str(REPO / "tests/fixtures/fetch_debian.sh"), "--set", "rocm"], check=True)
    debs, dirs = {}, {}
    for pinned in fixcache.pins("rocm", drift=False):
        p = fixcache.drifted(pinned) or pinned
        deb = debs_dir / p.deb
        # under the pinned name too: a test that takes its expectations from the content still runs
        for base in dict.fromkeys([pinned.deb[:-4], p.deb[:-4]]):
            debs[base], dirs[base] = deb, fixcache.unpacked(deb)
    return debs, dirs


@pytest.fixture(scope="session")
def debian_pkgs() -> dict[str, Path]:
    """Unpacked Debian packages: name -> folder (as `dpkg-deb -x` made it)."""
    return _ensure_debian()[1]


@pytest.fixture(scope="session")
def debian_debs() -> dict[str, Path]:
    """The real .deb files: name -> path."""
    return _ensure_debian()[0]


@pytest.fixture(scope="session")
def rocblas441(debian_pkgs) -> Path:
    """Debian's rocBLAS 4.4.1 Tensile library folder (1,349 files)."""
    return debian_pkgs["librocblas4_6.4.4-4_amd64"] / TRIPLET / "rocblas/4.4.1/library"


@pytest.fixture(scope="session")
def rocblas52(debian_pkgs) -> Path:
    """Debian's rocBLAS 5.2 (7.2.4) Tensile library folder (1,897 files; .co are CCOB v3)."""
    return debian_pkgs["librocblas5_7.2.4-1~exp1_amd64"] / TRIPLET / "rocblas/5/library"


@pytest.fixture(scope="session")
def rocblas247(debian_pkgs) -> Path:
    """Debian's rocBLAS 2.47 (librocblas0 5.5.1) Tensile library folder: built without lazy
    loading (one TensileLibrary.dat for 10 architectures, TensileLibrary_<arch>.co; 21 files)."""
    return debian_pkgs["librocblas0_5.5.1+dfsg-7_amd64"] / TRIPLET / "rocblas/2.47.0/library"


@pytest.fixture(scope="session")
def codeobjects():
    """Real compiled code objects, bundles, CCOBs and host libraries (tests/fixtures/codeobjects.py)."""
    from tests.fixtures.codeobjects import session_fixtures

    return session_fixtures()


@pytest.fixture(scope="session")
def llama_bin() -> Path:
    """The folder holding llama.cpp's llama-bench and llama-completion, built once (tests/fixtures/llama.py)."""
    from tests.fixtures.llama import ensure_llama_bin

    bin_dir, problem = ensure_llama_bin()
    if bin_dir is None:
        pytest.skip(problem)
    return bin_dir


# ---------------------------------------------------------------------------------------------
# the skip policy: every skip reason is shown (-rs) and a reason not on tests/skip_policy.py's
# reviewed list fails the run, whether it runs through `make test` or a plain `pytest`

_unexpected_skips: list[tuple[str, str]] = []


def pytest_configure(config):
    chars = config.option.reportchars or ""
    if "s" not in chars and "a" not in chars and "A" not in chars:
        config.option.reportchars = chars + "s"


def _skip_reason(report) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) else str(longrepr)
    return text[len("Skipped: "):] if text.startswith("Skipped: ") else text


def pytest_runtest_logreport(report):
    if report.skipped and not hasattr(report, "wasxfail"):
        from tests.skip_policy import allowed

        reason = _skip_reason(report)
        if not allowed(reason):
            _unexpected_skips.append((report.nodeid, reason))


def pytest_terminal_summary(terminalreporter):
    from tests.fixtures import fixcache

    drifted = fixcache.drifts()
    if drifted:   # Debian moved on: say which packages the tests ran on instead of their pins
        terminalreporter.section("Debian packages that stood in for their pins", yellow=True)
        for line in drifted:
            terminalreporter.line(line)
    if _unexpected_skips:
        terminalreporter.section("skips not on the reviewed list (tests/skip_policy.py)", red=True)
        for nodeid, reason in _unexpected_skips:
            terminalreporter.line(f"{nodeid}: {reason}")
        terminalreporter.line("A missing tool is installed (scripts/setup-system.sh), never skipped.")


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session, exitstatus):
    if _unexpected_skips and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
