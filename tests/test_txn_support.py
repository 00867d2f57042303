"""A small machine with a ROCm tree, a plan against it, and a child process that runs a
transaction (optionally killing itself at a step boundary). Shared by the transaction tests;
its own tests check the tree hash every other test relies on.

    m = Machine.build(tmp_path); plan = m.plan(); h0 = m.hash()
    rc = run_child(m, "apply", plan, kill_at="rename:2")
"""
from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from rocmrevive.rootfs import Root
from rocmrevive.txn.fsutil import tree_hash, tree_listing
from rocmrevive.txn.plan import FileChange, Plan

REPO = Path(__file__).resolve().parent.parent
TREE = "/opt/rocm-6.4.3"
LIB = f"{TREE}/lib/rocblas/library"
OWNER = (1234, 2345)  # the tree's own files belong to someone else than the test (root)

CHILD = r"""
import json, sys, time
from rocmrevive.rootfs import Root
from rocmrevive.errors import RevError
from rocmrevive.txn.plan import Plan
from rocmrevive.txn.apply import apply_plan
from rocmrevive.txn.undo import recover_pending, rollback
root, op = Root(sys.argv[1]), sys.argv[2]
plan = Plan.from_json(json.loads(sys.argv[3])) if len(sys.argv) > 3 and sys.argv[3] else None
print("go", flush=True)
t0 = time.perf_counter()
try:
    if op == "apply":
        r = apply_plan(root, plan)
    elif op == "rollback":
        r = rollback(root)
    elif op == "recover":
        r = recover_pending(root)
        r = r[0] if r else None
    else:
        raise SystemExit("bad op")
except RevError as e:
    print(json.dumps({"error": e.code, "message": e.message}), flush=True)
    raise SystemExit(e.exit)
print(json.dumps({"elapsed": time.perf_counter() - t0, "txid": r.txid if r else None,
                  "changed": r.changed if r else False}), flush=True)
"""


def _content(seed: str, size: int) -> bytes:
    rnd = random.Random(seed)
    return rnd.randbytes(size)


@dataclass
class Machine:
    base: Path
    stage: Path

    @property
    def root(self) -> Root:
        return Root(self.base)

    def p(self, machine_path: str) -> Path:
        """The real path, symlinks resolved as the machine would (/opt/rocm -> /opt/rocm-6.4.3)."""
        return self.root.resolve(machine_path)

    @classmethod
    def build(cls, where: Path, *, symlink_opt_rocm: bool = True) -> "Machine":
        """A machine folder: AMD's layout, a few rocBLAS files of gfx90a/gfx1030 (no gfx906)
        owned by OWNER with their own modes, /opt/rocm -> /opt/rocm-6.4.3, dpkg's lock files."""
        base = where / "machine"
        lib = base / LIB.lstrip("/")
        lib.mkdir(parents=True)
        for d in (base / "opt", base / TREE.lstrip("/"), lib.parent, lib.parent.parent):
            os.chmod(d, 0o755)
        files = {"TensileLibrary_lazy_gfx90a.dat": 0o644, "TensileLibrary_lazy_gfx1030.dat": 0o644,
                 "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx90a.co": 0o644,
                 "TensileLibrary_Type_SS_Contraction_l_Ailk_Bljk_Cijk_Dijk_fallback.dat": 0o644,
                 "Kernels.so-000-gfx90a.hsaco": 0o644, "TensileManifest.txt": 0o640}
        for name, mode in files.items():
            f = lib / name
            f.write_bytes(_content(name, 3000 + len(name) * 37))
            os.chown(f, *OWNER)
            os.chmod(f, mode)
        os.chown(lib, *OWNER)
        (base / "opt/rocm-6.4.3/.info").mkdir()
        (base / "opt/rocm-6.4.3/.info/version").write_text("6.4.3-128\n")
        if symlink_opt_rocm:
            (base / "opt/rocm").symlink_to("/opt/rocm-6.4.3")
        (base / "var/lib/dpkg").mkdir(parents=True)
        for name in ("lock-frontend", "lock"):
            (base / "var/lib/dpkg" / name).write_bytes(b"")
        (base / "etc").mkdir()
        (base / "etc/os-release").write_text('PRETTY_NAME="Ubuntu 24.04.2 LTS"\n')
        stage = where / "stage"
        stage.mkdir()
        return cls(base, stage)

    def staged(self, name: str, size: int, seed: str | None = None) -> Path:
        p = self.stage / name
        p.write_bytes(_content(seed or name, size))
        return p

    def plan(self, *, tree: str = "/opt/rocm", n_create: int = 5, replace: bool = True, delete: bool = True,
             subdir: bool = True, size: int = 4096) -> Plan:
        """Creates (gfx906 files), one in new folders, a replace pinned to the current hash and a delete."""
        from rocmrevive.txn.fsutil import sha256_file

        lib = f"{tree}/lib/rocblas/library"
        changes = []
        for i in range(n_create):
            name = f"TensileLibrary_Type_{'SDHB'[i % 4]}{'SDHB'[i % 4]}_Contraction_l_Ailk_Bljk_Cijk_Dijk_gfx906_{i}.co"
            p = self.staged(name, size + i * 101)
            sha, n = sha256_file(p)
            changes.append(FileChange(f"{lib}/{name}", p, sha, n, "create", "deb:librocblas4_6.4.4-4_amd64.deb"))
        if subdir:
            p = self.staged("sub.hsaco", 777)
            sha, n = sha256_file(p)
            changes.append(FileChange(f"{lib}/gfx906/extra/sub.hsaco", p, sha, n, "create", "test"))
        if replace:
            dest = f"{lib}/TensileManifest.txt"
            before = sha256_file(self.root.resolve(dest))[0]
            p = self.staged("TensileManifest.txt", 2222, seed="new-manifest")
            sha, n = sha256_file(p)
            changes.append(FileChange(dest, p, sha, n, "replace", "test", before_sha256=before))
        if delete:
            dest = f"{lib}/Kernels.so-000-gfx90a.hsaco"
            before = sha256_file(self.root.resolve(dest))[0]
            changes.append(FileChange(dest, None, None, None, "delete", "test", before_sha256=before))
        return Plan(tree, changes, {"manifest": "rocblas-4.4.1-gfx906", "rocm": "6.4.3", "gpus": ["gfx906:sramecc+:xnack-"]})

    def hash(self) -> str:
        return tree_hash(self.base / "opt")

    def listing(self) -> dict:
        return tree_listing(self.base / "opt")

    def state(self, *parts) -> Path:
        return self.base.joinpath("var/lib/rocmrevive", *parts)

    def journals(self) -> list[Path]:
        d = self.state("tx")
        return sorted(d.glob("*.jsonl")) if d.is_dir() else []


