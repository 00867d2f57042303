"""What a gfx906 owner can do with a stock TheRock tree (ROCm 7.13, 7.14, 10.x) that has no gfx906
device code, as commands that resolve: AMD publishes its gfx906 device package to the nightly
stream only, never to a stable release, so "AMD's gfx906 package of the same release" does not
exist. The real choices, each with what it entails:

* a whole gfx906 stack (mixa3607/ML-gfx906's ROCm 7.14 apt repository; RomuloSK/MI50-ROCm-10.x,
  an isolated 10.0 prefix built from source), never mixed with AMD's own packages;
* AMD's nightly gfx906 device code, as a tree or venv of its own: a different build from a stable
  release's core, so never grafted into it (docs/therock-payloads.md says why);
* a local build of TheRock for gfx906.

Every name, version, tag and address printed comes from ``rocmrevive/data/therock-gfx906.toml``,
where each has the source it was read from; tests/test_gfx906_choices.py walks what recipe,
doctor, verify, install and explain print for these trees against that table.

    cs = choices("10.1.0", tree="/opt/rocm/core-10.1/lib/rocblas/library", layout="amd")
    summary("10.1.0", "/opt/rocm/core-10.1")   # the one line doctor, verify and install print
"""
from __future__ import annotations

import functools
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from importlib import resources

from rocmrevive.errors import RevError
from rocmrevive.fs import open_regular, read_fd
from rocmrevive.invocation import shell_command

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


@dataclass(frozen=True)
class Choice:
    kind: str                      # "whole-stack" | "nightly-build" | "local-build"
    title: str
    entails: list[str]
    commands: list[str]
    check: str                     # the rocmrevive command that checks the result (the same verify)
    sources: list[str] = field(default_factory=list)

    def to_json(self) -> dict:
        return {"kind": self.kind, "title": self.title, "entails": self.entails, "commands": self.commands,
                "check": self.check, "sources": self.sources}


@functools.lru_cache(maxsize=1)
def table() -> dict:
    """The checked table (``rocmrevive/data/therock-gfx906.toml``)."""
    return tomllib.loads(resources.files("rocmrevive").joinpath("data/therock-gfx906.toml").read_text())


