"""``rocmrevive hook install|remove|status|run``: the opt-in apt hook that notices, after every
dpkg run, when an upgrade took away the gfx906 files rocmrevive installed (and can put them back)."""
from __future__ import annotations

import sys

import click

from rocmrevive.cli.options import hook_state_dir_option
from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome, mirror_option


@policy(writes=False, on_pending=OnPending.IGNORE, config_options=False)
@click.group()
def hook():
    """An apt hook (opt-in) that checks rocmrevive's files after every dpkg run.

    `rocmrevive hook install` writes /etc/apt/apt.conf.d/99rocmrevive through a journaled
    transaction; apt then runs `rocmrevive hook run` after each dpkg run (DPkg::Post-Invoke),
    which warns when a tree lost the gfx906 files rocmrevive installed, or with --reapply
    installs them again once apt has finished. `rocmrevive hook remove` undoes it.
    """


@policy(writes=True, on_pending=OnPending.REFUSE, config_options=False)
@hook.command("install")
@click.option("--reapply", is_flag=True, help="Re-install lost files (rocmrevive install --yes) instead of only warning.")
@click.option("--bin", "bin_path", metavar="PATH",
              help="The rocmrevive executable apt should run (default: the one running now).")
@hook_state_dir_option("The install journal the hook checks (default /var/lib/rocmrevive).")
@click.option("--from", "from_path", metavar="PATH", help="With --reapply: install from this local file or export.")
@click.option("--mirror", metavar="URL", callback=mirror_option, help="With --reapply: download from this mirror.")
@click.option("--cache", metavar="DIR", help="With --reapply: the download cache.")
@click.option("--manifests", "manifests_dir", metavar="DIR", help="With --reapply: the manifest folder.")
@click.option("--tree", "trees", multiple=True, metavar="PATH", help="With --reapply: only this tree (repeatable).")
@click.option("--dry-run", is_flag=True, help="Check everything and say what would be written; write nothing.")
@click.pass_obj
def install(ui, reapply, bin_path, state_dir, from_path, mirror, cache, manifests_dir, trees, dry_run):
    """Install the apt hook (/etc/apt/apt.conf.d/99rocmrevive) as a journaled transaction."""
    from rocmrevive.install.hooks import HOOK_FILE, hook_config, install_hook, render
    from rocmrevive.txn.result import TxOutcome

    def work() -> Outcome:
        cfg = hook_config(reapply=reapply, bin_path=bin_path, argv0=sys.argv[0], state_dir=state_dir, from_path=from_path,
                          mirror=mirror, cache=cache, manifests_dir=manifests_dir, trees=trees)
        res = install_hook(ui.root, cfg, dry_run=dry_run)
        data = {"path": HOOK_FILE, "mode": cfg.mode, "config": cfg.to_json(), "command": cfg.shell_command(),
                "dry_run": dry_run, "content": render(cfg), **{k: v for k, v in res.to_json().items() if k != "changed"}}

        def show(con):
            if res.state is TxOutcome.UNCHANGED:
                con.print(f"the apt hook {HOOK_FILE} is already installed (mode {cfg.mode}); nothing to do",
                          markup=False)
                return
            head = "would install" if dry_run else "installed"
            tx = "" if dry_run else f", transaction {res.txid}"
            con.print(f"{head} the apt hook {HOOK_FILE} (mode {cfg.mode}{tx}); after every dpkg run apt will run:",
                      markup=False)
            con.print(f"  {cfg.shell_command()}", markup=False)

        return Outcome(data=data, render=show, changed=res.changed and not dry_run)

    ui.run("hook install", work)


@policy(writes=True, on_pending=OnPending.REFUSE, config_options=False)
@hook.command("remove")
@click.option("--force", is_flag=True, help="Remove it even if it was edited since (the edited bytes are kept in the backups).")
@click.option("--dry-run", is_flag=True, help="Say what would be done; change nothing.")
@click.pass_obj
def remove(ui, force, dry_run):
    """Remove the apt hook by rolling back its transactions (checks it was not edited)."""
    from rocmrevive.install.hooks import HOOK_FILE, remove_hook
    from rocmrevive.txn.plan import Op

    def work() -> Outcome:
        results = remove_hook(ui.root, force=force, dry_run=dry_run)
        acted = [r for r in results if any(a.op != Op.KEEP for a in r.actions)]

        def show(con):
            if not results:
                con.print(f"no apt hook installed by rocmrevive ({HOOK_FILE}); nothing to do", markup=False)
                return
            head = "would roll back" if dry_run else "rolled back"
            for r in results:
                con.print(f"{head} hook transaction {r.txid}: " +
                          ", ".join(f"{a.op} {a.path}" for a in r.actions), markup=False)

        data = {"path": HOOK_FILE, "dry_run": dry_run, "removed": bool(acted) and not dry_run,
                "transactions": [r.to_json() for r in results]}
        return Outcome(data=data, render=show, changed=bool(acted) and not dry_run,
                       warnings=[w for r in results for w in r.warnings if r.actions])

    ui.run("hook remove", work)


