"""/etc/rocmrevive/config.toml: a one-time mirror/cache/state setting read by every command (under
--root), with options on the command line still winning. An Ubuntu host's apt configuration names
no Debian mirror: `fetch` fails with a usage error until the config file names one; then it
downloads from a real HTTP server on 127.0.0.1 into the configured cache."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rocmrevive.cli.main import cli
from rocmrevive.config import load
from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from tests.conftest import REPO
from tests.test_fetch import server, world  # noqa: F401  (pytest fixtures: the apt world on 127.0.0.1)


@pytest.fixture()
def ubuntu(tmp_path, world):
    """A machine whose apt configuration is an Ubuntu host's (no Debian mirror), plus a manifest folder."""
    root = tmp_path / "machine"
    (root / "etc/apt/sources.list.d").mkdir(parents=True)
    (root / "etc/apt/sources.list.d/ubuntu.sources").write_text(
        "Types: deb\nURIs: http://127.0.0.1:9/ubuntu\nSuites: noble noble-updates\nComponents: main universe\n")
    (root / "etc/rocmrevive").mkdir()
    mdir = root / "etc/rocmrevive/manifests"
    mdir.mkdir()
    (mdir / "test.toml").write_text(world.manifest_text("http://127.0.0.1:9"))
    return root


def _run(root, *args):
    res = CliRunner().invoke(cli, ["--json", "--root", str(root), *args], catch_exceptions=False)
    return res.exit_code, json.loads(res.output)


def _config(root: Path, text: str) -> None:
    (root / "etc/rocmrevive/config.toml").write_text(text)
    os.chmod(root / "etc/rocmrevive/config.toml", 0o644)


def test_ubuntu_host_needs_a_mirror_once_then_fetch_works(ubuntu, server, world):
    code, doc = _run(ubuntu, "fetch", "--manifests", str(ubuntu / "etc/rocmrevive/manifests"),
                     "--source", "debian-librocblas4")
    assert code == 2, doc
    assert "--mirror" in doc["error"]["message"] and "/etc/rocmrevive/config.toml" in doc["error"]["message"]

    _config(ubuntu, f'mirror = "{server.url}/debian"\ncache = "/srv/rr-cache"\n'
                    f'manifests = "/etc/rocmrevive/manifests"\n')
    code, doc = _run(ubuntu, "fetch", "--source", "debian-librocblas4")
    assert code == 0, doc
    assert doc["mirror"] == f"{server.url}/debian"
    assert doc["cache"] == str(ubuntu / "srv/rr-cache")           # a machine path, read under --root
    assert doc["manifests"][0]["sources"][0]["status"] == "downloaded"
    sha = world.debian.package("librocblas4").sha256
    assert (ubuntu / "srv/rr-cache/sha256" / sha).is_file()
    assert server.gets("/debian/" + world.debian.package("librocblas4").filename)


def test_an_option_on_the_command_line_wins(ubuntu, server, tmp_path):
    _config(ubuntu, f'mirror = "{server.url}/debian"\nmanifests = "/etc/rocmrevive/manifests"\n')
    n = len(server.requests)
    code, doc = _run(ubuntu, "fetch", "--source", "debian-librocblas4", "--mirror", "http://127.0.0.1:9/debian",
                     "--cache", str(tmp_path / "other-cache"))
    assert code == 5, doc                                           # the given mirror (nothing listens there)
    assert doc["error"]["code"] == "NETWORK" and "127.0.0.1:9" in doc["error"]["message"]
    assert len(server.requests) == n                                # the configured one was not asked


def test_state_dir_from_the_config_is_where_status_looks(ubuntu):
    _config(ubuntu, 'state_dir = "/srv/rr-state"\n')
    (ubuntu / "srv/rr-state/tx").mkdir(parents=True)
    code, doc = _run(ubuntu, "status")
    assert code == 0, doc
    assert doc["state_dir"] == "/srv/rr-state"


