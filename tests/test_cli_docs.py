"""Shell completion (`rocmrevive completion bash|zsh|fish`, click's protocol) and the man page
generated from the click help (scripts/gen_man.py -> docs/rocmrevive.1)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO


@pytest.fixture(scope="module")
def bindir(tmp_path_factory) -> Path:
    """`rocmrevive` on PATH as a console script would be: this checkout under this interpreter."""
    d = tmp_path_factory.mktemp("bin")
    exe = d / "rocmrevive"
    exe.write_text(f"#!{sys.executable}\nimport sys\nsys.path.insert(0, {str(REPO)!r})\n"
                   "from rocmrevive.cli.main import main\nsys.exit(main())\n")
    exe.chmod(0o755)
    return d


def _env(bindir: Path, **kw) -> dict:
    return {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}", **kw}


def test_man_page_is_current():
    r = subprocess.run([sys.executable, "scripts/gen_man.py", "--check"], cwd=REPO, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr + " (run: python3 scripts/gen_man.py, then commit docs/rocmrevive.1)"


def test_man_page_renders_without_warnings_and_lists_every_command(bindir):
    r = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-P-cbou", str(REPO / "docs/rocmrevive.1")],
                       capture_output=True, text=True)  # -P-cbou: no overstriking
    assert r.returncode == 0 and r.stderr == "", r.stderr
    page = r.stdout.replace("\u2010", "-")
    for word in ("rocmrevive install [OPTIONS]", "rocmrevive rccl audit", "rocmrevive hook install",
                 "/etc/rocmrevive/config.toml", "CHANGES_PENDING", "--cross-version"):
        assert word in page, word


def test_every_listed_command_has_a_section(bindir):
    page = (REPO / "docs/rocmrevive.1").read_text()
    r = subprocess.run(["rocmrevive", "--help"], capture_output=True, text=True, env=_env(bindir), check=True)
    names = [line.split()[0] for line in r.stdout.split("Commands:")[1].splitlines() if line.startswith("  ")
             and not line.startswith("   ")]
    assert "install" in names and "completion" in names
    for name in names:
        assert f'.SS "rocmrevive {name.replace("-", chr(92) + "-")} ' in page, name


def _bash_complete(bindir: Path, words: str) -> list[str]:
    """Source the generated script in a real bash and run its completion function on `words`."""
    script = subprocess.run(["rocmrevive", "completion", "bash"], capture_output=True, text=True,
                            env=_env(bindir), check=True).stdout
    n = len(words.split()) - (0 if words.endswith(" ") else 1)
    prog = (f'{script}\nCOMP_WORDS=({words} {"" if not words.endswith(" ") else chr(39) * 2})\n'
            f'COMP_CWORD={n}\n_rocmrevive_completion rocmrevive\nprintf "%s\\n" "${{COMPREPLY[@]}}"\n')
    r = subprocess.run(["bash", "--norc", "-c", prog], capture_output=True, text=True, env=_env(bindir))
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_bash_completes_commands_options_and_choices(bindir):
    assert {"install", "inspect"} <= set(_bash_complete(bindir, "rocmrevive ins"))
    assert "--cross-version" in _bash_complete(bindir, "rocmrevive install --cr")
    assert _bash_complete(bindir, "rocmrevive completion ") == ["bash", "zsh", "fish"]
    assert {"audit", "install", "recipe", "env"} <= set(_bash_complete(bindir, "rocmrevive rccl "))


@pytest.mark.parametrize("shell, marker", [("zsh", "compdef _rocmrevive_completion rocmrevive"),
                                           ("fish", "complete --no-files --command rocmrevive")])
def test_zsh_and_fish_scripts_and_their_protocol(bindir, shell, marker):
    script = subprocess.run(["rocmrevive", "completion", shell], capture_output=True, text=True,
                            env=_env(bindir), check=True).stdout
    assert marker in script and f"_ROCMREVIVE_COMPLETE={shell}_complete" in script
    # what the script runs: rocmrevive answers for that shell
    # (zsh passes the word's index, fish the incomplete word itself)
    env = _env(bindir, _ROCMREVIVE_COMPLETE=f"{shell}_complete", COMP_WORDS="rocmrevive ins",
               COMP_CWORD="1" if shell == "zsh" else "ins")
    r = subprocess.run(["rocmrevive"], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert "install" in r.stdout and "inspect" in r.stdout
    exe = shutil.which(shell)  # installed by scripts/setup-system.sh
    assert exe, f"{shell} is not installed: run scripts/setup-system.sh"
    flag = ["-n"] if shell == "zsh" else ["--no-execute"]
    # the shell's own parser accepts the script
    assert subprocess.run([exe, *flag], input=script, text=True).returncode == 0


def test_unknown_shell_is_a_usage_error(bindir):
    r = subprocess.run(["rocmrevive", "completion", "tcsh"], capture_output=True, text=True, env=_env(bindir))
    assert r.returncode == 2 and "tcsh" in r.stderr


def test_help_lists_the_newcomers_path_first(bindir):
    r = subprocess.run(["rocmrevive", "--help"], capture_output=True, text=True, env=_env(bindir), check=True)
    names = [line.split()[0] for line in r.stdout.split("Commands:")[1].splitlines() if line.startswith("  ")
             and not line.startswith("   ")]
    assert names[:6] == ["detect", "doctor", "install", "verify", "status", "rollback"]
    assert names[6:] == sorted(names[6:])


def test_every_help_ends_with_an_example_that_fits_80_columns():
    import click
    from click.testing import CliRunner

    from rocmrevive.cli.main import cli

    def paths(group, ctx, prefix):
        for name in group.list_commands(ctx):
            sub = group.get_command(ctx, name)
            yield prefix + [name]
            if isinstance(sub, click.Group):
                yield from paths(sub, click.Context(sub, info_name=name, parent=ctx), prefix + [name])

    seen = list(paths(cli, click.Context(cli, info_name="rocmrevive"), []))
    assert len(seen) > 30
    for words in seen:
        out = CliRunner().invoke(cli, [*words, "--help"], terminal_width=80).output
        head, _, rest = out.partition("\n  Examples:\n")
        assert rest, f"rocmrevive {' '.join(words)} --help has no example"
        example = rest.split("\n\n")[0].splitlines()
        assert any(line.strip().startswith(("rocmrevive", "sudo rocmrevive", "eval")) for line in example), words
        assert all(len(line) <= 80 for line in example), example


def test_man_page_has_examples_and_the_environment():
    page = subprocess.run(["groff", "-man", "-Tutf8", "-P-cbou", str(REPO / "docs/rocmrevive.1")],
                          capture_output=True, text=True).stdout.replace("\u2010", "-")
    examples = page.split("EXAMPLES\n")[1].split("\nFILES\n")[0]
    assert "sudo rocmrevive install --check --diff" in examples and "sudo rocmrevive rollback" in examples
    order = [examples.index(f"rocmrevive {w}") for w in ("detect", "doctor", "install", "verify", "status", "rollback")]
    assert order == sorted(order)
    env = page.split("ENVIRONMENT\n")[1].split("\nEXIT STATUS\n")[0]
    assert "ROCMREVIVE_TRUST_SHARED" in env and "ROCMREVIVE_ROOT" in env


def _protocol(bindir: Path, words: str, **env) -> list[str]:
    """click's completion protocol as the shell scripts call it: 'type,value' lines."""
    n = len(words.split()) - (0 if words.endswith(" ") else 1)
    r = subprocess.run(["rocmrevive"], capture_output=True, text=True, cwd="/",
                       env=_env(bindir, _ROCMREVIVE_COMPLETE="bash_complete", COMP_WORDS=words, COMP_CWORD=str(n), **env))
    assert r.returncode == 0 and r.stderr == "", r.stderr
    return [line for line in r.stdout.splitlines() if line]