def read_journal(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def child_cmd(m: Machine, op: str, plan: Plan | None = None) -> list[str]:
    return [sys.executable, "-c", CHILD, str(m.base), op, json.dumps(plan.to_json()) if plan else ""]


def child_env(kill_at: str | None = None) -> dict:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env.pop("ROCMREVIVE_TEST_KILL_AT", None)
    if kill_at:
        env["ROCMREVIVE_TEST_KILL_AT"] = kill_at
    return env


def run_child(m: Machine, op: str, plan: Plan | None = None, *, kill_at: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(child_cmd(m, op, plan), env=child_env(kill_at), capture_output=True, text=True, timeout=60)


def cli(m: Machine, *args: str, json_out: bool = True) -> tuple[int, dict | str, str]:
    """Run ``rocmrevive --root <machine> [--json] ARGS`` in a subprocess: (exit, JSON or text, stderr)."""
    cmd = [sys.executable, "-m", "rocmrevive.cli.main", "--root", str(m.base)] + (["--json"] if json_out else []) + list(args)
    p = subprocess.run(cmd, env=child_env(), capture_output=True, text=True, timeout=60)
    return p.returncode, (json.loads(p.stdout) if json_out and p.stdout.strip() else p.stdout), p.stderr


def copy_machine(src: Machine, where: Path) -> Machine:
    """A byte-for-byte copy (owners and modes too) of a machine and its stage."""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cp", "-a", str(src.base), str(where / "machine")], check=True)
    subprocess.run(["cp", "-a", str(src.stage), str(where / "stage")], check=True)
    return Machine(where / "machine", where / "stage")


# the helpers' own tests ----------------------------------------------------------------------
def test_tree_hash_sees_content_names_modes_owners_links_and_stray_files(tmp_path):
    m = Machine.build(tmp_path)
    h = m.hash()
    assert h == m.hash()
    f = m.p(f"{LIB}/TensileManifest.txt")
    copy = copy_machine(m, tmp_path / "copy")
    assert copy.hash() == h, "cp -a keeps everything the hash covers"

    def changed(mutate, undo) -> bool:
        mutate()
        try:
            return m.hash() != h
        finally:
            undo()
            assert m.hash() == h

    data = f.read_bytes()
    assert changed(lambda: f.write_bytes(data[:-1] + bytes([data[-1] ^ 1])), lambda: f.write_bytes(data))
    assert changed(lambda: os.chmod(f, 0o644), lambda: os.chmod(f, 0o640))
    assert changed(lambda: os.chown(f, 0, OWNER[1]), lambda: os.chown(f, *OWNER))
    assert changed(lambda: os.chown(f, OWNER[0], 0), lambda: os.chown(f, *OWNER))
    assert changed(lambda: f.rename(f.with_name("x")), lambda: f.with_name("x").rename(f))
    stray = f.with_name(".TensileManifest.txt.rocmrevive-new")
    assert changed(lambda: stray.write_bytes(b""), stray.unlink)
    d = f.parent / "gfx906"
    assert changed(d.mkdir, d.rmdir)
    link = m.root.path("/opt/rocm")
    assert changed(lambda: (link.unlink(), link.symlink_to("/opt/rocm-6.4.4")),
                   lambda: (link.unlink(), link.symlink_to("/opt/rocm-6.4.3")))


def test_plan_round_trips_through_json_and_summarises(tmp_path):
    m = Machine.build(tmp_path)
    plan = m.plan()
    again = Plan.from_json(json.loads(json.dumps(plan.to_json())))
    assert again == plan
    s = plan.summary()
    assert (s["files"], s["create"], s["replace"], s["delete"]) == (8, 6, 1, 1)
    assert s["bytes"] == sum(c.size for c in plan.changes if c.op != "delete")
    d = plan.diff()
    manifest = "/opt/rocm/lib/rocblas/library/TensileManifest.txt"
    assert d["before"][manifest] is not None and d["after"][manifest] != d["before"][manifest]
    deleted = "/opt/rocm/lib/rocblas/library/Kernels.so-000-gfx90a.hsaco"
    assert d["after"][deleted] is None and d["before"][deleted]
    import pytest

    with pytest.raises(ValueError):
        Plan("/opt/rocm", [FileChange("/etc/passwd", m.stage / "x", "0" * 64, 1, "create")])
    with pytest.raises(ValueError):
        FileChange("/opt/rocm/x", None, None, None, "create")
