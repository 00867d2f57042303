"""When no manifest source matches a tree's rocBLAS (ROCm 7.0.x ships rocBLAS 5.0, 7.1.x ships 5.1,
and no distribution builds those for gfx906): the exact build of that rocBLAS release for the
detected targets, as a script, ending with the ``rocmrevive install --from`` that takes the result
(verified by content, docs/recipes.md).

    r = build_recipe(Root("/"), tree="/opt/rocm-7.1.1")
    r.tag, r.prefix, r.library; open("build-rocblas.sh", "w").write(r.script)

Facts the script relies on (rocBLAS's own release pages and CMakeLists):

* rocBLAS is tagged ``rocm-<ROCm version>`` in ROCm/rocBLAS; the release pages name the rocBLAS
  of some (``rocm-7.0.1``: rocBLAS 5.0.0; ``rocm-7.1.1``: rocBLAS 5.1.0; ``rocm-7.2.4``: 5.2), the
  ROCm release notes the minor of each line (``trees.rocblas.ROCBLAS_OF_ROCM``);
* its CMake takes the targets in ``GPU_TARGETS`` (``AMDGPU_TARGETS`` is the deprecated spelling and
  is passed too), builds Tensile's kernels for exactly those (``Tensile_ARCHITECTURE`` follows
  ``GPU_TARGETS``), and the options ``Tensile_LAZY_LIBRARY_LOADING`` (the per-arch
  ``TensileLibrary_lazy_<arch>.dat`` index), ``Tensile_SEPARATE_ARCHITECTURES`` and
  ``Tensile_LIBRARY_FORMAT=msgpack`` give the layout AMD's packages have;
* ``cmake --install`` puts the Tensile folder in ``<prefix>/lib/rocblas/library``, the version
  header in ``<prefix>/include/rocblas/internal/rocblas-version.h``;
* Debian builds rocBLAS 5.2 (ROCm 7.2.4 sources) for gfx906 with 156 gfx906 files, so the 7.x
  sources still carry gfx906's Tensile logic.

TheRock trees (ROCm 7.13+: device code in ``.kpack`` archives) get no build script: AMD publishes no
gfx906 device package for a stable release, and the recipe lists the real choices instead
(``trees.gfx906_choices``: a whole gfx906 stack, AMD's nightly build as a tree of its own, a local
build of TheRock), each checked afterwards with the same verify.
"""
from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

from rocmrevive.errors import RevError
from rocmrevive.hardware.devices import resolve_devices
from rocmrevive.rootfs import Root
from rocmrevive.sources.manifest import TARGET, choose_manifest
from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests
from rocmrevive.trees import gfx906_choices as G
from rocmrevive.trees.buildscript import BuildSteps, clone_and_build
from rocmrevive.trees.gfx906_choices import therock_release
from rocmrevive.trees.installs import find_installs
from rocmrevive.trees.pythonenv import find_envs
from rocmrevive.trees.rocblas import ROCBLAS_OF_ROCM, RocblasCopy
from rocmrevive.trees.select import given_trees, rocblas_copies

ROCBLAS_REPO = "https://github.com/ROCm/rocBLAS.git"
MONOREPO = "https://github.com/ROCm/rocm-libraries.git"   # rocBLAS also lives in projects/rocblas there
PREFIX_BASE = "/opt/rocmrevive/rocblas"

# What ROCm/rocBLAS's release page for the tag ``rocm-X.Y.Z`` names (the release line's rocBLAS
# minor for the others comes from ``trees.rocblas.ROCBLAS_OF_ROCM``).
RELEASE_PAGES: dict[str, str] = {"7.0.1": "5.0.0", "7.1.1": "5.1.0", "7.2.4": "5.2"}
# The newest patch release of each line, whose tag builds the line's rocBLAS.
LAST_PATCH: dict[str, str] = {"6.4": "6.4.3", "7.0": "7.0.2", "7.1": "7.1.1", "7.2": "7.2.4"}


