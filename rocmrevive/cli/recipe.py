"""``rocmrevive recipe``: the exact rocBLAS build for a tree whose version no manifest source
matches (ROCm 7.0.x / 7.1.x: rocBLAS 5.0 / 5.1), for the detected targets, ending with the
``install --from`` that takes the result; for a TheRock tree, the real choices for gfx906."""
from __future__ import annotations

import click

from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome, text_file_option, text_or_file
from rocmrevive.hardware.vulkan import parse_vulkan_devices

USES = ["chat", "long-context", "moe", "training", "comfyui", "vllm"]   # advice.paths.uses(), checked by a test


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
@click.option("--paths", "paths", is_flag=True, help="Answer 'which path for this box': every stack a gfx906 card "
              "can use, ranked for what you run (see --for), each with what it entails, what it fixes, the "
              "commands and the check.")
@click.option("--for", "use", metavar="USE", type=click.Choice(USES),
              help="What you run, for --paths (implies it): " + ", ".join(USES) + " (default: from the apps found).")
@click.option("--vulkaninfo", "vulkan_file", type=click.Path(exists=True, dir_okay=False),
              callback=text_file_option(lambda t: bool(parse_vulkan_devices(t)) or "vulkan" in t.lower(),
                                        "vulkaninfo or llama.cpp --list-devices output"),
              help="For --paths: vulkaninfo (or llama.cpp --list-devices) output saved to a file.")
@click.pass_obj
def recipe(ui, tree, targets, rocm_version, prefix, build, output, paths, use, vulkan_file):
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

    if paths or use:
        ui.run("recipe", lambda: _paths_outcome(ui, use, vulkan_file, dict(
            tree=tree, target=targets, rocm_version=rocm_version, prefix=prefix, build=build, output=output)))
        return

    def work() -> Outcome:
        r = build_recipe(ui.root, tree=tree, targets=targets, rocm_version=rocm_version, prefix=prefix,
                         build=build)
        return text_or_file(r.to_json(), r.script, output, lambda written: [
            f"wrote {written}: rocBLAS {r.rocblas_version or '?'} ({r.tag or r.kind}) for "
            f"{';'.join(r.targets)}" + (f" into {r.library}" if r.library else ""), f"then: {r.install}"], 0o755)

    ui.run("recipe", work)


def _paths_outcome(ui, use, vulkan_file, build_options: dict) -> Outcome:
    """``recipe --paths``: every path for this box, ranked for ``use``."""
    from pathlib import Path

    from rocmrevive.advice.paths import advise, render_lines
    from rocmrevive.errors import RevError

    given = [f"--{k.replace('_', '-')}" for k, v in build_options.items() if v]
    if given:
        raise RevError("USAGE", f"--paths/--for answer for the whole box and take none of {', '.join(given)} "
                                "(those are for the build script)")
    from rocmrevive.diagnose.programs import find_programs
    from rocmrevive.trees.survey import survey

    s = survey(ui.root)
    targets = list(dict.fromkeys(g.target for g in s.hardware.gpus if g.target is not None))
    programs = find_programs(ui.root, targets, envs=s.envs) if targets else None
    vulkan = Path(vulkan_file).read_text(errors="replace") if vulkan_file else None
    a = advise(ui.root, s, use=use, programs=programs, vulkan_text=vulkan)

    def render(con) -> None:
        for line in render_lines(a):
            con.print(line, markup=False, highlight=False, soft_wrap=True)

    if not s.supported:
        return Outcome(data=a.to_json(), render=render, code="NOTHING_SUPPORTED",
                       message="no gfx906 GPU on this machine; the paths are for gfx906 cards")
    return Outcome(data=a.to_json(), render=render)
