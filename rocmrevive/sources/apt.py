"""apt repositories: the host's apt configuration, signed ``InRelease`` files, ``Packages`` indexes.

The verification chain (the same apt itself uses): ``dists/<suite>/InRelease`` is checked with
``gpgv`` and must carry a good signature by the key whose fingerprint the manifest pins; its
SHA256 section pins ``<component>/binary-<arch>/Packages.{xz,gz}``; the Packages stanza of the
package pins the ``.deb`` (Filename, Size, SHA256). Fields are parsed as deb822 (field order
varies between repositories: docs/formats.md §9.1).

    text, signer = verify_inrelease(data, "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C", keyrings)
    rel = parse_release(text); rel.sha256["main/binary-amd64/Packages.xz"]   # (size, hex)
    entry = find_package(decompress_index("Packages.xz", raw), "rocblas", "4.3.0.60303-74~22.04")
"""
from __future__ import annotations

import base64
import bz2
import lzma
import os
import re
import shutil
import subprocess
import tempfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root

MAX_INDEX_BYTES = 1 << 30  # a decompressed Packages index (Debian sid's is ~100 MB)


# --------------------------------------------------------------------------------------------
# deb822


def iter_stanzas(text: str) -> Iterator[dict[str, str]]:
    """Paragraphs of a deb822 file as dicts with lower-case field names; continuation lines are
    joined with newlines; ``#`` comment lines are skipped."""
    cur: dict[str, str] = {}
    last: str | None = None
    for line in text.splitlines():
        if not line.strip():
            if cur:
                yield cur
            cur, last = {}, None
            continue
        if line.startswith("#"):
            continue
        if line[0] in " \t":
            if last is not None:
                cur[last] += "\n" + line.strip()
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        last = key.strip().lower()
        cur[last] = value.strip()
    if cur:
        yield cur


@dataclass(frozen=True)
class PackageEntry:
    package: str
    version: str
    architecture: str
    filename: str
    size: int
    sha256: str
    fields: dict = field(default_factory=dict, compare=False, repr=False)


def find_package(packages_text: str, package: str, version: str, arch: str = "amd64") -> PackageEntry | None:
    """The stanza of ``package`` at ``version`` for ``arch`` (or "all"), or None."""
    found: PackageEntry | None = None
    for st in iter_stanzas(packages_text):
        if st.get("package") != package or st.get("version") != version:
            continue
        a = st.get("architecture", "")
        if a not in (arch, "all"):
            continue
        try:
            entry = PackageEntry(package, version, a, st["filename"], int(st["size"]), st["sha256"].lower(), st)
        except (KeyError, ValueError):
            raise RevError("VERIFY_FAILED", f"the index entry of {package} {version} lacks Filename, Size or "
                                            f"SHA256") from None
        if not re.match(r"^[0-9a-f]{64}$", entry.sha256):
            raise RevError("VERIFY_FAILED", f"the index entry of {package} {version} has a malformed SHA256")
        if found is not None and (found.sha256, found.filename) != (entry.sha256, entry.filename):
            raise RevError("VERIFY_FAILED", f"the index lists {package} {version} twice with different files")
        found = found or entry
    return found


def package_versions(packages_text: str, package: str) -> list[str]:
    return sorted({st.get("version", "?") for st in iter_stanzas(packages_text) if st.get("package") == package})


def decompress_index(name: str, data: bytes, limit: int = MAX_INDEX_BYTES) -> str:
    """Packages / Packages.xz / .gz / .bz2 as text, refusing more than ``limit`` bytes."""
    try:
        if name.endswith(".xz"):
            out = lzma.LZMADecompressor().decompress(data, max_length=limit + 1)
        elif name.endswith(".gz"):
            out = zlib.decompressobj(wbits=47).decompress(data, limit + 1)
        elif name.endswith(".bz2"):
            out = bz2.BZ2Decompressor().decompress(data, max_length=limit + 1)
        else:
            out = data
    except (lzma.LZMAError, zlib.error, OSError, EOFError) as exc:
        raise RevError("VERIFY_FAILED", f"{name}: cannot decompress the index ({exc})") from None
    if len(out) > limit:
        raise RevError("VERIFY_FAILED", f"{name}: the index expands beyond {limit >> 20} MiB")
    return out.decode("utf-8", "replace")


