"""``rocmrevive recipe``: the exact rocBLAS build for a tree whose version no manifest source
matches (ROCm 7.0.x / 7.1.x: rocBLAS 5.0 / 5.1), for the detected targets, ending with the
``install --from`` that takes the result; for a TheRock tree, the real choices for gfx906."""
from __future__ import annotations

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome, text_or_file


@policy(writes=False, on_pending=OnPending.IGNORE)
@click.command("recipe")
@click.option("--tree", metavar="PATH", help="The ROCm tree or rocBLAS folder to build for (default: the first "
                                             "copy that lacks gfx906).")
@click.option("--target", "targets", multiple=True, metavar="TARGET",
              help="Build for this GPU target instead of the detected GPUs the tree lacks (repeatable).")
@click.option("--rocm-version", metavar="X.Y.Z", help="The ROCm release whose rocBLAS tag to build "
                                                    "(default: the tree's).")
@click.option("--prefix", metavar="DIR", help="Install folder of the build (default "
                                            "/opt/rocmrevive/rocblas/<rocblas>-<targets>).")
@click.option("--build", is_flag=True, help="Write the build even when a shipped manifest serves the tree "
                                            "(by default recipe then says no build is needed, exit 3).")
@click.option("-o", "--output", metavar="FILE", help="Write the script to FILE (executable) instead of stdout.")
@click.pass_obj
def recipe(ui, tree, targets, rocm_version, prefix, build, output):
    """The exact rocBLAS build for a tree no manifest source serves, as a script to run.

    Names the rocBLAS tag of the tree's ROCm release (rocm-7.1.1 builds rocBLAS 5.1.0), the
    CMake commands for the targets the tree lacks, the folder the build leaves
    (<prefix>/lib/rocblas/library), and ends with `rocmrevive install --from <prefix>`, which
    accepts the result only when it proves itself by content. A tree a shipped manifest serves
    needs no build: recipe says so and exits 3 (--build writes it anyway). For a TheRock tree (ROCm 7.13+,
    .kpack archives), for which AMD publishes no gfx906 package in a stable release, it lists the
    real choices instead (a whole gfx906 stack, AMD's nightly build as a tree of its own, a local
    build), each with what it entails and the verify that checks it. Writes nothing unless -o is
    given.
    """
    from rocmrevive.trees.recipe import build_recipe

    def work() -> Outcome:
        r = build_recipe(ui.root, tree=tree, targets=targets, rocm_version=rocm_version, prefix=prefix,
                         build=build)
        return text_or_file(r.to_json(), r.script, output, lambda written: [
            f"wrote {written}: rocBLAS {r.rocblas_version or '?'} ({r.tag or r.kind}) for "
            f"{';'.join(r.targets)}" + (f" into {r.library}" if r.library else ""), f"then: {r.install}"], 0o755)

    ui.run("recipe", work)
