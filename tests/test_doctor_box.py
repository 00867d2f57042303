"""Issue 44, doctor: HSA_OVERRIDE_GFX_VERSION named where it is set on a machine with a real
gfx906 (this process, /etc/environment, environment.d, systemd drop-ins of ollama/docker, a Docker
container's config, compose/env files); each card's vBIOS version with the known cases; MIOpen's
gfx906 databases per tree (doctor and audit). Driven by sysfs/etc fixtures on the catalog machines;
each verdict is shown to follow a change of the files (a mutation), and a FIFO or a link planted
where a file is read is refused without blocking."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmrevive.rootfs import Root
from rocmrevive.trees.miopen import read_tree
from tests.machines.build import build

VAR = "HSA_OVERRIDE_GFX_VERSION"


def doctor(root: Path, *args, env: dict | None = None) -> tuple[int, list[dict]]:
    e = {k: v for k, v in os.environ.items() if k != VAR}
    e.update({"NO_COLOR": "1", **(env or {})})
    r = subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(root), "--json", "doctor", *args],
                       capture_output=True, text=True, env=e, timeout=120)
    return r.returncode, json.loads(r.stdout)["findings"]


def ids(findings, *wanted) -> list[dict]:
    return [f for f in findings if f["id"] in wanted]


def write(p: Path, text: str) -> Path:
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


@pytest.fixture
def demo(tmp_path) -> Path:
    return build("dual-mi50", tmp_path / "m")


def test_override_named_in_every_place_it_is_set(demo):
    _rc, found = doctor(demo)
    assert ids(found, "hsa-override-set") == []
    places = {
        "/etc/environment": f"PATH=/usr/bin\n{VAR}=9.0.6\n",
        "/etc/environment.d/50-rocm.conf": f'{VAR}="9.0.6"\n',
        "/etc/systemd/system/ollama.service.d/override.conf": f'[Service]\nEnvironment="{VAR}=9.0.6"\n',
        "/etc/systemd/system/docker.service.d/gpu.conf": f'[Service]\nEnvironment={VAR}=9.0.6\n',
        "/var/lib/docker/containers/0123abcd/config.v2.json": json.dumps({"Config": {"Env": [f"{VAR}=9.0.6",
                                                                                               "PATH=/usr/bin"]}}),
        "/opt/ollama-stack/.env": f"{VAR}=9.0.6\n",
        "/home/alice/comfy/docker-compose.yml": f'services:\n  comfy:\n    environment:\n      {VAR}: "9.0.6"\n',
    }
    for path, text in places.items():
        write(demo / path.lstrip("/"), text)
    write(demo / "etc/profile.d/rocm.sh", f"# export {VAR}=9.0.6   (commented: not set)\n")
    rc, found = doctor(demo, env={VAR: "9.0.6"})
    got = {f["subject"]: f for f in ids(found, "hsa-override-set")}
    assert set(got) == set(places) | {"this process's environment"}, sorted(got)
    assert all(f["severity"] == "warning" and f["data"]["value"] == "9.0.6" for f in got.values())
    assert got["/etc/environment"]["data"]["line"] == 2
    assert "daemon-reload" in got["/etc/systemd/system/ollama.service.d/override.conf"]["fix"]
    assert "recreate the container" in got["/var/lib/docker/containers/0123abcd/config.v2.json"]["fix"]
    assert "hides the real cause" in got["/etc/environment"]["cause"]
    # another target's version on a real gfx906 is an error (doctor exits 11)
    write(demo / "etc/environment", f"{VAR}=10.3.0\n")
    rc, found = doctor(demo)
    (e,) = [f for f in ids(found, "hsa-override-set") if f["subject"] == "/etc/environment"]
    assert e["severity"] == "error" and "10.3.0" in e["message"] and rc == 11


def test_override_on_a_machine_without_gfx906_is_not_flagged(tmp_path):
    root = build("mi100-gfx908", tmp_path / "m")
    write(root / "etc/environment", f"{VAR}=9.0.6\n")
    _rc, found = doctor(root, env={VAR: "9.0.6"})
    assert ids(found, "hsa-override-set") == []


def test_a_fifo_or_link_where_an_override_is_read_is_refused_not_followed(demo, tmp_path):
    secret = write(tmp_path / "secret.conf", f"{VAR}=9.0.6\n")
    d = demo / "etc/systemd/system/ollama.service.d"
    d.mkdir(parents=True)
    (d / "link.conf").symlink_to(secret)
    os.mkfifo(demo / "etc/environment")
    write(tmp_path / "rootdir/proj/.env", f"{VAR}=9.0.6\n")         # a folder of root's ...
    (demo / "home/alice").mkdir(parents=True)
    (demo / "home/alice/proj").symlink_to(tmp_path / "rootdir/proj")  # ... planted as a user's folder
    t0 = time.monotonic()
    _rc, found = doctor(demo)
    assert time.monotonic() - t0 < 60
    assert ids(found, "hsa-override-set") == []          # the link is not followed, the FIFO not read
    causes = sorted(u["cause"] for u in ids(found, "hsa-override-unreadable"))
    assert len(causes) == 2 and "/etc/environment" in causes[0] and "/home/alice/proj/.env" in causes[1], causes
    assert "symbolic link" in causes[1]


def _card_dir(root: Path, bdf: str) -> Path:
    return (root / "sys/bus/pci/devices" / bdf).resolve()


def test_vbios_reported_per_card_with_the_known_cases(demo):
    _rc, found = doctor(demo)
    assert ids(found, "vbios", "vbios-partial-bar", "vbios-unreadable") == []   # no vbios_version file
    write(_card_dir(demo, "0000:19:00.0") / "vbios_version", "113-D1640200-043\n")
    write(_card_dir(demo, "0000:67:00.0") / "vbios_version", "113-D1631700-111\n")
    _rc, found = doctor(demo)
    v = {f["subject"]: f for f in ids(found, "vbios")}
    assert v["GPU0"]["data"]["vbios_version"] == "113-D1640200-043" and v["GPU0"]["data"]["cross_flashed"] is True
    assert "Radeon Pro V420" in v["GPU0"]["message"] and "lota09" in v["GPU0"]["cause"]
    assert v["GPU1"]["data"]["cross_flashed"] is False and "server vBIOS" in v["GPU1"]["message"]
    # both 32 GB cards expose 16 GiB: the vBIOS is named as the way to a full BAR (ROCm#4793)
    assert {f["subject"] for f in ids(found, "vbios-partial-bar")} == {"GPU0", "GPU1"}
    # an unknown version is reported as unknown; bytes that are no version are refused
    write(_card_dir(demo, "0000:67:00.0") / "vbios_version", "113-D9999999-001\n")
    (_card_dir(demo, "0000:19:00.0") / "vbios_version").write_bytes(b"\x1b[31m\x00evil")
    _rc, found = doctor(demo)
    (v1,) = ids(found, "vbios")
    assert v1["subject"] == "GPU1" and v1["data"]["known"] is None and "no record" in v1["cause"]
    (bad,) = ids(found, "vbios-unreadable")
    assert bad["subject"] == "GPU0" and "\x1b" not in json.dumps(found)
    # a FIFO is refused at once
    p = _card_dir(demo, "0000:19:00.0") / "vbios_version"
    p.unlink()
    os.mkfifo(p)
    _rc, found = doctor(demo)
    assert [f["subject"] for f in ids(found, "vbios-unreadable")] == ["GPU0"]


MIOPEN = "opt/rocm-6.4.3/lib/libMIOpen.so.1.0.60403"
DB = "opt/rocm-6.4.3/share/miopen/db"


def test_miopen_verdicts_follow_the_databases(demo):
    """No library: nothing said; the library without a db folder, with gfx908's only, with the
    gfx906 kdb only, and with kdb + find-db + perf-db: each verdict seen in doctor and audit."""
    def verdicts() -> tuple[list, list]:
        _rc, found = doctor(demo)
        doc = json.loads(subprocess.run([sys.executable, "-m", "rocmrevive.cli.main", "--root", str(demo), "--json",
                                         "audit", "--no-programs"], capture_output=True, text=True).stdout)
        return ([(f["id"], f["severity"], f["data"]["verdict"]) for f in found if f["id"].startswith("miopen")],
                [(t["prefix"], t["verdict"]) for t in doc["miopen"]])

    assert verdicts() == ([], [])
    write(demo / MIOPEN, "placeholder")
    tree = "/opt/rocm-6.4.3"
    assert verdicts() == ([("miopen-no-gfx906-db", "warning", "no-db-folder")], [(tree, "no-db-folder")])
    write(demo / DB / "gfx908_120.kdb", "x")
    write(demo / DB / "gfx908_120.HIP.fdb.txt", "x")
    assert verdicts() == ([("miopen-no-gfx906-db", "warning", "no-gfx906-db")], [(tree, "no-gfx906-db")])
    t = read_tree(Root(demo), tree)
    assert t.other_targets == ("gfx908",) and "Missing system database file: gfx906_<CUs>.kdb" in t.costs
    write(demo / DB / "gfx906_60.kdb", "x")
    assert verdicts() == ([("miopen-partial-gfx906-db", "warning", "partial")], [(tree, "partial")])
    write(demo / DB / "gfx906_60.HIP.fdb.txt", "x")
    write(demo / DB / "gfx906_60.db", "x")
    assert verdicts() == ([("miopen-gfx906-db", "info", "complete")], [(tree, "complete")])
    _rc, found = doctor(demo)
    (f,) = [f for f in found if f["id"] == "miopen-gfx906-db"]
    assert f["data"]["kdb"] == ["gfx906_60.kdb"] and f["data"]["perf_db"] == ["gfx906_60.db"]
    # a database planted as a link does not count
    (demo / DB / "gfx906_60.kdb").unlink()
    (demo / DB / "gfx906_60.kdb").symlink_to("/etc/passwd")
    assert verdicts()[1] == [(tree, "partial")]


def test_miopen_without_a_source_says_so(demo):
    write(demo / MIOPEN, "placeholder")
    _rc, found = doctor(demo)
    (f,) = [f for f in found if f["id"] == "miopen-no-gfx906-db"]
    assert "knows no pinned, verifiable source of built gfx906 MIOpen databases" in f["fix"]
    assert "ComfyUI" in f["cause"] and f["fix_kind"] == "none"
