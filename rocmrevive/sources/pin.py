"""Keeping Debian pins current (scripts/pin.py, a maintainer's tool): a suite's signed index read
through a Debian mirror, each Debian pin of the manifests compared with it, completed with what
the snapshot fallback needs, and asked whether the mirror and the snapshot archive still serve it.

Debian's ``Packages`` indexes carry MD5sum and SHA256 only, while the snapshot archive serves
files by SHA1: the SHA1 is computed from the real bytes (a local copy whose size and sha256 match
the signed index, else the file downloaded and checked like an install's). ``seen`` is the
``Date`` of the signed ``InRelease`` that listed the pin: the snapshot archive as of that time
has the file at its pool path.

    idx = read_suite("http://mirror/debian", "sid", keyrings, Downloader())
    entry = idx.find("librocblas4", "6.4.4-4")
    sha1, where = sha1_of(entry, idx.mirror, [Path("/var/tmp/debs")], Path("/var/tmp/work"), dl)
    print(Pin.of(entry, idx, sha1).toml())
"""
from __future__ import annotations

import datetime
import email.utils
import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from rocmrevive.errors import RevError
from rocmrevive.hashing import hash_fd
from rocmrevive.rootfs import Root
from rocmrevive.sources import apt
from rocmrevive.sources.http import Downloader
from rocmrevive.sources.manifest import Manifest, Source
from rocmrevive.sources.resolve import MAX_INRELEASE
from rocmrevive.sources.snapshot import snapshot_urls


@dataclass
class SuiteIndex:
    """A suite's Packages index as its signed InRelease pins it, and when the archive made it."""

    mirror: str
    suite: str
    date: datetime.datetime
    signer: str
    packages: str

    def find(self, package: str, version: str, arch: str = "amd64") -> apt.PackageEntry | None:
        return apt.find_package(self.packages, package, version, arch)

    def versions(self, package: str) -> list[str]:
        return apt.package_versions(self.packages, package)


def machine_mirror(root: Root) -> tuple[str, list[Path]]:
    """The machine's Debian mirror (its apt configuration) and the keyrings its entry trusts
    (``Signed-By``; the machine's apt keyrings when it names none)."""
    for e in apt.read_apt_sources(root):
        mirrors = apt.debian_mirrors(root)
        for u in e.uris:
            if u.rstrip("/") in mirrors:
                keyrings = [root.path(e.signed_by)] if e.signed_by.startswith("/") else apt.host_keyrings(root)
                return u.rstrip("/"), keyrings
    raise RevError("USAGE", "no Debian mirror in the machine's apt configuration; pass --mirror URL")


def read_suite(mirror: str, suite: str, keyrings: list[Path], dl: Downloader, component: str = "main",
               arch: str = "amd64") -> SuiteIndex:
    """The suite's index through its InRelease, which a key of ``keyrings`` must have signed."""
    url = f"{mirror}/dists/{suite}/InRelease"
    text, signer = apt.verify_inrelease_any(dl.get_bytes(url, max_size=MAX_INRELEASE), keyrings, where=url)
    rel = apt.parse_release(text.decode("utf-8", "replace"))
    if suite not in (rel.suite, rel.codename):
        raise RevError("VERIFY_FAILED", f"{url} is for suite {rel.suite or '?'}, not {suite}; refused")
    try:
        date = email.utils.parsedate_to_datetime(rel.fields.get("date", ""))
    except (TypeError, ValueError):
        raise RevError("VERIFY_FAILED", f"{url}: no readable Date") from None
    path, size, digest = apt.pick_index(rel, component, arch)
    raw = dl.get_bytes(f"{mirror}/dists/{suite}/{path}", max_size=size, size=size, sha256=digest)
    return SuiteIndex(mirror, suite, date.astimezone(datetime.timezone.utc), signer,
                      apt.decompress_index(path, raw))


