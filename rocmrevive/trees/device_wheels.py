"""TheRock's per-target device wheels in a Python environment (``rocm-sdk-device-<target>``,
``rocm-sdk-libraries-<family>``, ``amd-torch-device-<target>``, ...), judged by content: does any
file the wheel installed (its ``RECORD``) hold device code? The package index serves 0.0.1.dev0
placeholders under some of these names (``rocm-sdk-device-gfx906``, ``rocm-sdk-libraries-gfx90x-dcgpu``:
about 1.6 KB, one ``__init__.py``); ``pip install`` of them "succeeds" and leaves no code object.
The name only selects what to read; the verdict is the files': an AMDGPU ELF, an offload bundle, a
compressed bundle, a host ELF with a ``.hip_fatbin`` (``codeobj.sniff``) or a ``.kpack`` archive
(``KPAK``) counts as device code, anything else does not.

Every file is read as hostile input (the venv may be another user's): below a descriptor on the
site-packages folder, no component followed when it is a link, no FIFO or device, the first 64
bytes and the section table only (``codeobj.sniff``).

    wheels = find_device_wheels(Root("/"), envs)
    [w.name for w in wheels if w.placeholder]     # ['rocm-sdk-device-gfx906']
"""
from __future__ import annotations

import csv
import io
import os
import re
from dataclasses import dataclass, field

from rocmrevive.codeobj.sniff import sniff
from rocmrevive.errors import RevError
from rocmrevive.fs import open_regular, read_fd
from rocmrevive.hardware.sysfs import list_dir
from rocmrevive.rootfs import Root

# distribution names (normalised: lower case, '-' and '.' as '_') whose files are TheRock device code
_DEVICE_DIST = re.compile(r"^(?:rocm_sdk_device_|rocm_sdk_libraries_gfx|amd_torch_device_|amd_torchvision_device_)")
MAX_FILES = 50_000          # RECORD rows read per wheel (a real device wheel has a few hundred)
MAX_RECORD = 16 << 20


@dataclass
class DeviceWheel:
    name: str                    # as METADATA spells it
    version: str
    site: str                    # machine path of the site-packages
    files: int = 0               # files of the wheel that were read (RECORD rows outside .dist-info)
    size: int = 0                # their bytes
    device_files: list[str] = field(default_factory=list)    # those holding device code (relative)
    problems: list[str] = field(default_factory=list)

    @property
    def placeholder(self) -> bool:
        """True when every file the wheel installed was read and none holds device code."""
        return not self.device_files and not self.problems

    def to_json(self) -> dict:
        return {"name": self.name, "version": self.version, "site_packages": self.site, "files": self.files,
                "bytes": self.size, "device_files": self.device_files[:20], "device_code": bool(self.device_files),
                "placeholder": self.placeholder, "problems": self.problems, "line": self.line()}

    def line(self) -> str:
        """The wheel's one line, what it is first ("placeholder: …", "device wheel: …")."""
        return ("placeholder: " if self.placeholder else "device wheel: ") + self._what()

    def _what(self) -> str:
        if self.placeholder:
            return (f"{self.name} {self.version} in {self.site}: no device code ({self.files} file(s), {self.size:,} "
                    f"bytes, no code object or .kpack among them): a placeholder, not the package its name says")
        if self.device_files:
            return f"{self.name} {self.version} in {self.site}: device code in {len(self.device_files)} file(s)"
        return f"{self.name} {self.version} in {self.site}: not read ({'; '.join(self.problems[:2])})"


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


def _device_kind(fd: int, size: int) -> str | None:
    head = os.pread(fd, 64, 0)
    if head[:4] == b"KPAK":
        return "kpack"
    return sniff(fd, size, head)


def _read_small(site_fd: int, rel: str, shown: str) -> bytes:
    """A METADATA or RECORD below the site folder: no link followed, no FIFO, size-capped."""

    fd = open_regular(rel, max_size=MAX_RECORD, dir_fd=site_fd, what=shown)
    try:
        return read_fd(fd, max_size=MAX_RECORD, what=shown)
    finally:
        os.close(fd)


def _read_wheel(site_fd: int, site: str, dist_info: str) -> DeviceWheel | None:
    stem = dist_info[: -len(".dist-info")]
    dname, _, version = stem.rpartition("-")
    if not _DEVICE_DIST.match(_norm(dname)):
        return None
    w = DeviceWheel(dname, version, site)
    try:
        meta = _read_small(site_fd, f"{dist_info}/METADATA", f"{site}/{dist_info}/METADATA").decode(errors="replace")
        rows = _read_small(site_fd, f"{dist_info}/RECORD", f"{site}/{dist_info}/RECORD")
    except FileNotFoundError as exc:
        w.problems.append(f"{dist_info}: {exc.strerror or 'missing'} ({os.path.basename(exc.filename or 'RECORD')})")
        return w
    except (OSError, RevError) as exc:
        w.problems.append(getattr(exc, "message", None) or str(exc))
        return w
    for key, pat in (("name", r"^Name:\s*(\S+)"), ("version", r"^Version:\s*(\S+)")):
        m = re.search(pat, meta, re.M)
        if m:
            setattr(w, key, m.group(1))
    try:
        paths = [r[0] for r in csv.reader(io.StringIO(rows.decode(errors="replace"))) if r]
    except csv.Error as exc:
        w.problems.append(f"{site}/{dist_info}/RECORD: not CSV ({exc})")
        return w
    for rel in paths[:MAX_FILES]:
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts or parts[0].endswith(".dist-info") or not rel:
            continue
        try:
            fd = open_regular(rel, dir_fd=site_fd, what=f"{site}/{rel}")
        except FileNotFoundError:
            continue                       # listed but gone: nothing there to hold code
        except (OSError, RevError) as exc:
            w.problems.append(getattr(exc, "message", None) or f"{site}/{rel}: {exc}")
            continue
        try:
            size = os.fstat(fd).st_size
            w.files += 1
            w.size += size
            if _device_kind(fd, size):
                w.device_files.append(rel)
        except OSError as exc:
            w.problems.append(f"{site}/{rel}: {exc.strerror}")
        finally:
            os.close(fd)
    if len(paths) > MAX_FILES:
        w.problems.append(f"{site}/{dist_info}/RECORD lists {len(paths):,} files; the first {MAX_FILES:,} were read")
    return w


def find_device_wheels(root: Root, envs) -> list[DeviceWheel]:
    """The TheRock device wheels installed in ``envs`` (``trees.pythonenv.PythonEnv``), each
    read by content."""

    out: list[DeviceWheel] = []
    seen: set[str] = set()
    for env in envs:
        names = [n for n in list_dir(root.path(env.site_packages)) if n.endswith(".dist-info")
                 and _DEVICE_DIST.match(_norm(n[: -len(".dist-info")].rpartition("-")[0]))]
        if not names or env.site_packages in seen:
            continue
        seen.add(env.site_packages)
        try:
            sfd = os.open(root.resolve(env.site_packages), os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            try:
                for n in sorted(names):
                    w = _read_wheel(sfd, env.site_packages, n)
                    if w is not None:
                        out.append(w)
            finally:
                os.close(sfd)
        except (OSError, ValueError, RevError) as exc:
            out.append(DeviceWheel("?", "?", env.site_packages,
                                   problems=[getattr(exc, "message", None) or f"{env.site_packages}: {exc}"]))
    return out
