"""Keep the manifests' Debian pins current (a maintainer's tool; network, never part of the tests).

    python3 scripts/pin.py entry librocblas4=6.4.4-4 --suite sid   a [[sources]] entry's pin lines
    python3 scripts/pin.py verify [--have DIR] [--write]         every Debian pin against its suite
    python3 scripts/pin.py check                                 will the next install find each pin?

Every suite is read through its signed InRelease (a key of the keyring the machine's apt entry
names in Signed-By, or --keyring) on the machine's Debian mirror (/etc/apt/sources.list(.d), or
--mirror). Debian's Packages indexes carry no SHA1, so the sha1 the snapshot archive needs is
computed from the real bytes: a copy in a --have folder whose size and sha256 are the index's,
else the file is downloaded (checked the same way) into --work and deleted. ``seen`` is the
InRelease's Date.

verify: one line per pin: "same" (version, filename, size, sha256 as the index lists them; sha1
and seen as the manifest has them), "complete" (the same, sha1 or seen to add: --write adds
them), "drifted" (the suite has another version now: `entry` gives the new lines), "differs".
Exit 0 when every pin is "same" (or was completed with --write), 1 otherwise.

check: per pin, whether the mirror still lists and serves it and whether Debian's snapshot
archive (or --snapshot URL) serves it by content and by date. Exit 0 when each pin has a place.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from rocmrevive.errors import RevError  # noqa: E402
from rocmrevive.rootfs import Root  # noqa: E402
from rocmrevive.sources import pin  # noqa: E402
from rocmrevive.sources.http import Downloader  # noqa: E402
from rocmrevive.sources.manifest_load import default_manifest_dir, load_manifests  # noqa: E402
from rocmrevive.sources.snapshot import snapshot_base  # noqa: E402


def _where(args) -> tuple[str, list[Path]]:
    if args.mirror:
        keyrings = [Path(k) for k in args.keyring] or pin.apt.host_keyrings(Root("/"))
        return args.mirror.rstrip("/"), keyrings
    mirror, keyrings = pin.machine_mirror(Root("/"))
    return mirror, [Path(k) for k in args.keyring] or keyrings


def cmd_entry(args, dl: Downloader) -> int:
    mirror, keyrings = _where(args)
    idx = pin.read_suite(mirror, args.suite, keyrings, dl)
    name, _, version = args.package.partition("=")
    entry = idx.find(name, version) if version else None
    if entry is None:
        print(f"{args.suite} has {name} {', '.join(idx.versions(name)) or '(none)'}"
              f"{'' if not version else f', not {version}'}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="pin-", dir=args.work) as work:
        sha1, where = pin.sha1_of(entry, mirror, [Path(h) for h in args.have], Path(work), dl)
    print(f"# {entry.package} {entry.version} as {mirror} {args.suite} lists it (signed by {idx.signer}); "
          f"sha1 of {where}")
    print(pin.Pin.of(entry, idx, sha1).toml())
    return 0


def cmd_verify(args, dl: Downloader) -> int:
    mirror, keyrings = _where(args)
    ms = load_manifests(args.manifests)
    with tempfile.TemporaryDirectory(prefix="pin-", dir=args.work) as work:
        reports = pin.verify_pins(ms, mirror, keyrings, dl, [Path(h) for h in args.have], Path(work))
    bad = 0
    for r in reports:
        wrote = False
        if r.status == "complete" and args.write and r.pin is not None and r.manifest.path is not None:
            wrote = pin.write_snapshot_keys(r.manifest.path, r.source.name, r.pin)
        status = "completed" if wrote else r.status
        print(f"{status:9} {r.source.key}: {r.source.package} {r.source.version} ({r.source.suite})"
              + (f"; sha1 from {r.sha1_from}" if r.sha1_from else ""))
        for line in r.lines:
            print(f"          {line}")
        bad += status not in ("same", "completed")
    print(f"{len(reports)} Debian pins read against {mirror}; {bad} to look at")
    return 1 if bad else 0


def cmd_check(args, dl: Downloader) -> int:
    mirror, keyrings = _where(args)
    ms = load_manifests(args.manifests)
    snap = snapshot_base(args.snapshot)
    rows = pin.check_pins(ms, mirror, snap, keyrings, dl)
    for r in rows:
        snaps = "; ".join(f"snapshot {how}: {v}" for how, v in r.snapshot.items()) or "snapshot: not asked"
        print(f"{'ok' if r.ok else 'LOST':4} {r.source.key}: {r.source.package} {r.source.version}: "
              f"mirror: {r.mirror}; {snaps}")
    lost = sum(not r.ok for r in rows)
    print(f"{len(rows)} Debian pins; {lost} with no place serving them")
    return 1 if lost else 0


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--mirror", help="a Debian mirror (default: the machine's apt configuration)")
    p.add_argument("--keyring", action="append", default=[], help="keyring for the InRelease (repeatable)")
    p.add_argument("--manifests", default=str(default_manifest_dir()), help="manifest folder")
    p.add_argument("--have", action="append", default=[], metavar="DIR",
                   help="a folder of .debs to read sha1 from instead of downloading (checked by sha256)")
    p.add_argument("--work", default=None, help="where a download for its sha1 is kept meanwhile")
    p.add_argument("--snapshot", default=None, help="the snapshot archive for check (default: Debian's)")
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("entry", help="the pin lines of PACKAGE=VERSION in a suite")
    e.add_argument("package", metavar="PACKAGE=VERSION")
    e.add_argument("--suite", required=True)
    v = sub.add_parser("verify", help="every Debian pin against its suite's signed index")
    v.add_argument("--write", action="store_true", help="add missing sha1 and seen lines to the manifests")
    sub.add_parser("check", help="does the mirror and the snapshot archive still serve each pin?")
    args = p.parse_args(argv)
    dl = Downloader(timeout=(15.0, 60.0), retries=2)
    try:
        return {"entry": cmd_entry, "verify": cmd_verify, "check": cmd_check}[args.cmd](args, dl)
    except RevError as exc:
        print(f"pin: error: {exc.message}", file=sys.stderr)
        return 5 if exc.code == "NETWORK" else 2


if __name__ == "__main__":
    sys.exit(main())