# --------------------------------------------------------------------------------------------
# Release / InRelease


@dataclass(frozen=True)
class Release:
    fields: dict
    sha256: dict  # path relative to dists/<suite>/ -> (size, hex)

    @property
    def suite(self) -> str:
        return self.fields.get("suite", "")

    @property
    def codename(self) -> str:
        return self.fields.get("codename", "")


def parse_release(text: str) -> Release:
    stanzas = list(iter_stanzas(text))
    if not stanzas:
        raise RevError("VERIFY_FAILED", "the Release file is empty")
    fields = stanzas[0]
    sums: dict[str, tuple[int, str]] = {}
    for line in fields.get("sha256", "").splitlines():
        parts = line.split()
        if len(parts) == 3 and re.match(r"^[0-9a-fA-F]{64}$", parts[0]) and parts[1].isdigit():
            sums[parts[2]] = (int(parts[1]), parts[0].lower())
    return Release(fields, sums)


def pick_index(release: Release, component: str, arch: str) -> tuple[str, int, str]:
    """The best Packages file the Release pins: (path, size, sha256)."""
    base = f"{component}/binary-{arch}/Packages"
    for ext in (".xz", ".gz", ".bz2", ""):
        if base + ext in release.sha256:
            size, digest = release.sha256[base + ext]
            return base + ext, size, digest
    raise RevError("VERIFY_FAILED", f"the signed Release lists no SHA256 for {base}(.xz|.gz): "
                                    f"wrong component or architecture?")


def gpgv_path() -> str | None:
    return shutil.which("gpgv")


def dearmor(data: bytes) -> bytes:
    """An OpenPGP key as binary packets (ASCII armour removed, CRC line dropped)."""
    if b"-----BEGIN PGP" not in data:
        return data
    out = b""
    for block in re.findall(rb"-----BEGIN PGP [A-Z ]+-----(.*?)-----END PGP [A-Z ]+-----", data, re.S):
        lines = block.strip().splitlines()
        # armour headers end at the first empty line (if any)
        if any(not ln.strip() for ln in lines):
            lines = lines[[i for i, ln in enumerate(lines) if not ln.strip()][0] + 1:]
        body = b"".join(ln.strip() for ln in lines if ln.strip() and not ln.startswith(b"="))
        try:
            out += base64.b64decode(body, validate=False)
        except ValueError:
            raise RevError("VERIFY_FAILED", "a key file has broken ASCII armour") from None
    return out


def verify_inrelease(data: bytes, fingerprint: str, keyrings: list[Path], *, where: str = "InRelease"
                     ) -> tuple[bytes, str]:
    """Check a clear-signed InRelease with gpgv; return (the signed text, the signer's primary key
    fingerprint). The pinned fingerprint must have made a good, valid signature, and no signature
    may be bad. Keys may be binary or ASCII-armoured keyring files."""
    exe = gpgv_path()
    if exe is None:
        raise RevError("PERMISSION", "gpgv is not installed, so signed indexes cannot be checked; "
                                     "install it (apt-get install gpgv)")
    fingerprint = fingerprint.replace(" ", "").upper()
    with tempfile.TemporaryDirectory(prefix="rocmrevive-gpgv-") as tmp:
        proc, out = _run_gpgv(exe, Path(tmp), data, keyrings)
        status = _GpgvStatus.read(proc.stdout.decode("utf-8", "replace"), fingerprint)
        status.check(where, fingerprint, proc.stderr.decode("utf-8", "replace"))
        if not out.is_file():
            raise RevError("VERIFY_FAILED", f"{where}: gpgv gave no signed text")
        return out.read_bytes(), fingerprint


