"""apt pieces: deb822 indexes, Release files, gpgv verification (real keys, real Debian InRelease),
and mirrors from a machine's apt configuration."""
from __future__ import annotations

import gzip
import lzma
import os
from pathlib import Path

import pytest

from rocmrevive.errors import RevError
from rocmrevive.rootfs import Root
from rocmrevive.sources.apt import (
    dearmor,
    debian_mirrors,
    decompress_index,
    find_package,
    host_keyrings,
    iter_stanzas,
    package_versions,
    parse_release,
    pick_index,
    read_apt_sources,
    verify_inrelease,
)
from tests.fixtures.aptrepo import clearsign, signing_keys

CACHE = Path(os.environ.get("ROCMREVIVE_TEST_CACHE", "/var/tmp/rocmrevive-test-cache"))

PACKAGES = """\
Package: rocm-core
Filename: pool/main/r/rocm-core/rocm-core_6.3.3.60303-74~22.04_amd64.deb
Version: 6.3.3.60303-74~22.04
Architecture: amd64
Size: 12345
SHA256: 1111111111111111111111111111111111111111111111111111111111111111
Description: core
 with a continuation line
 .
 and a paragraph

Package: rocblas
Version: 4.3.0.60303-74~22.04
Architecture: amd64
Depends: hip-runtime-amd (>= 6.3.3), rocm-core (= 6.3.3.60303-74~22.04)
Filename: pool/main/r/rocblas/rocblas_4.3.0.60303-74~22.04_amd64.deb
SHA256: 2222222222222222222222222222222222222222222222222222222222222222
Size: 999
MD5sum: 00000000000000000000000000000000

Package: rocblas
Version: 4.3.0.60302-66~22.04
Architecture: amd64
Filename: pool/main/r/rocblas/rocblas_4.3.0.60302-66~22.04_amd64.deb
Size: 998
SHA256: 3333333333333333333333333333333333333333333333333333333333333333
"""


def test_packages_index_field_order_does_not_matter():
    e = find_package(PACKAGES, "rocblas", "4.3.0.60303-74~22.04")
    assert e.filename == "pool/main/r/rocblas/rocblas_4.3.0.60303-74~22.04_amd64.deb"
    assert (e.size, e.sha256) == (999, "2" * 64)
    assert find_package(PACKAGES, "rocblas", "4.3.0.60303-74~22.04", "arm64") is None
    assert package_versions(PACKAGES, "rocblas") == ["4.3.0.60302-66~22.04", "4.3.0.60303-74~22.04"]
    core = next(iter_stanzas(PACKAGES))
    assert core["description"] == "core\nwith a continuation line\n.\nand a paragraph"


def test_conflicting_duplicate_entries_are_refused():
    twice = PACKAGES + "\n" + PACKAGES.split("\n\n")[1].replace("2" * 64, "4" * 64) + "\n"
    with pytest.raises(RevError) as ei:
        find_package(twice, "rocblas", "4.3.0.60303-74~22.04")
    assert ei.value.code == "VERIFY_FAILED" and "twice" in ei.value.message


def test_decompress_index_formats_and_bomb_limit():
    raw = PACKAGES.encode()
    for name, data in [("Packages", raw), ("Packages.xz", lzma.compress(raw)), ("Packages.gz", gzip.compress(raw))]:
        assert decompress_index(name, data) == PACKAGES
    with pytest.raises(RevError) as ei:
        decompress_index("Packages.xz", lzma.compress(b"\0" * 5_000_000), limit=1_000_000)
    assert "expands beyond" in ei.value.message
    with pytest.raises(RevError):
        decompress_index("Packages.xz", b"not xz")


def test_release_parsing_and_index_choice():
    rel = parse_release("Suite: jammy\nCodename: jammy\nSHA256:\n "
                        + "a" * 64 + " 100 main/binary-amd64/Packages\n "
                        + "b" * 64 + " 40 main/binary-amd64/Packages.gz\n")
    assert rel.suite == "jammy" and rel.sha256["main/binary-amd64/Packages"] == (100, "a" * 64)
    assert pick_index(rel, "main", "amd64") == ("main/binary-amd64/Packages.gz", 40, "b" * 64)
    with pytest.raises(RevError):
        pick_index(rel, "main", "arm64")


# --------------------------------------------------------------------------------------------
# gpgv


@pytest.fixture(scope="module")
def keys():
    return signing_keys()


