"""Where the programs a gfx906 owner runs are, and which GPU backend each build carries: llama.cpp
builds (``libggml-hip.so`` / ``libggml-vulkan.so`` beside its binaries), Ollama's runner folders
(``lib/ollama/rocm*`` / ``vulkan*``), vLLM and ComfyUI in Python environments, a ComfyUI checkout.
Names only: nothing is opened, run or imported; a name that is not printable is skipped.

    apps = find_apps(Root("/"), envs)   # [App(kind="llama.cpp", where="/opt/llama.cpp/build/bin", backends=["vulkan"])]
"""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

from rocmrevive.fs import printable_name
from rocmrevive.rootfs import Root

# llama.cpp: its CMake puts the backend libraries beside the binaries (build/bin) or in <prefix>/lib
LLAMA_PLACES = ("/usr/local/lib", "/usr/local/bin", "/usr/lib", "/usr/lib/x86_64-linux-gnu", "/opt/*/build*/bin",
                "/opt/*/lib", "/opt/llama.cpp*/build*/bin", "/home/*/llama.cpp*/build*/bin", "/home/*/*/llama.cpp*/build*/bin",
                "/root/llama.cpp*/build*/bin", "/home/*/.local/lib")
BACKEND_LIBS = {"libggml-hip.so": "hip", "libggml-vulkan.so": "vulkan"}
OLLAMA_PLACES = ("/usr/lib/ollama", "/usr/local/lib/ollama", "/usr/share/ollama/lib", "/opt/ollama/lib/ollama",
                 "/opt/ollama")
COMFY_PLACES = ("/opt/ComfyUI", "/home/*/ComfyUI", "/home/*/*/ComfyUI", "/root/ComfyUI", "/srv/ComfyUI")


@dataclass(frozen=True)
class App:
    kind: str                    # "llama.cpp" | "ollama" | "vllm" | "comfyui" | "torch"
    where: str                   # machine path
    backends: tuple[str, ...] = ()   # "hip", "vulkan" (llama.cpp, Ollama)
    version: str | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        return {"kind": self.kind, "where": self.where, "backends": list(self.backends), "version": self.version,
                "notes": list(self.notes)}


def _glob(root: Root, pattern: str) -> list[str]:
    base = "" if root.is_host else glob.escape(str(root.base))
    out = []
    for p in sorted(glob.glob(base + pattern)):
        m = root.machine_path(p)
        if printable_name(m):
            out.append(m)
    return out


def _names(root: Root, folder: str) -> list[str]:
    try:
        return sorted(n for n in os.listdir(root.path(folder)) if printable_name(n))
    except OSError:
        return []


def _llama_builds(root: Root) -> list[App]:
    out: list[App] = []
    seen: set[str] = set()
    for pat in LLAMA_PLACES:
        for folder in _glob(root, pat):
            if folder in seen or not root.path(folder).is_dir():
                continue
            seen.add(folder)
            names = _names(root, folder)
            backends = sorted({b for lib, b in BACKEND_LIBS.items()
                               if any(n == lib or n.startswith(lib + ".") for n in names)})
            if backends and "ollama" not in folder:
                out.append(App("llama.cpp", folder, tuple(backends)))
    return out


def _ollama(root: Root) -> list[App]:
    out: list[App] = []
    for pat in OLLAMA_PLACES:
        for folder in _glob(root, pat):
            if not root.path(folder).is_dir() or any(a.where == folder for a in out):
                continue
            backends = set()
            for sub in _names(root, folder):
                if sub.startswith("rocm"):
                    backends.add("hip")
                elif sub.startswith("vulkan"):
                    backends.add("vulkan")
                elif sub.startswith("libggml-vulkan.so"):
                    backends.add("vulkan")
            if backends or any(n.startswith("libggml") for n in _names(root, folder)):
                out.append(App("ollama", folder, tuple(sorted(backends))))
    return out


def _dist(root: Root, site: str, name: str) -> str | None:
    """The version of distribution ``name`` installed in ``site`` (its dist-info folder name)."""
    for n in _names(root, site):
        if n.lower().startswith(name + "-") and n.endswith(".dist-info"):
            return n[len(name) + 1:-len(".dist-info")]
    return None


def find_apps(root: Root, envs=()) -> list[App]:
    """Every llama.cpp build, Ollama install, vLLM, ComfyUI and PyTorch found (names only)."""
    out = _llama_builds(root) + _ollama(root)
    for e in envs:
        where = e.prefix or e.site_packages
        if e.torch_version:
            out.append(App("torch", where, ("hip",) if e.torch_hip else (), e.torch_version))
        for dist in ("vllm", "comfyui"):
            v = _dist(root, e.site_packages, dist)
            if v:
                out.append(App(dist, where, (), v))
    for pat in COMFY_PLACES:
        for folder in _glob(root, pat):
            if root.path(f"{folder}/main.py").is_file() and root.path(f"{folder}/comfy").is_dir():
                out.append(App("comfyui", folder))
    return out