def release_line(rocm_version: str | None) -> str | None:
    """``"10.1"`` for ``"10.1.0"``; None when unknown."""
    m = re.match(r"^(\d+)\.(\d+)", rocm_version or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def therock_release(rocm_version: str | None) -> bool:
    """True for a release TheRock builds (7.13 and later: 7.13, 7.14, 10.x; there is no 8 or 9)."""
    m = re.match(r"^(\d+)\.(\d+)", rocm_version or "")
    return m is not None and (int(m.group(1)), int(m.group(2))) >= (7, 13)


_NIGHTLY = re.compile(r"^\d+\.\d+\.\d+(?:a\d{8}|rc\d+|\.dev\d+)")


def nightly(rocm_version: str | None) -> bool:
    """True for a TheRock nightly or dev version (``7.15.0a20260630``): AMD publishes gfx906 device
    packages to those streams, at the very same version."""
    return bool(_NIGHTLY.match(rocm_version or ""))


def _stacks(line: str | None) -> list[dict]:
    return [s for s in table()["stack"] if line in s["releases"]]


MANIFEST = "share/therock/therock_manifest.json"   # TheRock's build identity (generate_therock_manifest.py)
MAX_MANIFEST = 1 << 20


def build_identity(root, prefix: str) -> dict:
    """The build a TheRock tree says it is (``<prefix>/share/therock/therock_manifest.json``:
    the TheRock commit, the CI run, the package version), read as hostile input: no link
    followed, no FIFO, at most 1 MiB. ``{}`` when absent; ``{"problem": ...}`` when refused."""
    path = f"{prefix.rstrip('/')}/{MANIFEST}"
    try:
        fd = open_regular(root.path(path), max_size=MAX_MANIFEST, what=path)
    except FileNotFoundError:
        return {}
    except (OSError, RevError) as exc:
        return {"problem": getattr(exc, "message", None) or f"{path}: {exc}"}
    try:
        doc = json.loads(read_fd(fd, max_size=MAX_MANIFEST, what=path))
    except (ValueError, RevError) as exc:
        return {"problem": f"{path}: not TheRock's manifest ({getattr(exc, 'message', None) or exc})"}
    finally:
        os.close(fd)
    if not isinstance(doc, dict):
        return {"problem": f"{path}: not TheRock's manifest (not an object)"}
    out = {k: doc.get(k) for k in ("the_rock_commit", "github_run_id", "rocm_package_version")
           if isinstance(doc.get(k), (str, int))}
    return {"manifest": path, **{k: str(v)[:80] for k, v in out.items()}}


def summary(rocm_version: str | None, tree: str, *, recipe: str | None = None) -> str:
    """The one line a finding, a verify check and install's reason print: why there is no AMD
    package to install, and the command that lists the real choices (``recipe``, as typed)."""
    if nightly(rocm_version):
        cmd = recipe or f"rocmrevive recipe --tree {shlex.quote(tree)}"
        return (f"these are TheRock nightly {rocm_version} libraries: AMD's gfx906 device code of this same build is "
                f"{table()['amd']['nightly_device_package']}=={rocm_version} on its nightly index ('Build Passing' "
                f"only, not tested): `{cmd}` prints the command")
    line = release_line(rocm_version) or "7.13+"
    stacks = ", ".join(s["name"].split(",")[0].split("'")[0] for s in _stacks(release_line(rocm_version)))
    cmd = recipe or f"rocmrevive recipe --tree {shlex.quote(tree)}"
    first = f"a whole gfx906 stack ({stacks}), " if stacks else ""
    return (f"AMD publishes no gfx906 device package for ROCm {line} (TheRock ships rocm-sdk-device-gfx906 to its "
            f"nightly stream only; gfx906 is 'Build Passing' there, not tested); the choices are {first}AMD's "
            f"nightly gfx906 build as a tree of its own, or a local build: `{cmd}` lists them with what each entails")


def other_stacks(rocm_version: str | None) -> str | None:
    """For a release no whole gfx906 stack is built for: the line naming those built for others."""
    line = release_line(rocm_version)
    if _stacks(line):
        return None
    named = "; ".join(f"{s['name'].split(',')[0].split(chr(39))[0]} builds ROCm {', '.join(s['releases'])}"
                      for s in table()["stack"])
    return f"no whole gfx906 stack is built for ROCm {line or '?'} ({named}): either means another release than this tree's"


def choices(rocm_version: str | None, *, tree: str, layout: str = "amd", build: dict | None = None) -> list[Choice]:
    """The choices for a TheRock tree of ``rocm_version`` (``layout`` ``python-rocm-sdk`` for a
    venv's wheels) whose rocBLAS folder is ``tree`` (a whole stack's own tree is checked by its own
    verify line; ``tree`` is named in the text around the choices)."""
    t = table()
    line = release_line(rocm_version)
    out: list[Choice] = []
    for s in _stacks(line):
        if s["id"].startswith("mixa3607"):
            pins = " ".join(f"{p}={s['version']}" for p in s["packages"])
            out.append(Choice(
                "whole-stack", s["name"], list(s["entails"]),
                [f"# on {s['distribution']}: remove AMD's ROCm apt sources, then add the gfx906 repository as "
                 f"{s['repository']} {s['repo_setup']} does",
                 "sudo apt-get update", f"sudo apt-get install {pins}"],
                "rocmrevive verify --tree /opt/rocm", list(s["sources"])))
        else:
            tag = t["tags"].get(line)
            out.append(Choice(
                "whole-stack", s["name"], list(s["entails"]),
                [f"git clone {s['repository']}.git mi50-rocm && cd mi50-rocm",
                 f"# a TheRock checkout at {tag}: {t['build']['repository']}",
                 f"{s['build_script']} --source-root <TheRock checkout>",
                 f"python3 {s['install_script']} --archive <build output>/{s['archive']} --prefix {s['prefix']}"],
                shell_command(["verify", "--tree", s['prefix']]), list(s["sources"])))
    amd = t["amd"]
    if layout == "python-rocm-sdk" and nightly(rocm_version):
        prefix = tree.split("/lib/python")[0] if "/lib/python" in tree else None
        pip = f"{prefix}/bin/pip" if prefix else "pip"
        out.append(Choice(
            "same-build-payload", f"AMD's gfx906 device wheel of this same nightly ({rocm_version})",
            [f"{amd['nightly_device_package']}=={rocm_version} is the device half of the very build whose host wheels "
             f"this environment has (TheRock publishes it to the dev and nightly streams)",
             f"gfx906: {amd['support']}", "pip installs it into this environment; pip uninstall takes it out again"],
            [f"{pip} install --index-url {amd['wheel_index']} \"{amd['nightly_device_package']}=={rocm_version}\""],
            shell_command(["verify", "--tree", tree]), list(amd["sources"])))
    nightly_entails = [
        f"AMD's gfx906 device code exists only as nightly builds ({amd['nightly_device_package']}; {amd['support']})",
        "a nightly is a different build from this tree's core: its device code is not version-matched to these host "
        "libraries, so it is installed as a tree or venv of its own, never copied into this one",
    ]
    if build and build.get("github_run_id"):
        nightly_entails.append(
            f"this tree's {MANIFEST} names TheRock commit {build.get('the_rock_commit') or '?'}, run "
            f"{build['github_run_id']}, package version {build.get('rocm_package_version') or '?'}: a stable release is "
            f"a promoted nightly, and only that run's own gfx906 output would be the same build")
    if layout == "python-rocm-sdk":
        cmds = ["python3 -m venv ~/rocm-nightly-gfx906",
                f"~/rocm-nightly-gfx906/bin/pip install --index-url {amd['wheel_index']} \"{amd['wheel_requirement']}\""]
        check = "rocmrevive verify   # finds the venv's rocBLAS copy (a venv under /root or /home/*)"
    else:
        dest = "/opt/therock-nightly-gfx906"
        cmds = [f"# pick a {amd['tarball_name']} from {amd['tarball_index']} (it carries .kpack files for every "
                f"target, gfx906 among them)",
                f"sudo mkdir -p {dest} && sudo tar -xf {amd['tarball_name']} -C {dest}"]
        check = shell_command(["verify", "--tree", dest])
    if not any(c.kind == "same-build-payload" for c in out):
        out.append(Choice("nightly-build", "AMD's nightly gfx906 build, as a tree of its own", nightly_entails, cmds,
                          check, list(amd["sources"])))
    b = t["build"]
    tag = t["tags"].get(line)
    clone = (f"git clone --branch {tag} {b['repository']} TheRock" if tag else
             f"git clone {b['repository']} TheRock   # then check out ROCm {line or '?'}'s release tag (not in "
             f"rocmrevive's table)")
    out.append(Choice(
        "local-build", f"a local build of TheRock for gfx906 (ROCm {line or '?'})",
        ["hours on many cores and tens of GB of disk; the result is a tree of its own, built for gfx906",
         f"TheRock leaves out {', '.join(b['excluded'])} for gfx906"],
        [clone, "cd TheRock && python3 build_tools/fetch_sources.py",
         f"cmake -B build -G Ninja {b['targets_option']} . && cmake --build build"],
        "rocmrevive verify --tree TheRock/build/dist/rocm", list(b["sources"])))
    return out


def script(rocm_version: str | None, tree: str, procs: list[str], cs: list[Choice]) -> str:
    """``recipe``'s text for a TheRock tree: the choices, each with what it entails, as comments
    and commands (nothing runs by itself: the user picks one)."""
    lines = [f"# {tree} is a TheRock tree (ROCm {rocm_version or '?'}): device code per target in .kpack archives,",
             f"# and none for {', '.join(procs)}. " + summary(rocm_version, tree).split(": `")[0] + ".",
             "# Pick ONE of the choices below; each is checked afterwards with rocmrevive's own verify."]
    if other_stacks(rocm_version):
        lines.append(f"# ({other_stacks(rocm_version)}.)")
    lines.append("")
    for i, c in enumerate(cs, 1):
        lines.append(f"# --- choice {i}: {c.title} ({c.kind})")
        lines += [f"#   - {e}" for e in c.entails]
        lines += [f"#   {cmd}" if not cmd.startswith("#") else f"#   {cmd[2:]}" for cmd in c.commands]
        lines.append(f"#   then: {c.check}")
        lines.append("")
    return "\n".join(lines)
