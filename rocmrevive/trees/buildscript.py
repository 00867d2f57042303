"""The part every build recipe shares: clone a ROCm project at a tag, configure it with CMake
against a ROCm tree for some GPU targets, build, install into a prefix. The rocBLAS recipe
(``trees.recipe``) and the RCCL recipe (``rccl.recipe``) put their own header before it and their
own checks after it.

    text = clone_and_build(BuildSteps(project="RCCL", repo=RCCL_REPO, ref="rocm-6.4.3", ...))

Facts it relies on: ROCm's projects take the targets in ``GPU_TARGETS`` (older releases read
``AMDGPU_TARGETS``; both are passed), find ROCm through ``CMAKE_PREFIX_PATH``/``ROCM_PATH``, and
are tagged ``rocm-<ROCm version>``. Every variable can be overridden from the environment.
"""
from __future__ import annotations

import shlex
from dataclasses import dataclass


@dataclass(frozen=True)
class BuildSteps:
    """What the shared steps need. ``project``: the variable prefix (``RCCL``, ``ROCBLAS``; its
    lower case names the source folder); ``ref_note``/``subdir_note``: the comments after those
    lines, their padding included; ``compilers``: (language, tool in ROCm's bin), the first one
    checked for; ``options``: the project's own CMake options."""

    project: str
    repo: str
    ref: str
    ref_note: str
    subdir_note: str
    rocm_path: str
    targets: str
    prefix: str
    compilers: tuple[tuple[str, str], ...]
    options: tuple[str, ...]
    jobs: str


def clone_and_build(b: BuildSteps) -> str:
    """The bash from ``set -euo pipefail`` to ``cmake --install``, each line ending in a newline."""
    q, p = shlex.quote, b.project
    first = b.compilers[0][1]
    cmake = [f'cmake -S "$SRC/${p}_SUBDIR" -B "$BUILD"', "  -DCMAKE_BUILD_TYPE=Release",
             *(f'  -DCMAKE_{lang}_COMPILER="$ROCM_PATH/bin/{tool}"' for lang, tool in b.compilers),
             '  -DCMAKE_PREFIX_PATH="$ROCM_PATH"', '  -DROCM_PATH="$ROCM_PATH"',
             '  -DGPU_TARGETS="$GPU_TARGETS"', '  -DAMDGPU_TARGETS="$GPU_TARGETS"',
             *(f"  {o}" for o in b.options), '  -DCMAKE_INSTALL_PREFIX="$PREFIX"']
    configure = " \\\n".join(cmake)
    return f"""set -euo pipefail

ROCM_PATH={q(b.rocm_path)}
{p}_REPO="${{{p}_REPO:-{b.repo}}}"
{p}_REF="${{{p}_REF:-{b.ref}}}"{b.ref_note}
{p}_SUBDIR="${{{p}_SUBDIR:-.}}"{b.subdir_note}
GPU_TARGETS={q(b.targets)}
PREFIX={q(b.prefix)}
SRC="${{SRC:-$HOME/src/{p.lower()}-${p}_REF}}"
BUILD="$SRC/build-rocmrevive"

test -x "$ROCM_PATH/bin/{first}" || {{ echo "no $ROCM_PATH/bin/{first}: install the ROCm development packages" >&2; exit 1; }}
if [ ! -d "$SRC/.git" ]; then
  git clone --depth 1 --branch "${p}_REF" "${p}_REPO" "$SRC"
fi

{configure}
cmake --build "$BUILD" -j"{b.jobs}"
cmake --install "$BUILD"     # needs write access to $PREFIX (sudo, or a PREFIX of your own)
"""
