"""The ``rocmrevive`` click group. Subcommands are imported only when called, so that
``rocmrevive --help`` stays fast enough for Ansible to run it on every host."""
from __future__ import annotations

import importlib
import os
import sys

import click

from rocmrevive.cli.policy import OnPending, policy, register_root

_ARGV: list[str] = []  # this run's arguments (``--json`` anywhere in them asks for JSON)

# name -> "module:function". A command module is imported only when that command runs.
COMMANDS: dict[str, tuple[str, str]] = {
    "inspect": ("rocmrevive.cli.inspect:inspect", "List the GPU code objects inside files and folders."),
    "detect": ("rocmrevive.cli.detect:detect", "Show AMD GPUs, PCIe topology, ROCm installs and rocBLAS copies."),
    "doctor": ("rocmrevive.cli.doctor:doctor", "Find problems on this machine and say how to fix them."),
    "manifests": ("rocmrevive.cli.manifests:manifests", "List and check the source manifests."),
    "fetch": ("rocmrevive.cli.fetch:fetch", "Download and verify sources into the cache (or export them)."),
    "install": ("rocmrevive.cli.install:install", "Patch gfx906 files into ROCm trees as one transaction."),
    "rollback": ("rocmrevive.cli.rollback:rollback", "Undo an install transaction, byte for byte."),
    "recover": ("rocmrevive.cli.rollback:recover", "Finish or undo an interrupted transaction."),
    "status": ("rocmrevive.cli.status:status", "What rocmrevive changed, and whether it is intact."),
    "history": ("rocmrevive.cli.status:status", "Alias of status."),
    "verify": ("rocmrevive.cli.verify:verify", "Prove a rocBLAS tree serves the GPUs (targets, Tensile index)."),
    "audit": ("rocmrevive.cli.audit:audit", "Which ROCm libraries carry code for which GPU targets."),
    "explain": ("rocmrevive.cli.explain:explain", "Recognise a ROCm error message and say what fixes it."),
    "smoke": ("rocmrevive.cli.smoke:smoke", "Run PyTorch and llama.cpp on every GPU and check the results."),
    "recipe": ("rocmrevive.cli.recipe:recipe", "The exact rocBLAS build for a tree no source serves (ROCm 7.0/7.1)."),
    "rccl": ("rocmrevive.cli.rccl:rccl", "RCCL targets, peer-to-peer readiness and multi-GPU setups."),
    "patch": ("rocmrevive.cli.patch:patch", "Reversible patches for Python packages (vLLM...)."),
    "hook": ("rocmrevive.cli.hook:hook", "Opt-in apt hook: check (or re-apply) after package upgrades."),
    "cache": ("rocmrevive.cli.cache:cache", "Clean the download cache (what no manifest needs)."),
}


