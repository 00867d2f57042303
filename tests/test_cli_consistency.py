"""One style everywhere a new user looks: a piped table is plain columns without box lines or
trailing spaces; a size is written one way in the plan and at the prompt; a hint to run
`rocmrevive recover` is written as this user must type it (sudo, --root); a Ctrl-C at the prompt
starts its message on a new line and does not call itself an error."""
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from rocmrevive.hardware.p2p import size_text
from tests.test_contract_readonly import doc_of, rr, source  # noqa: F401  (source is a fixture)
from tests.test_contract_terminal import RR, Pty, machine  # noqa: F401  (machine is a fixture)

BOX = set("┃━╇┏┓┗┛┡┩┼╋┳┻")   # a table's rules; detect's PCIe tree (├── └──) is a tree, not a table


def boxed(line: str) -> bool:
    return bool(set(line) & BOX) or ("│" in line and "── " not in line and not line.lstrip().startswith("│"))


def test_a_piped_plan_is_plain_columns_with_one_size_format(machine):
    root, args = machine
    doc = doc_of(rr(root, "--json", "install", "--check", *args))
    size = doc["copies"][0]["summary"]["bytes"]
    r = rr(root, "install", "--check", *args)
    assert r.returncode == 20
    lines = r.stdout.splitlines()
    assert not [line for line in lines if boxed(line)], r.stdout
    assert not [line for line in lines if line != line.rstrip()], r.stdout
    table = next(line for line in lines if line.startswith("/opt/rocm-6.4.3/lib/rocblas/library"))
    assert f"({size_text(size)})" in table and f"{size:,}" not in r.stdout, table
    assert "[check: nothing changed]" in lines[0]
    for argv in (["detect"], ["status"], ["verify"]):
        out = rr(root, *argv).stdout
        assert not [line for line in out.splitlines() if line != line.rstrip() or boxed(line)], (argv, out)


def test_the_size_at_the_prompt_is_the_size_in_the_plan(machine):
    root, args = machine
    size = doc_of(rr(root, "--json", "install", "--check", *args))["copies"][0]["summary"]["bytes"]
    t = Pty(RR + ["--root", str(root), "install", *args])
    out = t.read_until("apply? [Y/n]")
    t.send("n\r")
    t.finish()
    prompt = next(line for line in out.splitlines() if "apply?" in line or "add 9" in line)
    assert f"({size_text(size)})" in prompt, out[-2000:]


def test_a_recover_hint_is_written_as_this_user_must_type_it(machine):
    root, args = machine
    r = rr(root, "install", "--yes", *args, extra_env={"ROCMREVIVE_TEST_KILL_AT": "stage:3"})
    assert r.returncode == -9
    r = rr(root, "status")
    assert r.returncode == 9 and f"`sudo rocmrevive --root {root} recover`" in r.stderr, r.stderr
    doc = json.loads(rr(root, "--json", "status").stdout)
    assert "`rocmrevive recover`" in doc["error"]["message"]      # JSON keeps the plain words


def test_ctrl_c_at_the_prompt_starts_a_new_line_and_is_no_error(machine):
    root, args = machine
    t = Pty(RR + ["--root", str(root), "install", *args])
    assert "apply? [Y/n]" in t.read_until("apply? [Y/n]")
    time.sleep(0.5)                                           # the prompt is waiting for its answer
    os.kill(t.p.pid, signal.SIGINT)
    rc, out = t.finish()
    assert rc == 130
    line = next(x for x in out.splitlines() if "interrupted by the user" in x)
    assert line.strip().startswith("rocmrevive install: interrupted by the user"), repr(line)
    assert "error:" not in line


def test_a_local_from_is_read_not_fetched_and_extraction_counts_against_the_manifest(machine, tmp_path):
    from types import SimpleNamespace

    from rocmrevive.install.extract import _members
    from rocmrevive.sources.manifest_load import load_manifests
    from tests.test_install import write_manifest

    root, args = machine
    deb = args[args.index("--from") + 1]
    r = rr(root, "install", "--check", *args)
    assert f"reading {deb} as librocblas4" in r.stderr and "fetching" not in r.stderr, r.stderr
    # the extraction's progress has the manifest's count from the first member on, not N/?
    (manifest,) = load_manifests(write_manifest(tmp_path / "mf", Path(deb), files=9))
    seen = []
    _members(SimpleNamespace(path=deb, basename="x.deb"), manifest.sources[0], manifest, tmp_path / "out",
             progress=lambda stage, done, total, unit: seen.append((stage, done, total)))
    assert seen and all(total == 9 for _, _, total in seen), seen
