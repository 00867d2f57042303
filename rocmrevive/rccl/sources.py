"""Where a prebuilt RCCL with the needed targets can come from, pinned by size and sha256.

The manifest loader (``manifests/``, ``rocmrevive.sources.manifest_load``) describes rocBLAS Tensile
components only, so the RCCL sources live here, in the same terms (a Debian package, its pool
file, the member to take) and are handed to the same fetcher as ``Source`` objects.

The processor lists are what the code-object core reads from each package's ``librccl.so.1.0``
(``.hip_fatbin``); an install checks them again on the extracted file, so a wrong list here can
make rocmrevive refuse, never install a library that lacks a target.

    pick_source(["gfx906", "gfx1030"]).name      # 'debian-librccl1-5.4.3'
"""
from __future__ import annotations

from dataclasses import dataclass

from packaging.version import Version

from rocmrevive.errors import RevError
from rocmrevive.sources.manifest import Source


@dataclass(frozen=True)
class RcclSource:
    name: str
    package: str
    version: str                     # the Debian package version
    rccl_version: str                # the upstream (ROCm) release it was built from
    suite: str
    filename: str                    # pool path on a Debian mirror
    size: int
    sha256: str
    member_prefix: str
    member: str                      # the library file inside the package
    processors: tuple[str, ...]
    needs: str                       # what it needs on the machine, in words
    note: str = ""

    @property
    def install_name(self) -> str:
        """The folder name under /opt/rocmrevive/rccl/."""
        return self.rccl_version

    def describe(self) -> str:
        return f"Debian {self.package} {self.version} (RCCL of ROCm {self.rccl_version})"

    def as_source(self):
        """The ``Source`` the fetcher (``rocmrevive.sources.fetch.fetch_source``) takes."""

        return Source(manifest_id="rccl", name=self.name, kind="debian", package=self.package,
                      version=self.version, member_prefix=self.member_prefix, rocblas_version=None,
                      compatible=None, suite=self.suite, filename=self.filename, size=self.size,
                      sha256=self.sha256, expected_files=1, note=self.note,
                      rocm_version=Version(self.rccl_version))

    def to_json(self) -> dict:
        return {"name": self.name, "package": self.package, "version": self.version,
                "rccl_version": self.rccl_version, "suite": self.suite, "filename": self.filename,
                "size": self.size, "sha256": self.sha256, "member": self.member_prefix + self.member,
                "processors": list(self.processors), "needs": self.needs, "note": self.note}


def _debian_librccl1(version: str, rccl_version: str, suite: str, size: int, sha256: str,
                     processors: tuple[str, ...], needs: str, note: str) -> RcclSource:
    """Debian's librccl1 at ``version``: its name, pool file (source package rccl, main, amd64)
    and library member follow from the version."""
    return RcclSource(name=f"debian-librccl1-{rccl_version}", package="librccl1", version=version,
                      rccl_version=rccl_version, suite=suite,
                      filename=f"pool/main/r/rccl/librccl1_{version}_amd64.deb", size=size, sha256=sha256,
                      member_prefix="./usr/lib/x86_64-linux-gnu/", member="librccl.so.1.0",
                      processors=processors, needs=needs, note=note)


SOURCES: tuple[RcclSource, ...] = (
    _debian_librccl1(
        "7.2.4-1~exp3", "7.2.4", "experimental", 369240088,
        "505da86bed73fa221b97681410dcdb25a6a4b05be9bf40023a976ba9936f060f",
        processors=("gfx908", "gfx90a", "gfx942", "gfx950", "gfx1030", "gfx1100", "gfx1101", "gfx1200",
                    "gfx1201"),
        needs="libamdhip64.so.7 and librocm_smi64.so.7 (ROCm 7 runtime), glibc >= 2.42, GLIBCXX_3.4.32, GCC_13",
        note="no gfx906: like AMD's RCCL 7.x"),
    _debian_librccl1(
        "5.4.3-3+b1", "5.4.3", "sid", 125393528,
        "735e8e0a69f88489bdbd0a8b69bc75a376da92f1129b9ed80a38c99726bfe3a7",
        processors=("gfx803", "gfx900", "gfx906", "gfx908", "gfx90a", "gfx1010", "gfx1030", "gfx1100",
                    "gfx1101", "gfx1102"),
        needs="libamdhip64.so.5 (Debian's HIP 5.7 runtime, package libamdhip64-5) and librocm_smi64.so.1, "
              "glibc >= 2.38: a Debian trixie/sid system with Debian's own ROCm stack",
        note="also in trixie; built against HIP 5, so it cannot share a process with a HIP 6/7 runtime"),
)


def source_named(name: str) -> RcclSource:
    for s in SOURCES:
        if s.name == name:
            return s
    raise RevError("USAGE", f"--source {name}: not an RCCL source rocmrevive knows "
                            f"({', '.join(s.name for s in SOURCES)})")


def pick_source(processors, name: str | None = None) -> RcclSource:
    """The first known source whose library carries every processor in ``processors``."""
    want = set(processors)
    if name:
        s = source_named(name)
        lack = sorted(want - set(s.processors))
        if lack:
            raise RevError("NOTHING_SUPPORTED", f"{s.describe()} has no code for {', '.join(lack)}; "
                                                f"`rocmrevive rccl recipe` writes the build for "
                                                f"{';'.join(sorted(want))}")
        return s
    for s in SOURCES:
        if want <= set(s.processors):
            return s
    have = "; ".join(f"{s.describe()}: {', '.join(s.processors)}" for s in SOURCES)
    raise RevError("NOTHING_SUPPORTED", f"no prebuilt RCCL rocmrevive knows carries all of "
                                        f"{', '.join(sorted(want))} ({have}); run `rocmrevive rccl recipe` "
                                        f"for the build script")
