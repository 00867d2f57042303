"""``rocmrevive patch list|apply|verify|rollback``: reversible patches for Python packages."""
from __future__ import annotations

import click

from rocmrevive.cli.options import state_dir_option
from rocmrevive.cli.policy import OnPending, policy
from rocmrevive.cli.ui import Outcome
from rocmrevive.errors import RevError

PYTHON_HELP = "The Python interpreter, venv or site-packages to work on (repeatable; default: every one found)."


@policy(writes=False, on_pending=OnPending.IGNORE)
@click.group()
def patch():
    """Reversible patches for Python packages (vLLM's RCCL loading...)."""


def _specs(patches_dir):
    from rocmrevive.install.patches import load_patches

    return load_patches(patches_dir)


def _statuses(ui, specs, pythons, state_dir):
    from rocmrevive.install.patches import PatchState, patch_status
    from rocmrevive.trees.pythonenv import find_envs

    envs, problems = find_envs(ui.root, pythons, common=not pythons)
    out = []
    for spec in specs:
        for env in envs:
            st = patch_status(ui.root, spec, env.site_packages, state_dir=state_dir)
            if st.state is not PatchState.NOT_INSTALLED:
                out.append(st)
    return out, problems


def _pick_site(ui, spec, pythons) -> str:
    from rocmrevive.install.patches import sites_with

    sites = sites_with(ui.root, spec, pythons, common=not pythons)
    if not sites:
        where = ", ".join(pythons) if pythons else f"the Python environments under {ui.root.base}"
        raise RevError("NOTHING_SUPPORTED", f"{spec.package} is not installed in {where}; pass --python")
    if len(sites) > 1:
        raise RevError("USAGE", f"{spec.package} is installed in {len(sites)} environments ({', '.join(sites)}); "
                                f"pass --python to choose one")
    return sites[0]


def _one_patch_options(f):
    """PATCH_ID, --python and --patches: what every single-patch command takes, declared once."""
    f = click.option("--patches", "patches_dir", metavar="DIR", help="Patch folder (default: the shipped patches/).")(f)
    f = click.option("--python", "pythons", multiple=True, metavar="PATH", help=PYTHON_HELP)(f)
    return click.argument("patch_id")(f)


@policy(writes=False, on_pending=OnPending.REPORT)
@patch.command("list")
@click.option("--python", "pythons", multiple=True, metavar="PATH", help=PYTHON_HELP)
@click.option("--patches", "patches_dir", metavar="DIR", help="Patch folder (default: the shipped patches/).")
@state_dir_option
@click.pass_obj
def list_(ui, pythons, patches_dir, state_dir):
    """The known patches and, per environment that has the package, their state."""
    def work() -> Outcome:
        specs = _specs(patches_dir)
        sts, problems = _statuses(ui, specs, pythons, state_dir)
        data = {"patches": [s.to_json() for s in specs], "environments": [s.to_json() for s in sts]}

        def render(con):
            for s in specs:
                con.print(f"{s.id}  ({s.package} {', '.join(s.versions)}; {s.file})", markup=False)
                con.print(f"  {s.summary}", markup=False)
                for st in (x for x in sts if x.patch == s.id):
                    con.print(f"  {st.state:<16} {st.site}  ({st.reason})", markup=False)
        return Outcome(data=data, render=render, warnings=problems + [w for s in sts for w in s.warnings])

    ui.run("patch list", work)




@policy(writes=False, on_pending=OnPending.REPORT)
@patch.command("verify")
@_one_patch_options
@state_dir_option
@click.pass_obj
def verify(ui, patch_id, pythons, patches_dir, state_dir):
    """Is PATCH_ID applied, and is the file exactly the release's file patched? Exit 0 when
    applied, 6 when the file is modified, 20 when it is not applied yet, 4 when it is a link,
    FIFO, device or too large (never read)."""
    from rocmrevive.install.patches import PatchState, patch_named, patch_status

    def work() -> Outcome:
        spec = patch_named(_specs(patches_dir), patch_id)
        site = _pick_site(ui, spec, pythons)
        st = patch_status(ui.root, spec, site, state_dir=state_dir)
        code, msg = {PatchState.APPLIED: ("OK", None),
                     PatchState.APPLICABLE: ("CHANGES_PENDING", f"{spec.id} is not applied: {st.reason}"),
                     PatchState.MODIFIED: ("VERIFY_FAILED", st.reason),
                     PatchState.REFUSED: ("PERMISSION", st.reason)}.get(st.state, ("NOTHING_SUPPORTED", st.reason))
        return Outcome(data={"status": st.to_json()}, code=code, message=msg, warnings=st.warnings,
                       render=lambda con: con.print(f"{st.state}: {st.file} ({st.reason})", markup=False))

    ui.run("patch verify", work)


@policy(writes=True, on_pending=OnPending.REFUSE)
@patch.command("apply")
@_one_patch_options
@click.option("--dry-run", is_flag=True, help="Check everything, change nothing.")
@state_dir_option
@click.pass_obj
def apply(ui, patch_id, pythons, patches_dir, dry_run, state_dir):
    """Apply PATCH_ID as one transaction (refused unless the package version is one the patch
    lists and the file is exactly that release's)."""
    from rocmrevive.install.patches import apply_patch, patch_named

    def work() -> Outcome:
        spec = patch_named(_specs(patches_dir), patch_id)
        site = _pick_site(ui, spec, pythons)
        st, res = apply_patch(ui.root, spec, site, state_dir=state_dir, dry_run=dry_run)
        data = {"patch": spec.to_json(), "status": st.to_json(), "transaction": res.to_json() if res else None,
                "dry_run": dry_run}
        changed = bool(res and res.changed and not dry_run)

        def render(con):
            if res is None:
                con.print(f"already applied: {st.file}", markup=False)
            elif dry_run:
                con.print(f"would patch {st.file} ({spec.package} {st.version})", markup=False)
            else:
                con.print(f"patched {st.file} ({spec.package} {st.version}); transaction {res.txid} "
                          f"(`rocmrevive patch rollback {spec.id}` undoes it)", markup=False)
        return Outcome(data=data, changed=changed, render=render, warnings=st.warnings)

    ui.run("patch apply", work)


@policy(writes=True, on_pending=OnPending.REFUSE)
@patch.command("rollback")
@_one_patch_options
@click.option("--force", is_flag=True, help="Restore the original even if the file changed since.")
@click.option("--dry-run", is_flag=True, help="Check, change nothing.")
@state_dir_option
@click.pass_obj
def rollback(ui, patch_id, pythons, patches_dir, force, dry_run, state_dir):
    """Undo PATCH_ID byte for byte (the transaction that applied it)."""
    from rocmrevive.install.patches import patch_named, rollback_patch

    def work() -> Outcome:
        spec = patch_named(_specs(patches_dir), patch_id)
        site = _pick_site(ui, spec, pythons)
        st, res = rollback_patch(ui.root, spec, site, state_dir=state_dir, force=force, dry_run=dry_run)
        data = {"patch": spec.to_json(), "status": st.to_json(), "transaction": res.to_json(), "dry_run": dry_run}
        return Outcome(data=data, changed=bool(res.changed and not dry_run), warnings=res.warnings,
                       render=lambda con: con.print(f"{res.state}: {st.file} is {st.state} "
                                                    f"(transaction {res.txid})", markup=False))

    ui.run("patch rollback", work)