@policy(writes=False, on_pending=OnPending.REPORT, config_options=False)
@hook.command("status")
@hook_state_dir_option("The install journal to check (default: the hook's, else /var/lib/rocmrevive).")
@click.pass_obj
def status(ui, state_dir):
    """Whether the hook is installed, and what it would report right now."""
    from rocmrevive.install.hooks import findings, hook_status

    def work() -> Outcome:
        st = hook_status(ui.root)
        cfg = st["config"] or {}
        found = findings(ui.root, state_dir or cfg.get("state_dir"))
        data = {**st, "findings": [f.to_json() for f in found]}

        def show(con):
            if not st["exists"]:
                con.print(f"the apt hook is not installed ({st['path']} does not exist)", markup=False)
            elif not st["installed"]:
                con.print(f"{st['path']} exists but is not a rocmrevive hook", markup=False)
            else:
                state = {True: "unchanged since installed", False: "EDITED since installed",
                         None: "not in rocmrevive's journal"}[st["intact"]]
                con.print(f"apt hook {st['path']}: mode {cfg['mode']}, {state}", markup=False)
            for f in found:
                con.print(f"  {f.message()}", markup=False)
            if st["exists"] and not found:
                con.print("  every file rocmrevive installed is in place", markup=False)

        return Outcome(data=data, render=show)

    ui.run("hook status", work)


# runs inside apt's hook while apt holds the dpkg lock: an open transaction is install's to recover
@policy(writes=False, on_pending=OnPending.IGNORE, config_options=False)
@hook.command("run", context_settings={"ignore_unknown_options": True})
@click.option("--mode", type=click.Choice(["warn", "reapply"]), default="warn", show_default=True)
@hook_state_dir_option("The install journal to check (default /var/lib/rocmrevive).")
@click.option("--now", is_flag=True, hidden=True, help="Re-apply in this process (the background half of --mode reapply).")
@click.option("--wait", "wait_s", default=900.0, show_default=True, metavar="SECONDS",
              help="With reapply: how long to wait for apt/dpkg to release their locks.")
@click.option("--log", "log_path", default=None, metavar="PATH",
              help="With reapply: the log of the background install (default /var/log/rocmrevive/hook.log).")
@click.argument("install_args", nargs=-1, type=click.UNPROCESSED)
@click.pass_obj
def run(ui, mode, state_dir, now, wait_s, log_path, install_args):
    """What apt runs after dpkg (DPkg::Post-Invoke). Never fails: apt must go on.

    Checks the files of every committed install against the journal. Mode warn prints one
    line per tree that lost (or had changed) its gfx906 files. Mode reapply also starts
    `rocmrevive install --yes INSTALL_ARGS` in the background, once apt has released its locks
    (it holds them while its hooks run), and logs the result.
    """
    from rocmrevive.install.hooks import HOOK_LOG, HookAction, HookRun, after_dpkg, reapply_now

    log_machine = log_path or HOOK_LOG

    def work() -> Outcome:
        if now:
            try:
                return _reapplied(reapply_now(ui.root, state_dir=state_dir, install_args=install_args,
                                              wait_s=wait_s, log_machine=log_machine))
            except Exception as exc:  # noqa: BLE001 - the hook must never break apt; say what went wrong instead
                done = HookRun.failed(mode, exc)
        else:
            done = after_dpkg(ui.root, mode=mode, state_dir=state_dir, wait_s=wait_s, log_machine=log_machine,
                              install_args=install_args)

        def show(con):
            if done.action is HookAction.ERROR:  # with findings: the check ran, the re-install did not start
                what = "could not start the re-install" if done.findings else "could not check"
                con.print(f"rocmrevive hook: {what}: {done.problem}", markup=False)
            for f in done.findings:
                con.print(f"rocmrevive hook: {f.message()}", markup=False)
            if done.pid:
                con.print(f"rocmrevive hook: re-installing in the background once apt has finished "
                          f"(process {done.pid}, log {done.log})", markup=False)

        return Outcome(data=done.to_json(), render=show)

    ui.run("hook run", work)


def _reapplied(res: dict) -> Outcome:
    """The background half's outcome (``hooks.reapply_now``)."""
    from rocmrevive.install.hooks import HookAction

    if res["action"] is HookAction.GAVE_UP:
        return Outcome(data=res, code="LOCKED", message="package manager still busy")
    return Outcome(data=res, changed=bool((res.get("install") or {}).get("changed")))