@dataclass
class Pin:
    """A Debian source entry as the signed index and the real bytes give it."""

    package: str
    version: str
    suite: str
    filename: str
    size: int
    sha256: str
    sha1: str
    seen: datetime.datetime

    @classmethod
    def of(cls, entry: apt.PackageEntry, idx: SuiteIndex, sha1: str) -> Pin:
        return cls(entry.package, entry.version, idx.suite, entry.filename, entry.size, entry.sha256, sha1, idx.date)

    def toml(self) -> str:
        return "\n".join([f'package = "{self.package}"', f'version = "{self.version}"', f'suite = "{self.suite}"',
                          f'filename = "{self.filename}"', f"size = {self.size}", f'sha256 = "{self.sha256}"',
                          f'sha1 = "{self.sha1}"', f"seen = {seen_text(self.seen)}"])


def seen_text(when: datetime.datetime) -> str:
    return when.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sums(path: Path) -> tuple[str, str, int]:
    """(sha256, sha1, size) of a file, read once."""
    h1 = hashlib.sha1()  # noqa: S324 - the snapshot archive's key; sha256 decides
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        sha256, size = hash_fd(fd, sink=h1.update)
    finally:
        os.close(fd)
    return sha256, h1.hexdigest(), size


def local_names(entry: apt.PackageEntry) -> list[str]:
    """Names a copy of the package may have in a folder: the pool's, and apt-get download's
    (epoch kept, ':' written %3a)."""
    pool = entry.filename.rsplit("/", 1)[-1]
    apt_name = f"{entry.package}_{entry.version.replace(':', '%3a')}_{entry.architecture}.deb"
    return list(dict.fromkeys([pool, apt_name]))


def sha1_of(entry: apt.PackageEntry, mirror: str, have: list[Path], work: Path, dl: Downloader
            ) -> tuple[str, str]:
    """(sha1, where the bytes were read) of the index entry's file: a copy in ``have`` whose size
    and sha256 are the index's, else the file downloaded from ``mirror`` into ``work`` (checked
    by the same size and sha256, then deleted)."""
    for d in have:
        for name in local_names(entry):
            p = Path(d) / name
            if not p.is_file() or p.stat().st_size != entry.size:
                continue
            sha256, sha1, _ = _sums(p)
            if sha256 == entry.sha256:
                return sha1, str(p)
    work.mkdir(parents=True, exist_ok=True)
    part = work / (entry.filename.rsplit("/", 1)[-1] + ".part")
    url = f"{mirror}/{entry.filename}"
    try:
        dl.download(url, part, size=entry.size, sha256=entry.sha256)
        _, sha1, _ = _sums(part)
    finally:
        part.unlink(missing_ok=True)
    return sha1, url


@dataclass
class PinReport:
    """One Debian pin against its suite's signed index: ``status`` "same" (every field as the
    index says, sha1 and seen the bytes' and the index's), "complete" (the same, with sha1 or seen
    missing or other in the manifest), "drifted" (the suite now has another version) or "differs"
    (the index lists the version with other bytes)."""

    manifest: Manifest
    source: Source
    status: str
    entry: apt.PackageEntry | None = None
    pin: Pin | None = None
    lines: list[str] = field(default_factory=list)
    sha1_from: str = ""


def debian_pins(manifests: list[Manifest]) -> list[tuple[Manifest, Source]]:
    return [(m, s) for m in manifests for s in m.sources if s.kind == "debian" and s.pinned]


def verify_pins(manifests: list[Manifest], mirror: str, keyrings: list[Path], dl: Downloader, have: list[Path],
                work: Path) -> list[PinReport]:
    """Each Debian pin of ``manifests`` against its suite's signed index on ``mirror``."""
    suites: dict[str, SuiteIndex] = {}
    out: list[PinReport] = []
    for m, s in debian_pins(manifests):
        if s.suite not in suites:
            suites[s.suite] = read_suite(mirror, s.suite, keyrings, dl, s.component, s.arch)
        idx = suites[s.suite]
        entry = idx.find(s.package, s.version, s.arch)
        if entry is None:
            now = idx.versions(s.package)
            out.append(PinReport(m, s, "drifted", lines=[
                f"{s.suite} has {s.package} {', '.join(now) or '(none at all)'}, not {s.version}"]))
            continue
        if (entry.filename, entry.size, entry.sha256) != (s.filename, s.size, s.sha256):
            out.append(PinReport(m, s, "differs", entry, lines=[
                f"the index lists {entry.filename} {entry.size} bytes sha256 {entry.sha256}; the manifest pins "
                f"{s.filename} {s.size} bytes sha256 {s.sha256}"]))
            continue
        sha1, where = sha1_of(entry, mirror, have, work, dl)
        pin = Pin.of(entry, idx, sha1)
        lines = []
        if s.sha1 != sha1:
            lines.append(f"sha1: the manifest has {s.sha1 or 'none'}, the file's is {sha1}")
        stamp = pin.seen.strftime("%Y%m%dT%H%M%SZ")
        if s.seen != stamp:
            lines.append(f"seen: the manifest has {s.seen or 'none'}, the index of {seen_text(pin.seen)} lists it")
        out.append(PinReport(m, s, "complete" if lines else "same", entry, pin, lines, where))
    return out