@dataclass
class Recipe:
    tree: str                 # the rocBLAS library folder it is for (machine path)
    rocblas_version: str | None
    rocm_version: str | None
    rocm_path: str | None
    targets: list[str]
    kind: str                 # "source-build" | "therock-choices"
    tag: str | None
    repo: str | None
    prefix: str | None
    library: str | None       # the folder the build leaves, what --from takes
    install: str              # the rocmrevive command that takes the result
    script: str
    expected: list[str] = field(default_factory=list)   # files that must be in `library`
    notes: list[str] = field(default_factory=list)
    choices: list = field(default_factory=list)          # TheRock trees: gfx906_choices.Choice
    build: dict = field(default_factory=dict)            # TheRock trees: the build identity they name

    def to_json(self) -> dict:
        return {"tree": self.tree, "rocblas_version": self.rocblas_version, "rocm_version": self.rocm_version,
                "rocm_path": self.rocm_path, "targets": self.targets, "kind": self.kind, "tag": self.tag,
                "repo": self.repo, "prefix": self.prefix, "output_library": self.library,
                "expected_files": self.expected, "install": self.install, "notes": self.notes,
                "choices": [c.to_json() for c in self.choices], "build": self.build, "script": self.script}


def _mm(version: str | None) -> str | None:
    m = re.match(r"^(\d+)\.(\d+)", version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def rocm_tag(rocblas_version: str | None, rocm_version: str | None) -> tuple[str, list[str]]:
    """The ROCm release whose ``rocm-X.Y.Z`` tag builds this rocBLAS, and notes on how it was chosen."""
    notes: list[str] = []
    mm = _mm(rocblas_version)
    rv = rocm_version if rocm_version and re.match(r"^\d+\.\d+\.\d+$", rocm_version) else None
    if rv:
        want = ROCBLAS_OF_ROCM.get(_mm(rv) or "")
        if want and mm in (None, want):
            how = (f"release page: rocBLAS {RELEASE_PAGES[rv]}" if rv in RELEASE_PAGES
                   else f"the ROCm {_mm(rv)} line's rocBLAS")
            return rv, [f"ROCm {rv} ships rocBLAS {want} ({how})"]
        if want:
            notes.append(f"the tree says rocBLAS {rocblas_version} but ROCm {rv} shipped rocBLAS {want}: the build "
                         f"follows the tree's rocBLAS")
        elif mm is None:
            return rv, [f"ROCm {rv} is not in rocmrevive's table and the rocBLAS version is unknown: "
                        f"the tag rocm-{rv} is assumed"]
    line = next((r for r, b in ROCBLAS_OF_ROCM.items() if b == mm), None)
    if line and line in LAST_PATCH:
        rel = LAST_PATCH[line]
        notes.append(f"rocBLAS {mm} is the ROCm {line} line's; its last release with a tag is ROCm {rel}")
        return rel, notes
    if rv:
        return rv, notes + [f"rocBLAS {mm} is not in rocmrevive's table; the tag rocm-{rv} is assumed"]
    raise RevError("NOTHING_SUPPORTED",
                   f"neither the rocBLAS version ({rocblas_version or 'unknown'}) nor the ROCm version of the tree "
                   f"is known, so no tag can be chosen; pass --rocm-version X.Y.Z")


def _copy_for(root: Root, tree: str | None, rocm_version: str | None) -> RocblasCopy:
    installs, _link = find_installs(root)
    envs, _problems = find_envs(root)
    # one selection (trees.select): the --tree's first copy, else every copy found
    copies = [c.found for c in rocblas_copies(root, given_trees(root, [tree] if tree else []),
                                              installs=installs, envs=envs)]
    if tree:
        return copies[0]
    lacking = [c for c in copies if "gfx906" not in c.targets]
    if not lacking:
        raise RevError("NOTHING_SUPPORTED", f"every rocBLAS copy under {root.base} already has gfx906 files; "
                                            f"name one with --tree to build anyway; `rocmrevive recipe --paths` "
                                            f"compares every path for this box")
    return lacking[0]


def _rocm_path_of(copy) -> str | None:
    owner = copy.owner or ""
    if copy.layout == "amd" and owner.startswith("/"):
        return owner
    m = re.match(r"^(/opt/rocm[^/]*)/", copy.path)
    return m.group(1) if m else None


def _therock_recipe(root: Root, copy, procs: list[str]) -> Recipe:
    """A TheRock tree carries device code per target in .kpack archives; for gfx906 there is no
    AMD package of the tree's release: the recipe lists the real choices (``gfx906_choices``)."""

    m = re.match(r"^(.*)/lib(?:64)?/rocblas/library$", copy.path)
    build = G.build_identity(root, m.group(1)) if m else {}
    cs = G.choices(copy.rocm_version, tree=copy.path, layout=copy.layout, build=build)
    script = "#!/usr/bin/env bash\n" + G.script(copy.rocm_version, copy.path, procs, cs) + "\n"
    notes = [G.summary(copy.rocm_version, copy.path).split(": `")[0],
             "rocmrevive does not copy device code into a .kpack tree: its host libraries find it by name through "
             "their .rocm_kpack_ref marker and check no build identity (docs/therock-payloads.md)"]
    if build.get("problem"):
        notes.append(build["problem"])
    return Recipe(copy.path, copy.rocblas_version, copy.rocm_version, _rocm_path_of(copy), procs,
                  "therock-choices", None, None, None, None, f"rocmrevive verify --tree {shlex.quote(copy.path)}",
                  script, [], notes, cs, build)


def _source_build_script(copy, *, tag: str, rocm_path: str, prefix: str, procs: list[str], devices_from: str,
                         expected: list[str], commands: tuple[str, str], jobs: str) -> str:
    """The bash script that builds rocBLAS at ``tag`` for ``procs`` into ``prefix`` and hands the
    result to rocmrevive (``commands``: the check, then the install)."""
    targets_s = ";".join(procs)
    check, install = commands
    steps = clone_and_build(BuildSteps(
        project="ROCBLAS", repo=ROCBLAS_REPO, ref=tag,
        ref_note="      # the rocBLAS of the tree's ROCm release",
        subdir_note=f"    # projects/rocblas when ROCBLAS_REPO is {MONOREPO}",
        rocm_path=rocm_path, targets=targets_s, prefix=prefix,
        compilers=(("CXX", "amdclang++"), ("C", "amdclang")),
        options=("-DBUILD_WITH_TENSILE=ON", "-DTensile_LAZY_LIBRARY_LOADING=ON",
                 "-DTensile_SEPARATE_ARCHITECTURES=ON", "-DTensile_LIBRARY_FORMAT=msgpack",
                 "-DBUILD_WITH_HIPBLASLT=OFF",
                 "-DBUILD_CLIENTS_TESTS=OFF -DBUILD_CLIENTS_BENCHMARKS=OFF -DBUILD_CLIENTS_SAMPLES=OFF"),
        jobs=jobs))
    return f"""#!/usr/bin/env bash
# Build rocBLAS {copy.rocblas_version or '?'} (tag {tag}) for {targets_s}, the targets {copy.path} lacks
# ({devices_from}). Written by `rocmrevive recipe`. Needs git, cmake >= 3.16, python3-venv, ninja or
# make, and the ROCm development packages of {rocm_path} (amdclang++, rocm-cmake, hipBLAS-common headers).
# Tensile for one target takes about an hour on 16 cores.
{steps}
# The build must have left the per-target index and helper kernels:
for f in {' '.join(expected)}; do
  test -f "$PREFIX/lib/rocblas/library/$f" || {{ echo "missing $PREFIX/lib/rocblas/library/$f" >&2; exit 1; }}
done

{handover(check, install)}"""


def handover(check: str, install: str) -> str:
    """The script's last lines: ``check`` (``install --check``: exit 20 when it would change files,
    0 when nothing is left to do) decides whether ``install`` runs. Under ``set -e`` a bare check
    line would end the script at its 20, so its status is caught and read.

        handover("sudo rocmrevive install --check --from P", "sudo rocmrevive install --from P")
    """
    return f"""# Then rocmrevive takes it, verified by content (every code object loads on the card with a
# code object version the tree's runtime takes; the Tensile cross-reference passes on an
# overlay of the tree's own index), recorded as "verified by content, unpinned".
# The check exits 20 when it would change files, 0 when there is nothing left to do:
check=0
{check} || check=$?
if [ "$check" -eq 0 ]; then echo "rocmrevive: the tree already has these files; nothing to install"; exit 0; fi
if [ "$check" -ne 20 ]; then echo "rocmrevive install --check failed (exit $check); not installing" >&2; exit "$check"; fi
{install}
"""


def refuse_served(copy, procs: list[str]) -> None:
    """RevError("NOTHING_SUPPORTED") when a shipped manifest serves this copy: its pinned files
    install in a minute, where the build takes an hour (``--build`` writes it anyway)."""
    if TARGET not in procs:
        return
    try:
        m = choose_manifest(load_manifests(default_manifest_dir()), copy.rocblas_version, TARGET)
    except RevError:   # unreadable manifests: the build is the way left
        return
    if m is None or not m.sources_for(copy.rocblas_version):
        return
    raise RevError("NOTHING_SUPPORTED", f"no build is needed: the shipped manifest {m.id} serves {copy.path} "
                                        f"(rocBLAS {copy.rocblas_version}); run `sudo rocmrevive install --tree "
                                        f"{shlex.quote(copy.path)}` (pass --build to write the build anyway; `rocmrevive "
                                        f"recipe --paths` compares every path for this box)",
                   details={"manifest": m.id, "tree": copy.path,
                            "install": f"sudo rocmrevive install --tree {shlex.quote(copy.path)}"})


def build_recipe(root: Root, *, tree: str | None = None, targets=(), rocm_version: str | None = None,
                 prefix: str | None = None, jobs: str = "$(nproc)", build: bool = False) -> Recipe:
    devices, devices_from = resolve_devices(root, targets)
    copy = _copy_for(root, tree, rocm_version)
    procs = sorted({d.processor for d in devices if d.processor not in copy.targets} or
                   {d.processor for d in devices}, key=lambda p: (p != "gfx906", p))
    if not procs:
        raise RevError("NOTHING_SUPPORTED", f"no GPU target to build for under {root.base}; pass --target")

    if copy.kpack or copy.arch_folders or therock_release(copy.rocm_version):
        have = set(copy.targets) | set(copy.kpack_arches)
        if not targets and all(d.processor in have for d in devices):
            raise RevError("NOTHING_SUPPORTED", f"{copy.path} is a TheRock tree that already carries "
                                                f"{', '.join(sorted({d.processor for d in devices}))} device code: nothing to "
                                                f"choose; `rocmrevive verify --tree {shlex.quote(copy.path)}` checks it")
        return _therock_recipe(root, copy, procs)
    if not build:
        refuse_served(copy, procs)
    q = shlex.quote
    tree_arg = q(copy.path)
    rel, notes = rocm_tag(copy.rocblas_version, rocm_version or copy.rocm_version)
    tag = f"rocm-{rel}"
    rocm_path = _rocm_path_of(copy) or f"/opt/rocm-{rel}"
    prefix = (prefix or f"{PREFIX_BASE}/{copy.rocblas_version or rel}-{'-'.join(procs)}").rstrip("/")
    library = f"{prefix}/lib/rocblas/library"
    expected = [f"TensileLibrary_lazy_{p}.dat" for p in procs] + [f"Kernels.so-000-{p}.hsaco" for p in procs]
    install = f"sudo rocmrevive install --tree {tree_arg} --from {q(prefix)}"
    check = f"sudo rocmrevive install --check --tree {tree_arg} --from {q(prefix)}"  # it reads root's state
    script = _source_build_script(copy, tag=tag, rocm_path=rocm_path, prefix=prefix, procs=procs,
                                  devices_from=devices_from, expected=expected, commands=(check, install), jobs=jobs)
    notes += [f"built against {rocm_path}; the result serves only a rocBLAS {_mm(copy.rocblas_version) or rel} tree",
              f"rocBLAS for ROCm 7.x also lives in {MONOREPO} (projects/rocblas): set ROCBLAS_REPO and "
              f"ROCBLAS_SUBDIR if {tag} is not in {ROCBLAS_REPO}"]
    return Recipe(copy.path, copy.rocblas_version, copy.rocm_version, rocm_path, procs, "source-build", tag,
                  ROCBLAS_REPO, prefix, library, install, script, expected, notes)