def test_values_complete_files_folders_targets_and_transaction_ids(bindir, tmp_path):
    for opt, kind in (("install --from", "file"), ("fetch --from", "file"), ("install --tree", "dir"),
                      ("verify --tree", "dir"), ("install --cache", "dir"), ("install --manifests", "dir"),
                      ("status --cache", "dir"), ("audit --manifests", "dir")):
        assert _protocol(bindir, f"rocmrevive {opt} /var/li") == [f"{kind},/var/li"], opt
    targets = _protocol(bindir, "rocmrevive install --target gfx906")
    assert targets[:2] == ["plain,gfx906", "plain,gfx906:sramecc+:xnack-"]
    assert "plain,gfx90a" in _protocol(bindir, "rocmrevive verify --target gfx90")
    tx = tmp_path / "var/lib/rocmrevive/tx"
    tx.mkdir(parents=True)
    for name in ("0001-20261203T100000Z.jsonl", "0002-20261203T110000Z.jsonl", ".0003-x.jsonl.tmp"):
        (tx / name).write_text("")
    ids = ["plain,0002-20261203T110000Z", "plain,0001-20261203T100000Z"]
    assert _protocol(bindir, f"rocmrevive --root {tmp_path} rollback ") == ids
    assert _protocol(bindir, "rocmrevive rollback ", ROCMREVIVE_ROOT=str(tmp_path)) == ids
    assert _protocol(bindir, f"rocmrevive rollback --root {tmp_path} 0001") == ids[1:]
    assert _protocol(bindir, f"rocmrevive --root {tmp_path / 'none'} rollback ") == []   # unreadable: nothing



def test_the_bash_script_hands_file_and_folder_values_to_bash(bindir):
    """A 'file'/'dir' answer becomes bash's own file-name completion (compopt), which the shell
    does after the function returns: what the protocol test above asks rocmrevive for."""
    script = subprocess.run(["rocmrevive", "completion", "bash"], capture_output=True, text=True,
                            env=_env(bindir), check=True).stdout
    assert "compopt -o default" in script and "compopt -o dirnames" in script