def test_inrelease_good_and_bad(keys):
    text = b"Suite: sid\nCodename: sid\n"
    pinned, other = keys["pinned"], keys["other"]
    signed = clearsign(pinned, text)
    # armoured and binary keys both work; the signed text comes back without the armour
    for ring in (pinned.public_asc, pinned.public_gpg):
        assert verify_inrelease(signed, pinned.fingerprint, [ring]) == (text, pinned.fingerprint)
    # fingerprints may be written with spaces and in lower case
    spaced = " ".join(pinned.fingerprint[i:i + 4] for i in range(0, 40, 4)).lower()
    assert verify_inrelease(signed, spaced, [pinned.public_gpg])[1] == pinned.fingerprint

    cases = {
        "tampered": (signed.replace(b"Suite: sid", b"Suite: six"), [pinned.public_gpg], "BAD signature"),
        "other key": (clearsign(other, text), [other.public_gpg, pinned.public_gpg],
                      f"signed by {other.fingerprint}, not by the pinned key"),
        "key missing": (signed, [other.public_gpg], "which is not in any keyring given"),
        "unsigned": (text, [pinned.public_gpg], "is not signed"),
    }
    for what, (data, rings, msg) in cases.items():
        with pytest.raises(RevError) as ei:
            verify_inrelease(data, pinned.fingerprint, rings, where="X/InRelease")
        assert ei.value.code == "VERIFY_FAILED", what
        assert msg in ei.value.message and ei.value.message.startswith("X/InRelease"), (what, ei.value.message)


def test_two_signatures_one_key_known(keys):
    """Debian signs with two keys; a machine may know only one. The pinned one suffices."""
    text = b"Suite: sid\n"
    both = clearsign([keys["other"], keys["pinned"]], text)
    assert both.count(b"BEGIN PGP SIGNATURE") == 1
    assert verify_inrelease(both, keys["pinned"].fingerprint, [keys["pinned"].public_gpg])[0] == text
    with pytest.raises(RevError) as ei:
        verify_inrelease(both, keys["pinned"].fingerprint, [keys["other"].public_gpg])
    assert "not in any keyring" in ei.value.message


def test_text_after_the_signature_is_not_trusted(keys):
    signed = clearsign(keys["pinned"], b"Suite: sid\n")
    text, _ = verify_inrelease(signed + b"\nSuite: evil\nSHA256:\n " + b"0" * 64 + b" 1 main/x\n",
                               keys["pinned"].fingerprint, [keys["pinned"].public_gpg])
    assert text == b"Suite: sid\n"


def test_dearmor_equals_binary_export(keys):
    k = keys["pinned"]
    assert dearmor(k.public_asc.read_bytes()) == k.public_gpg.read_bytes()


@pytest.mark.debian
def test_real_debian_inrelease():
    """The sid InRelease fetched by tests/fixtures/fetch_debian.sh, checked with Debian's keyring."""
    found = sorted((CACHE / "apt/lists").glob("*_dists_sid_InRelease"))
    keyring = Path("/usr/share/keyrings/debian-archive-keyring.gpg")  # scripts/setup-system.sh
    assert found, f"no sid InRelease in {CACHE}/apt/lists (tests/fixtures/fetch_debian.sh fetches it)"
    assert keyring.is_file(), keyring
    inrel = found[-1]
    data = inrel.read_bytes()
    bookworm_key = "B8B80B5B623EAB6AD8775C45B7C5D7D6350947F8"  # Debian Archive Automatic Signing Key (12)
    text, signer = verify_inrelease(data, bookworm_key, [keyring])
    rel = parse_release(text.decode())
    assert rel.codename == "sid"
    path, size, digest = pick_index(rel, "main", "amd64")
    assert path.startswith("main/binary-amd64/Packages") and size > 1_000_000 and len(digest) == 64
    with pytest.raises(RevError) as ei:
        verify_inrelease(data, "CA8BB4727A47B4D09B4EE8969386B48A1A693C5C", [keyring])
    assert bookworm_key in ei.value.message and "not by the pinned key" in ei.value.message


# --------------------------------------------------------------------------------------------
# apt configuration


def test_mirrors_from_apt_configuration(tmp_path):
    apt = tmp_path / "etc/apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list").write_text(
        "# comment\n"
        "deb http://mirror.example/debian bookworm main contrib\n"
        "deb-src http://src.example/debian bookworm main\n"
        "deb http://security.example/debian-security bookworm-security main\n"
        "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] https://repo.radeon.com/rocm/apt/6.4.1 jammy main\n")
    (apt / "sources.list.d/debian.sources").write_text(
        "Types: deb deb-src\nURIs: https://second.example/debian/\nSuites: trixie trixie-updates\n"
        "Components: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n"
        "Enabled: no\nTypes: deb\nURIs: http://disabled.example/debian\nSuites: sid\nComponents: main\n\n"
        "Types: deb\nURIs: http://ubuntu.example/ubuntu\nSuites: noble\nComponents: main\n")
    root = Root(tmp_path)
    entries = read_apt_sources(root)
    assert [e.origin for e in entries][:2] == ["/etc/apt/sources.list:2", "/etc/apt/sources.list:4"]
    assert debian_mirrors(root) == ["http://mirror.example/debian", "https://second.example/debian"]


def test_no_apt_configuration(tmp_path):
    assert debian_mirrors(Root(tmp_path)) == []
    assert host_keyrings(Root(tmp_path)) == []