def write_snapshot_keys(path: Path, source_name: str, pin: Pin) -> bool:
    """Put ``sha1`` and ``seen`` of ``pin`` in the ``[[sources]]`` table named ``source_name`` of
    the manifest at ``path`` (right after its sha256 line, replacing earlier values); True when
    the file changed."""
    text = path.read_text()
    lines = text.split("\n")
    start = next((i for i, ln in enumerate(lines) if re.match(rf'^name\s*=\s*"{re.escape(source_name)}"\s*$', ln)),
                 None)
    if start is None:
        raise RevError("USAGE", f"{path}: no source named {source_name!r}")
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("[")), len(lines))
    block = [ln for ln in lines[start:end] if not re.match(r"^(sha1|seen)\s*=", ln)]
    at = next((i for i, ln in enumerate(block) if re.match(r"^sha256\s*=", ln)), None)
    if at is None:
        raise RevError("USAGE", f"{path}: source {source_name!r} has no sha256 line")
    block[at + 1:at + 1] = [f'sha1 = "{pin.sha1}"', f"seen = {seen_text(pin.seen)}"]
    new = "\n".join(lines[:start] + block + lines[end:])
    if new == text:
        return False
    path.write_text(new)
    return True


def probe(url: str, size: int, dl: Downloader) -> str:
    """Whether ``url`` serves a file of ``size`` bytes (a HEAD request, redirects followed): "ok",
    or what the server said."""
    try:
        r = dl.session.head(url, timeout=dl.timeout, allow_redirects=True)
    except Exception as exc:  # noqa: BLE001 - any failure to ask is an answer: "not reachable"
        return f"not reachable ({type(exc).__name__})"
    if r.status_code != 200:
        return f"HTTP {r.status_code}"
    length = r.headers.get("Content-Length")
    if length is not None and length.isdigit() and int(length) != size:
        return f"serves {int(length)} bytes, not {size}"
    return "ok"


@dataclass
class Reachability:
    """Whether one pin can be fetched today: from the mirror (its suite lists it and the pool
    serves it) and from the snapshot archive (each URL form)."""

    manifest: Manifest
    source: Source
    mirror: str
    snapshot: dict[str, str]

    @property
    def ok(self) -> bool:
        return self.mirror == "ok" or "ok" in self.snapshot.values()


def check_pins(manifests: list[Manifest], mirror: str, snapshot: str | None, keyrings: list[Path],
               dl: Downloader) -> list[Reachability]:
    """Per Debian pin: does the mirror's suite still list it (signed index) and serve it, and
    does the snapshot archive serve it (by content and by date)?"""
    suites: dict[str, SuiteIndex | RevError] = {}
    out = []
    for m, s in debian_pins(manifests):
        if s.suite not in suites:
            try:
                suites[s.suite] = read_suite(mirror, s.suite, keyrings, dl, s.component, s.arch)
            except RevError as exc:
                suites[s.suite] = exc
        idx = suites[s.suite]
        assert s.size is not None
        if isinstance(idx, RevError):
            on_mirror = f"index unreadable ({idx.message})"
        elif idx.find(s.package, s.version, s.arch) is None:
            on_mirror = f"{s.suite} no longer lists it (has {', '.join(idx.versions(s.package)) or 'none'})"
        else:
            on_mirror = probe(f"{mirror}/{s.filename}", s.size, dl)
        snap = {how: probe(url, s.size, dl) for url, how in snapshot_urls(snapshot, s)} if snapshot else {}
        out.append(Reachability(m, s, on_mirror, snap))
    return out
