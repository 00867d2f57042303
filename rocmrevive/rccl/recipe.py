"""When no prebuilt RCCL carries every processor the machine has: the exact build for this
machine's targets, as a script the user runs. The targets are the union of all detected
processors (never only gfx906: the other cards must keep working), the source is RCCL at the
tag of the ROCm release it builds against, the output folder sits side by side
(``/opt/rocmrevive/rccl/<rocm>-<targets>``), and the script ends with the check that proves the
result: ``rocmrevive rccl audit --lib <output>`` exits 0 only when the library it built serves
every GPU.

    r = build_recipe(Root("/"), rocm_path="/opt/rocm-6.4.3")
    r.targets, r.prefix; open("build-rccl.sh", "w").write(r.script)

Facts the script relies on: RCCL's CMake takes the targets in ``GPU_TARGETS`` (older releases
read ``AMDGPU_TARGETS``; both are passed), builds with the tree's ``hipcc``/``amdclang++``, and
``BUILD_TESTS=OFF`` skips the googletest suite; MSCCL++ and the MSCCL kernels only build for
MI300-class GPUs, so they are switched off (an unknown option is only a CMake warning).
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from rocmrevive.errors import RevError
from rocmrevive.rccl.audit import ROCMREVIVE_PREFIX, machine_gpus
from rocmrevive.rootfs import Root
from rocmrevive.trees.buildscript import BuildSteps, clone_and_build
from rocmrevive.trees.installs import find_installs, read_version

RCCL_REPO = "https://github.com/ROCm/rccl.git"
MONOREPO = "https://github.com/ROCm/rocm-systems.git"   # RCCL moved to projects/rccl there (ROCm 7.x)


@dataclass
class Recipe:
    targets: list[str]
    gpus: list[dict]
    rocm_path: str
    rocm_version: str
    ref: str
    prefix: str
    script: str
    check: str
    notes: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"targets": self.targets, "gpu_targets": ";".join(self.targets), "gpus": self.gpus,
                "rocm_path": self.rocm_path, "rocm_version": self.rocm_version, "ref": self.ref,
                "prefix": self.prefix, "check": self.check, "notes": self.notes, "script": self.script}


def _rocm(root: Root, rocm_path: str | None, rocm_version: str | None) -> tuple[str, str]:
    if rocm_path:
        ver, _build, _problem = read_version(root, rocm_path)
        m = re.search(r"rocm-(\d+\.\d+(?:\.\d+)?)", rocm_path)
        ver = rocm_version or ver or (m.group(1) if m else None)
        if not ver:
            raise RevError("USAGE", f"--rocm-path {rocm_path}: its version is unknown (no .info/version); "
                                    f"pass --rocm-version too")
        return rocm_path.rstrip("/"), ver
    installs, link = find_installs(root)
    chosen = next((i for i in installs if i.default), None) or (installs[-1] if installs else None)
    if chosen and chosen.version:
        return chosen.path, rocm_version or chosen.version
    if rocm_version:
        return f"/opt/rocm-{rocm_version}", rocm_version
    raise RevError("USAGE", f"no ROCm install under {root.base}/opt to build against; pass --rocm-path DIR "
                            f"or --rocm-version X.Y.Z")


def _build_script(path: str, ref: str, prefix: str, procs: list[str], which: str, check: str, jobs: str) -> str:
    """The bash script that builds RCCL at ``ref`` against the ROCm at ``path`` for every processor
    present (``which`` names the GPUs), installs it into ``prefix`` and runs ``check``."""
    gpu_targets = ";".join(procs)
    steps = clone_and_build(BuildSteps(
        project="RCCL", repo=RCCL_REPO, ref=ref,
        ref_note="          # the RCCL of the ROCm release it builds against",
        subdir_note=f"       # projects/rccl when RCCL_REPO is {MONOREPO}",
        rocm_path=path, targets=gpu_targets, prefix=prefix, compilers=(("CXX", "hipcc"),),
        options=("-DBUILD_TESTS=OFF", "-DENABLE_MSCCLPP=OFF", "-DENABLE_MSCCL_KERNEL=OFF"), jobs=jobs))
    return f"""#!/usr/bin/env bash
# Build RCCL for this machine's GPUs {which}
# Targets: {gpu_targets} -- every processor present, so no card loses RCCL.
# Written by `rocmrevive rccl recipe`. Needs git, cmake >= 3.16, make or ninja, and the ROCm
# development packages of {path} (hipcc, rocm-cmake, rocm-smi-lib headers).
{steps}
# The check that proves the result: every GPU above must be served by the new library.
{check}

cat <<EOF
RCCL for $GPU_TARGETS is in $PREFIX/lib. Make programs load it:
  export VLLM_NCCL_SO_PATH=$PREFIX/lib/librccl.so.1
  export LD_LIBRARY_PATH=$PREFIX/lib\\${{LD_LIBRARY_PATH:+:\\$LD_LIBRARY_PATH}}
(rocmrevive rccl env --lib $PREFIX/lib/librccl.so.1 writes the whole environment file)
EOF
"""


def build_recipe(root: Root, *, targets=(), rocm_path: str | None = None, rocm_version: str | None = None,
                 prefix: str | None = None, jobs: str = "$(nproc)") -> Recipe:
    gpus, devices_from = machine_gpus(root, targets)
    if not gpus:
        raise RevError("NOTHING_SUPPORTED", f"no AMD GPU with a known target under {root.base}; pass --target")
    procs = sorted({g.processor for g in gpus}, key=lambda p: (p != "gfx906", p))
    path, ver = _rocm(root, rocm_path, rocm_version)
    ref = f"rocm-{ver}"
    prefix = (prefix or f"{ROCMREVIVE_PREFIX}/{ver}-{'-'.join(procs)}").rstrip("/")
    q = shlex.quote
    names = ", ".join(f"GPU{g.index} {g.target} {g.name}" for g in gpus)
    check = f"rocmrevive rccl audit --no-search --lib {q(prefix + '/lib/librccl.so.1')}"
    script = _build_script(path, ref, prefix, procs, f"({devices_from}): {names}", check, jobs)
    notes = [f"built against {path} (ROCm {ver}); programs must use that ROCm's HIP runtime",
             f"RCCL for ROCm 7.x lives in {MONOREPO} under projects/rccl: set RCCL_REPO and RCCL_SUBDIR "
             f"if the {ref} tag is not in {RCCL_REPO}"]
    return Recipe(procs, [g.to_json() for g in gpus], path, ver, ref, prefix, script, check, notes)