def verify_inrelease_any(data: bytes, keyrings: list[Path], *, where: str = "InRelease") -> tuple[bytes, str]:
    """Check a clear-signed InRelease against whole keyrings (a Debian archive's keyring, as apt's
    ``Signed-By`` names it): a good, valid signature by any key in them and no bad one. Returns
    (the signed text, the signer's fingerprint). For maintainers' tools; installs pin a key."""
    exe = gpgv_path()
    if exe is None:
        raise RevError("PERMISSION", "gpgv is not installed, so signed indexes cannot be checked; "
                                     "install it (apt-get install gpgv)")
    with tempfile.TemporaryDirectory(prefix="rocmrevive-gpgv-") as tmp:
        proc, out = _run_gpgv(exe, Path(tmp), data, keyrings)
        status = _GpgvStatus.read(proc.stdout.decode("utf-8", "replace"), "-")
        if status.problems:
            raise RevError("VERIFY_FAILED", f"{where}: {status.problems[0]}; the index was not used")
        good = [s for s in status.signers if re.match(r"^[0-9A-F]{40}$", s)]
        if proc.returncode != 0 or not good or not out.is_file():
            raise RevError("VERIFY_FAILED", f"{where}: no good signature by a key of "
                                            f"{', '.join(str(k) for k in keyrings) or 'no keyring'}; the index was "
                                            f"not used")
        return out.read_bytes(), good[0]


def _run_gpgv(exe: str, tmp: Path, data: bytes, keyrings: list[Path]) -> tuple[subprocess.CompletedProcess, Path]:
    """gpgv over ``data`` with the readable ``keyrings`` (dearmoured into ``tmp``); returns the
    finished process (its --status-fd lines on stdout) and where the signed text goes."""
    rings = []
    for i, kr in enumerate(keyrings):
        try:
            raw = Path(kr).read_bytes()
        except OSError:
            continue
        ring = tmp / f"ring{i}.gpg"
        ring.write_bytes(dearmor(raw))
        rings.append(ring)
    signed = tmp / "InRelease"
    signed.write_bytes(data)
    out = tmp / "Release"
    cmd = [exe, "--homedir", str(tmp), "--status-fd", "1", "--output", str(out)]
    for r in rings:
        cmd += ["--keyring", str(r)]
    cmd.append(str(signed))
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          env={**os.environ, "LC_ALL": "C"}, timeout=60)
    return proc, out


@dataclass
class _GpgvStatus:
    """What gpgv's status lines say (doc/DETAILS in GnuPG: VALIDSIG, BADSIG, EXPKEYSIG, ...)."""

    good: bool = False                                  # the pinned key made a valid signature
    signers: list[str] = field(default_factory=list)    # who signed (or the key that was missing)
    problems: list[str] = field(default_factory=list)   # bad, expired or revoked signatures
    unsigned: bool = False                              # no OpenPGP data at all

    @classmethod
    def read(cls, text: str, fingerprint: str) -> _GpgvStatus:
        st = cls()
        for line in text.splitlines():
            t = line.split()
            if len(t) < 2 or t[0] != "[GNUPG:]":
                continue
            if t[1] == "VALIDSIG" and len(t) >= 3:
                primary = t[-1].upper() if len(t) >= 12 else t[2].upper()
                st.signers.append(primary)
                if fingerprint in (primary, t[2].upper()):
                    st.good = True
            elif t[1] == "BADSIG":
                st.problems.append(f"a BAD signature by key {t[2] if len(t) > 2 else '?'}")
            elif t[1] in ("EXPKEYSIG", "REVKEYSIG", "EXPSIG"):
                what = {"EXPKEYSIG": "an expired key", "REVKEYSIG": "a revoked key",
                        "EXPSIG": "an expired signature"}[t[1]]
                st.problems.append(f"a signature by {what} ({t[2] if len(t) > 2 else '?'}); refresh the key")
            elif t[1] == "NO_PUBKEY" and len(t) > 2:
                if fingerprint.endswith(t[2].upper()):
                    st.signers.append(f"the pinned key {t[2]}, which is not in any keyring given (name a key_url "
                                      f"in the manifest, or pass --keyring)")
                else:
                    st.signers.append(f"unknown key {t[2]}")
            elif t[1] == "NODATA":
                st.unsigned = True
        return st

    def check(self, where: str, fingerprint: str, stderr: str) -> None:
        """Raise RevError("VERIFY_FAILED") saying why, unless the pinned key signed and nothing was bad."""
        if self.problems:
            raise RevError("VERIFY_FAILED", f"{where}: {self.problems[0]}; the index was not used")
        if self.good:
            return
        if self.unsigned and not self.signers:
            raise RevError("VERIFY_FAILED", f"{where} is not signed (no OpenPGP signature in it); the index was "
                                            f"not used")
        if self.signers:
            who = ", ".join(self.signers)
            if "the pinned key" in who:
                raise RevError("VERIFY_FAILED", f"{where} is signed by {who}; the index was not used")
            raise RevError("VERIFY_FAILED", f"{where} is signed by {who}, not by the pinned key {fingerprint}; "
                                            f"the index was not used")
        err = stderr.strip().splitlines()
        raise RevError("VERIFY_FAILED", f"{where}: no valid signature by the pinned key {fingerprint}"
                                        f"{' (' + err[-1] + ')' if err else ''}")


