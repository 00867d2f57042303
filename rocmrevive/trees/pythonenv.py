"""Python environments that may carry their own ROCm libraries (PyTorch ROCm wheels ship rocBLAS
in ``site-packages/torch/lib``). Found from interpreters or venvs the user names (``--python``)
and from common places under the root; nothing is executed, only files are read.

    envs = find_envs(Root("/"), ["/home/alice/venv/bin/python"]); envs[0].torch_version
"""
from __future__ import annotations

import glob
import re
from dataclasses import dataclass
from pathlib import Path

from rocmrevive.hardware.sysfs import read_text
from rocmrevive.rootfs import Root
from rocmrevive.trees.trust import decide

# bounded patterns: no recursive walk of home folders. glob's "*" skips dot-folders, hence ".*".
COMMON_SITE_PATTERNS = (
    "/usr/lib/python3*/site-packages", "/usr/lib/python3/dist-packages", "/usr/lib64/python3*/site-packages",
    "/usr/local/lib/python3*/site-packages", "/usr/local/lib/python3*/dist-packages",
    "/opt/conda/lib/python3*/site-packages", "/opt/conda/envs/*/lib/python3*/site-packages",
    "/opt/*/lib/python3*/site-packages", "/opt/*/*/lib/python3*/site-packages",
    "/opt/*/.*/lib/python3*/site-packages",
    "/root/*/lib/python3*/site-packages", "/root/.*/lib/python3*/site-packages",
    "/root/*/*/lib/python3*/site-packages", "/root/*/.*/lib/python3*/site-packages",
    "/home/*/*/lib/python3*/site-packages", "/home/*/.*/lib/python3*/site-packages",
    "/home/*/*/*/lib/python3*/site-packages", "/home/*/*/.*/lib/python3*/site-packages",
    "/home/*/*/envs/*/lib/python3*/site-packages", "/home/*/.*/envs/*/lib/python3*/site-packages",
    "/home/*/.pyenv/versions/*/lib/python3*/site-packages",
)
_VERSION_LINE = re.compile(r"""^(__version__|hip|cuda|git_version)\s*(?::[^=]*)?=\s*['"]([^'"]*)['"]""", re.M)


@dataclass
class PythonEnv:
    site_packages: str              # machine path
    prefix: str | None              # the environment's prefix (venv folder)
    python: str | None              # "3.12", from the lib/pythonX.Y folder name
    named: bool = False             # given with --python
    torch_version: str | None = None
    torch_hip: str | None = None    # torch.version.hip: the ROCm the wheel was built with
    trust: dict | None = None       # who may write its site-packages (trees.trust; a venv of alice's: alice)

    @property
    def label(self) -> str:
        where = self.prefix or self.site_packages
        return f"{where} (torch {self.torch_version})" if self.torch_version else where

    def to_json(self) -> dict:
        return {"site_packages": self.site_packages, "prefix": self.prefix, "python": self.python,
                "named": self.named, "torch_version": self.torch_version, "torch_hip": self.torch_hip,
                "trust": self.trust}


def _glob(root: Root, pattern: str) -> list[str]:
    base = "" if root.is_host else glob.escape(str(root.base))
    return sorted(root.machine_path(p) for p in glob.glob(base + pattern))


def _env_from_site(root: Root, site: str, named: bool = False) -> PythonEnv:
    p = Path(site)
    python = None
    m = re.match(r"^python(\d+\.\d+)$", p.parent.name)
    if m:
        python = m.group(1)
    prefix = str(p.parent.parent.parent) if p.parent.parent.name in ("lib", "lib64") else None
    env = PythonEnv(site, prefix, python, named)
    try:
        env.trust = decide(root.resolve(site)).to_json()
    except (ValueError, OSError):  # a link loop, a folder that went away: not decided, still read
        env.trust = None
    text, _ = read_text(root.path(f"{site}/torch/version.py"))
    if text:
        fields = dict(_VERSION_LINE.findall(text))
        env.torch_version = fields.get("__version__")
        env.torch_hip = fields.get("hip") or None
    return env


def sites_for(root: Root, given: str) -> tuple[list[str], str | None]:
    """Site-packages folders for an interpreter, a venv/prefix folder or a site-packages folder."""
    real = root.path(given)
    if not real.exists() and not real.is_symlink():  # a venv's python may point outside the root
        return [], f"{given} does not exist"
    p = given.rstrip("/")
    if real.is_dir() and Path(p).name in ("site-packages", "dist-packages"):
        return [p], None
    if real.is_file() or real.is_symlink():
        # an interpreter: a venv's bin/python, or a system python whose prefix is its real location
        bindir = Path(p).parent
        prefix = str(bindir.parent)
        if not root.path(f"{prefix}/pyvenv.cfg").exists():
            try:
                prefix = str(Path(root.machine_path(root.resolve(p))).parent.parent)
            except (ValueError, OSError):
                pass
        ver = re.match(r"^python(\d+\.\d+)", Path(p).name)
        pat = f"python{ver.group(1)}" if ver else "python3*"
    else:
        prefix, pat = p, "python3*"
    found = _glob(root, f"{glob.escape(prefix)}/lib/{pat}/site-packages")
    found += _glob(root, f"{glob.escape(prefix)}/lib/{pat}/dist-packages")
    if prefix in ("/usr", "/usr/local"):
        found += _glob(root, f"{prefix}/lib/python3/dist-packages")
    if not found:
        return [], f"no site-packages under {prefix} (pass the environment folder or its site-packages)"
    return found, None


def find_envs(root: Root, pythons=(), *, common: bool = True) -> tuple[list[PythonEnv], list[str]]:
    seen: dict[str, PythonEnv] = {}
    problems: list[str] = []
    for given in pythons:
        sites, problem = sites_for(root, str(given))
        if problem:
            problems.append(f"--python {given}: {problem}")
        for s in sites:
            seen.setdefault(s, _env_from_site(root, s, named=True))
    if common:
        for pattern in COMMON_SITE_PATTERNS:
            for s in _glob(root, pattern):
                if s not in seen:
                    seen[s] = _env_from_site(root, s)
    return list(seen.values()), problems