class LazyGroup(click.Group):
    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        """click's main, with its own errors (usage, Ctrl-C, a closed pipe) turned into the
        documented exits, and under --json into one JSON document (also for click's test runner)."""
        from rocmrevive.cli.ui import pipe_closed_quietly
        from rocmrevive.invocation import recorded

        global _ARGV
        _ARGV = list(sys.argv[1:] if args is None else args)
        try:
            # the command line journals and lock files record (nothing below cli reads sys.argv)
            with pipe_closed_quietly(), recorded([*sys.argv[:1], *_ARGV]):
                rv = super().main(args=_ARGV, prog_name=prog_name, complete_var=complete_var,
                                  standalone_mode=False, **extra)
        except click.ClickException as exc:
            _usage_error(exc, _ARGV)
        except (KeyboardInterrupt, click.exceptions.Abort):  # outside a command's work: nothing was open
            click.echo("rocmrevive: interrupted; nothing was changed", err=True)
            sys.exit(130)
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)

    def list_commands(self, ctx):
        """The newcomer's path first (detect, doctor, install, verify, status, rollback), then the rest."""
        from rocmrevive.cli.examples import NEWCOMER_ORDER

        lazy = [n for n, (target, _) in COMMANDS.items() if _module_exists(target)]
        names = set(lazy) | set(self.commands)
        return [n for n in NEWCOMER_ORDER if n in names] + sorted(names - set(NEWCOMER_ORDER))

    def resolve_command(self, ctx, args):
        """click's, with a "did you mean" for a mistyped command (``instal``)."""
        name = args[0] if args else None
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            import difflib

            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            if close:
                ctx.fail(f"No such command {name!r}: did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)

    def get_command(self, ctx, name):
        if name in self.commands:
            return _with_examples(self.commands[name], name)
        if name not in COMMANDS:
            return None
        target, _ = COMMANDS[name]
        modname, attr = target.split(":")
        try:
            mod = importlib.import_module(modname)
        except ModuleNotFoundError as exc:
            if exc.name == modname:
                return None  # a command not built yet
            raise
        return _with_examples(_with_global_options(getattr(mod, attr)), name)

    def format_commands(self, ctx, formatter):
        rows = [(n, COMMANDS[n][1] if n in COMMANDS else self.commands[n].get_short_help_str())
                for n in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _with_examples(cmd: click.Command, path: str) -> click.Command:
    """The command's (and its subcommands') examples at the end of its --help (cli/examples.py)."""
    from rocmrevive.cli.completion import complete_values
    from rocmrevive.cli.examples import with_examples

    complete_values(cmd, path)  # file, folder, target and transaction-id completion
    cmd.help = with_examples(path, cmd.help)
    if isinstance(cmd, click.Group):
        for name, sub in cmd.commands.items():
            _with_examples(sub, f"{path} {name}")
    return cmd


_GLOBAL_FLAGS = ("as_json", "quiet", "verbose", "no_progress", "root")


def _with_global_options(cmd: click.Command) -> click.Command:
    """Accept the group's options after the subcommand too (`rocmrevive inspect --json X`)."""
    if getattr(cmd, "_rocmrevive_globals", False):
        return cmd
    setattr(cmd, "_rocmrevive_globals", True)  # noqa: B010 - a mark on click's object
    if isinstance(cmd, click.Group):
        for sub in cmd.commands.values():
            _with_global_options(sub)
    cmd.params += [
        click.Option(["--json", "as_json"], is_flag=True, default=None, expose_value=True,
                     help="Print one JSON document on stdout."),
        click.Option(["-q", "--quiet"], count=True, help="Less output."),
        click.Option(["-v", "--verbose"], count=True, help="More output."),
        click.Option(["--no-progress"], is_flag=True, default=None, help="Never draw progress bars."),
        click.Option(["--root"], default=None, metavar="DIR", type=click.Path(file_okay=False),
                     help="Treat DIR as the machine's / (same as the global option)."),
    ]
    inner = cmd.callback

    def callback(*args, **kwargs):
        ctx = click.get_current_context()
        ui = ctx.find_object(_ui_class())
        flags = {k: kwargs.pop(k, None) for k in _GLOBAL_FLAGS}
        if ui is not None:
            if flags["as_json"]:
                ui.as_json = True
            if flags["quiet"]:
                ui.quiet += flags["quiet"]
            if flags["verbose"]:
                ui.verbose += flags["verbose"]
            if flags["no_progress"]:
                ui.no_progress = True
            if flags["root"]:
                if not os.path.isdir(flags["root"]):
                    raise click.BadParameter(f"{flags['root']} is not a folder", param_hint="--root")
                from rocmrevive.rootfs import Root

                ui.root = Root(flags["root"])
            _apply_config(ctx, ui, kwargs)
        if inner is None:
            return None
        return inner(*args, **kwargs)

    cmd.callback = callback
    return cmd


def _apply_config(ctx: click.Context, ui, kwargs: dict) -> None:
    """The one place the machine's /etc/rocmrevive/config.toml (rocmrevive/config.py) meets the
    options: an option the command line (or its environment variable) did not set takes the
    file's value, unless the command's policy says no (`hook`: the hook's own runs read the file then)."""
    from click.core import ParameterSource

    from rocmrevive.cli.policy import policy_of
    from rocmrevive.config import load
    from rocmrevive.errors import RevError

    declared = policy_of(ctx.command)  # first: a command without @policy fails before anything runs
    path = ctx.command_path.split(" ", 1)[-1]
    try:
        cfg = load(ui.root)
    except RevError as exc:
        ui._emit_error(path, exc.code, exc.message)  # exits: the documented code, JSON with --json
    if cfg.unknown and declared.writes:  # a reader goes on with a warning (UI.run adds cfg.unknown)
        ui._emit_error(path, "USAGE", f"{cfg.unknown[0]}; `{path}` changed nothing: fix the file")
    ui.config = cfg
    if not (declared.reads_machine_state or (declared.dry_run_reads_machine_state and kwargs.get("dry_run"))):
        _user_state_dir(ctx, kwargs, cfg)
    if not cfg.options or not declared.config_options:
        return
    for param in ctx.command.params:
        flag = next((o for o in getattr(param, "opts", ()) if o in cfg.options), None)
        if flag and param.name in kwargs and ctx.get_parameter_source(param.name) in (
                None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP):
            kwargs[param.name] = cfg.options[flag]


def _user_state_dir(ctx: click.Context, kwargs: dict, cfg) -> None:
    """A user other than root keeps journals and backups in a state folder of their own
    (cli.options.user_state_dir) unless --state-dir or the config file names one. Not for a
    command whose policy ``reads_machine_state`` (a read-only report describes the machine: root's
    installs, as `sudo rocmrevive install` left them; `--state-dir ~/.local/state/rocmrevive`
    shows a user's own transactions)."""
    from click.core import ParameterSource

    from rocmrevive.cli.options import STATE_DIR
    from rocmrevive.trees.trust import state_dir_of

    mine = state_dir_of(os.geteuid())
    if (mine and "state_dir" in kwargs and kwargs["state_dir"] == STATE_DIR and not cfg.state_dir
            and ctx.get_parameter_source("state_dir") in (ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP)):
        kwargs["state_dir"] = ctx.params["state_dir"] = mine


def _ui_class():
    from rocmrevive.cli.ui import UI

    return UI


def _module_exists(target: str) -> bool:
    modname = target.split(":")[0]
    rel = modname.split(".")[-1] + ".py"
    return os.path.exists(os.path.join(os.path.dirname(__file__), rel))


def _wants_json(argv=None) -> bool:
    """``--json`` anywhere before a ``--`` (global or after the subcommand)."""
    args = list(argv if argv is not None else (_ARGV or sys.argv[1:]))
    if "--" in args:
        args = args[:args.index("--")]
    return "--json" in args


def _version(ctx, _param, value):
    if not value or ctx.resilient_parsing:
        return
    from importlib.metadata import PackageNotFoundError, version

    try:
        v = version("rocmrevive")
    except PackageNotFoundError:  # pragma: no cover - running from a checkout without metadata
        from rocmrevive import __version__ as v
    about = _about()
    if _wants_json():
        import json

        from rocmrevive.cli.ui import SCHEMA_VERSION

        click.echo(json.dumps({"schema_version": SCHEMA_VERSION, "command": "version", "root": _root_arg(),
                               "changed": False, "version": v, **about, "warnings": [], "error": None}, indent=2))
    else:
        m = about["manifests"]
        click.echo(f"rocmrevive, version {v}\n"
                   f"python {about['python']['version']} ({about['python']['executable']})\n"
                   f"installed in {about['path']}\n"
                   f"manifests {m['revision'] or '(none readable)'} ({m['files']} files in {m['dir']})")
    ctx.exit(0)


def _root_arg() -> str:
    """The --root of this command line (--version runs before the options are parsed)."""
    args = list(_ARGV or sys.argv[1:])
    for i, a in enumerate(args):
        if a == "--":
            break
        if a == "--root" and i + 1 < len(args):
            return args[i + 1]
        if a.startswith("--root="):
            return a.split("=", 1)[1]
    return os.environ.get("ROCMREVIVE_ROOT") or "/"


def _about() -> dict:
    """What a bug report needs beside the version: the Python, where rocmrevive is installed, and
    the manifests' revision (the first 12 hex digits of a sha256 over the shipped manifests' names
    and bytes: two installs with the same revision pin the same packages)."""
    import hashlib
    import platform

    from rocmrevive.sources.manifest_load import default_manifest_dir

    mdir = default_manifest_dir()
    h, n = hashlib.sha256(), 0
    try:
        for f in sorted(mdir.glob("*.toml")):
            h.update(f.name.encode() + b"\0" + f.read_bytes() + b"\0")
            n += 1
    except OSError:
        n = 0
    return {"python": {"version": platform.python_version(), "executable": sys.executable},
            "path": os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
            "manifests": {"dir": str(mdir), "files": n, "revision": h.hexdigest()[:12] if n else None}}


@register_root
@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=_version,
              help="Show the version and exit.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document on stdout (logs go to stderr).")
@click.option("--root", "root", default="/", show_default=True, metavar="DIR",
              envvar="ROCMREVIVE_ROOT", type=click.Path(file_okay=False),
              help="Treat DIR as the machine's /: every file read or written is under it.")
@click.option("-q", "--quiet", count=True, help="Less output (repeat for less).")
@click.option("-v", "--verbose", count=True, help="More output; tracebacks on internal errors.")
@click.option("--no-progress", is_flag=True, help="Never draw progress bars.")
@click.pass_context
def cli(ctx, as_json, root, quiet, verbose, no_progress):
    """rocmrevive: make AMD gfx906 GPUs (MI50, MI60, Radeon VII, Radeon Pro VII) work with
    ROCm 6.4+ and 7.x again: detect, install, verify, roll back.

    Exit codes are listed in the README and by `rocmrevive exit-codes`.
    """
    from rocmrevive.cli.ui import UI

    if not os.path.isdir(root):
        raise click.BadParameter(f"{root} is not a folder", param_hint="--root")
    ctx.obj = UI(as_json=as_json, root=root, quiet=quiet, verbose=verbose, no_progress=no_progress)


@policy(writes=False, on_pending=OnPending.IGNORE)
@cli.command("exit-codes")
@click.option("--json", "as_json", is_flag=True, default=None, help="Print one JSON document on stdout.")
@click.pass_obj
def exit_codes(ui, as_json):
    """Print the table of exit codes."""
    from rocmrevive.cli.ui import Outcome
    from rocmrevive.errors import EXIT_CODES

    if as_json:
        ui.as_json = True
    rows = sorted(EXIT_CODES.items(), key=lambda kv: kv[1][0])

    def render(con):
        for code, (num, meaning) in rows:
            con.print(f"{num:>3}  {code:<18} {meaning}", markup=False, highlight=False)

    ui.run("exit-codes", lambda: Outcome(
        data={"exit_codes": [{"code": c, "exit": n, "meaning": m} for c, (n, m) in rows]}, render=render))


def _usage_error(exc: click.ClickException, argv) -> None:
    """click's own errors (bad option, missing argument, a --root that is not a folder): under
    --json one JSON document on stdout, else click's message; exit 2 (USAGE) either way."""
    from rocmrevive.cli.ui import error_document, pipe_closed_quietly

    code = "USAGE"
    if _wants_json(argv):
        import json

        ctx = getattr(exc, "ctx", None)
        command = None
        if ctx is not None and ctx.command_path:
            command = " ".join(ctx.command_path.split()[1:]) or None
        root = next((a.split("=", 1)[1] for a in argv if a.startswith("--root=")), None)
        if root is None and "--root" in argv[:-1]:
            root = argv[argv.index("--root") + 1]
        with pipe_closed_quietly():
            click.echo(json.dumps(error_document(command, root or os.environ.get("ROCMREVIVE_ROOT", "/"), code,
                                                 exc.format_message()), indent=2))
    else:
        exc.show()
    sys.exit(2)


@policy(writes=False, on_pending=OnPending.IGNORE)
@cli.command("completion", short_help="Print the shell completion script (bash, zsh or fish).")
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
@click.option("--json", "as_json", is_flag=True, default=None,
              help="Print one JSON document on stdout, the script in its `script` field.")
@click.pass_obj
def completion(ui, shell, as_json):
    """Print the shell completion script for bash, zsh or fish.

    \b
    bash: eval "$(rocmrevive completion bash)"   (~/.bashrc)
    zsh:  eval "$(rocmrevive completion zsh)"    (~/.zshrc, after compinit)
    fish: rocmrevive completion fish > ~/.config/fish/completions/rocmrevive.fish

    Commands, options and choices complete; the script asks rocmrevive itself
    (_ROCMREVIVE_COMPLETE), so it follows the installed version.
    """
    from click.shell_completion import get_completion_class

    from rocmrevive.cli.ui import Outcome

    kind = get_completion_class(shell)
    assert kind is not None   # click.Choice of the shells it knows
    source = kind(cli, {}, "rocmrevive", "_ROCMREVIVE_COMPLETE").source()
    if as_json:
        ui.as_json = True
    # the script goes out as it is (never through rich: no wrapping, no markup)
    ui.run("completion", lambda: Outcome(data={"shell": shell, "script": source},
                                         render=lambda con: click.echo(source)))


def main(argv=None):
    cli.main(args=list(sys.argv[1:] if argv is None else argv), prog_name="rocmrevive")


if __name__ == "__main__":  # pragma: no cover
    main()