# --------------------------------------------------------------------------------------------
# the host's apt configuration


@dataclass(frozen=True)
class AptEntry:
    types: tuple[str, ...]
    uris: tuple[str, ...]
    suites: tuple[str, ...]
    components: tuple[str, ...]
    signed_by: str
    origin: str  # "etc/apt/sources.list:3"


DEBIAN_SUITES = {"sid", "unstable", "experimental", "testing", "stable", "oldstable", "oldoldstable", "rc-buggy",
                 "buster", "bullseye", "bookworm", "trixie", "forky", "duke"}


def read_apt_sources(root: Root) -> list[AptEntry]:
    """Enabled ``deb`` entries of sources.list, sources.list.d/*.list and *.sources under the root."""
    out: list[AptEntry] = []
    etc = root.path("/etc/apt")
    files: list[Path] = []
    if (etc / "sources.list").is_file():
        files.append(etc / "sources.list")
    d = etc / "sources.list.d"
    if d.is_dir():
        files += sorted(p for p in d.iterdir() if p.suffix in (".list", ".sources") and p.is_file())
    for f in files:
        try:
            text = f.read_text(errors="replace")
        except OSError:
            continue
        label = root.machine_path(f)
        if f.suffix == ".sources":
            for st in iter_stanzas(text):
                if st.get("enabled", "yes").lower() == "no":
                    continue
                types = tuple(st.get("types", "").split())
                if "deb" not in types:
                    continue
                out.append(AptEntry(types, tuple(st.get("uris", "").split()), tuple(st.get("suites", "").split()),
                                    tuple(st.get("components", "").split()), st.get("signed-by", ""), label))
        else:
            for no, line in enumerate(text.splitlines(), 1):
                line = line.split("#", 1)[0].strip()
                if not line.startswith("deb "):
                    continue
                opts = ""
                m = re.match(r"^deb\s+\[([^\]]*)\]\s+(.*)$", line)
                rest = m.group(2) if m else line[4:]
                if m:
                    opts = m.group(1)
                parts = rest.split()
                if len(parts) < 2:
                    continue
                sb = re.search(r"signed-by=(\S+)", opts)
                out.append(AptEntry(("deb",), (parts[0],), (parts[1],), tuple(parts[2:]),
                                    sb.group(1) if sb else "", f"{label}:{no}"))
    return out


def debian_mirrors(root: Root) -> list[str]:
    """Base URLs of the Debian archive mirrors the host's apt uses (security mirrors left out)."""
    mirrors: list[str] = []
    for e in read_apt_sources(root):
        suites = {s.split("/")[0] for s in e.suites}
        base_suites = {re.sub(r"-(updates|backports|proposed-updates|backports-sloppy)$", "", s) for s in suites}
        if any(s.endswith("-security") or "/updates" in s for s in e.suites):
            continue
        debianish = "debian-archive-keyring" in e.signed_by or bool(base_suites & DEBIAN_SUITES)
        if not debianish:
            continue
        for u in e.uris:
            if not re.match(r"^(https?|file)://", u):
                continue
            u = u.rstrip("/")
            if u not in mirrors:
                mirrors.append(u)
    return mirrors


def host_keyrings(root: Root) -> list[Path]:
    """Keyring files apt trusts on the machine (for signed indexes whose key is already installed)."""
    out: list[Path] = []
    for d in ("/etc/apt/keyrings", "/etc/apt/trusted.gpg.d", "/usr/share/keyrings"):
        p = root.path(d)
        if p.is_dir():
            out += sorted(x for x in p.iterdir() if x.suffix in (".gpg", ".asc") and x.is_file())
    tg = root.path("/etc/apt/trusted.gpg")
    if tg.is_file():
        out.append(tg)
    return out