@pytest.mark.parametrize("text, words", [
    ('mirror = "ftp://x"\n', ["mirror = 'ftp://x' is not an http://", "fix mirror in /etc/rocmrevive/config.toml"]),
    ('mirror = 3\n', ["mirror must be a non-empty string"]),
    ('cache = "relative/dir"\n', ["must be an absolute path"]),
    ('mirror = "http://x\n', ["not valid TOML", "line 1"]),
])
def test_a_bad_config_is_one_usage_line_and_nothing_runs(ubuntu, text, words):
    _config(ubuntu, text)
    code, doc = _run(ubuntu, "status")
    assert code == 2, doc
    msg = doc["error"]["message"]
    assert msg.startswith("/etc/rocmrevive/config.toml: ")
    for w in words:
        assert w in msg
    # the same without --json: one line on stderr
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(ubuntu), "detect"],
                       capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 2 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "config.toml" in r.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="the ownership rule applies when rocmrevive runs as root")
def test_a_config_others_may_write_is_refused_as_root(ubuntu):
    _config(ubuntu, 'mirror = "http://127.0.0.1:9/debian"\n')
    os.chmod(ubuntu / "etc/rocmrevive/config.toml", 0o666)
    with pytest.raises(RevError) as ei:
        load(Root(ubuntu))
    assert ei.value.code == "PERMISSION" and "chmod 644" in ei.value.message
    os.chmod(ubuntu / "etc/rocmrevive/config.toml", 0o644)
    os.chown(ubuntu / "etc/rocmrevive/config.toml", 1000, 1000)
    with pytest.raises(RevError) as ei:
        load(Root(ubuntu))
    assert "owned by uid 1000" in ei.value.message


def test_a_link_out_of_the_root_is_read_inside_it(ubuntu, tmp_path):
    outside = tmp_path / "outside.toml"
    outside.write_text('mirror = "http://evil/"\n')
    (ubuntu / "etc/rocmrevive/config.toml").symlink_to(outside)   # absolute: resolved under the root
    assert load(Root(ubuntu)).values == {}


def test_no_config_file_changes_nothing(tmp_path):
    cfg = load(Root(tmp_path))
    assert cfg.file is None and cfg.options == {}


def test_a_bad_mirror_in_the_file_is_named_as_the_files_setting_not_as_an_option(ubuntu):
    _config(ubuntu, 'mirror = "deb.example.org/debian"\n')
    for cmd in (["fetch", "--source", "debian-librocblas4"], ["detect"]):
        code, doc = _run(ubuntu, *cmd)
        msg = doc["error"]["message"]
        assert code == 2 and "--mirror" not in msg, doc
        assert "mirror = 'deb.example.org/debian'" in msg and "mirror in /etc/rocmrevive/config.toml" in msg


def test_an_unknown_key_warns_readers_and_stops_writers_both_with_did_you_mean(ubuntu, tmp_path):
    _config(ubuntu, 'mirorr = "http://127.0.0.1:9/debian"\n')
    for cmd in (["status"], ["detect"], ["explain", "hipErrorNoBinaryForGpu"]):
        code, doc = _run(ubuntu, *cmd)
        assert doc["error"] is None or doc["error"]["code"] != "USAGE", (cmd, doc)
        (w,) = [w for w in doc["warnings"] if "config.toml" in w]
        assert "unknown setting 'mirorr'" in w and "did you mean 'mirror'?" in w
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(ubuntu), "status"],
                       capture_output=True, text=True, cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert r.returncode == 0 and "warning: /etc/rocmrevive/config.toml: unknown setting 'mirorr'" in r.stderr
    before = sorted(p for p in ubuntu.rglob("*"))
    for cmd in (["fetch", "--source", "debian-librocblas4"], ["install", "--target", "gfx906", "--yes"],
                ["rollback"]):
        code, doc = _run(ubuntu, *cmd)
        assert code == 2 and doc["error"]["code"] == "USAGE", (cmd, doc)
        assert "did you mean 'mirror'?" in doc["error"]["message"] and "changed nothing" in doc["error"]["message"]
    assert sorted(p for p in ubuntu.rglob("*")) == before
