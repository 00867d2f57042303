"""Doctor findings about ROCm installs and rocBLAS copies: which copy lacks the Tensile files a
detected GPU needs, broken ``/opt/rocm`` links, layouts rocmrevive cannot patch yet.

    tree_findings(survey)  # [Finding(id='rocblas-missing-gfx906', severity=Severity.ERROR, ...)]
"""
from __future__ import annotations

from rocmrevive.hardware.findings import Finding, FixKind, Severity
from rocmrevive.invocation import shell_command
from rocmrevive.trees.gfx906_choices import summary
from rocmrevive.trees.therock import library_findings


def tree_findings(s) -> list[Finding]:
    """The findings of a survey ``s``: the machine's ROCm link and copies, then each copy's."""
    out = _machine_findings(s)
    gpus = {g.index: g for g in s.hardware.gpus}
    for c in s.copies:
        out += _copy_findings(s, c, [gpus[i] for i in c.missing_for_gpus if i in gpus])

    return out + library_findings(s)


def _machine_findings(s) -> list[Finding]:
    out: list[Finding] = []
    if s.rocm_link and not s.rocm_link.exists:
        out.append(Finding("rocm-link-broken", Severity.ERROR, s.rocm_link.path,
                           f"{s.rocm_link.path} -> {s.rocm_link.target} leads nowhere",
                           "the ROCm release it pointed at was removed",
                           f"sudo ln -sfn <rocm-X.Y.Z> {s.rocm_link.path}  (one of: "
                           + (", ".join(i.path for i in s.installs) or "no install left") + ")"))
    for w in getattr(s, "device_wheels", []):
        if w.placeholder:
            prefix = w.site.rsplit("/lib/", 1)[0] if "/lib/" in w.site else None
            pip = f"{prefix}/bin/pip" if prefix else "pip"
            out.append(Finding(
                "device-wheel-no-code", Severity.ERROR if s.hardware.gfx906 else Severity.WARNING, w.site, w.line(),
                "the package index serves 0.0.1.dev0 placeholders under TheRock's device package names; pip "
                "installs them without error and they hold no code object",
                f"{pip} uninstall {w.name}; the device code comes from elsewhere (`rocmrevive recipe` on a TheRock "
                f"tree lists the choices for gfx906)", data=w.to_json()))
    if s.hardware.gfx906 and not s.copies:
        out.append(Finding("no-rocblas", Severity.INFO, "machine", "no rocBLAS copy found",
                           "no ROCm under /opt, no distribution package, no PyTorch ROCm wheel in the "
                           "places searched", "pass --python for a venv elsewhere, or --tree PATH", FixKind.NONE))
    return out


def _copy_findings(s, c, missing: list) -> list[Finding]:
    """One rocBLAS copy ``c`` against the GPUs it does not serve (``missing``)."""
    out: list[Finding] = []
    m906 = [g for g in missing if g.processor == "gfx906"]
    what = f"rocBLAS {c.rocblas_version or '?'} in {c.path}"
    if m906:
        out.append(_gfx906_missing(c, what, m906))
    others = [g for g in missing if g.processor != "gfx906"]
    if others and s.hardware.gfx906:
        out.append(Finding(
            "rocblas-missing-other", Severity.INFO, c.path,
            f"{what} does not serve {', '.join(f'{g.label} ({g.processor})' for g in others)}",
            "rocmrevive adds gfx906 files only", "none", FixKind.NONE))
    if c.kpack or c.arch_folders:
        out.append(_therock_layout(c, what, m906))
    if c.problems:
        out.append(Finding("rocblas-read-problems", Severity.INFO, c.path, f"{c.path}: " + "; ".join(c.problems[:3]),
                           "files missing or unreadable", "none", FixKind.NONE))
    if c.deep and c.deep.not_code:
        out.append(Finding("rocblas-not-code", Severity.WARNING, c.path,
                           f"{len(c.deep.not_code)} file(s) named .co/.hsaco in {c.path} are not code objects",
                           "placeholders or damaged files: " + ", ".join(c.deep.not_code[:5]),
                           shell_command(["install", "--tree", c.path])))
    return out


def _gfx906_missing(c, what: str, m906: list) -> Finding:
    """Why a copy does not serve the gfx906 GPUs ``m906``: wrong target, no index, or no files."""
    labels = ", ".join(g.label for g in m906)
    if "gfx906" in c.targets:
        targets = sorted({str(g.target) for g in m906})
        return Finding(
            "rocblas-gfx906-wrong-target", Severity.ERROR, c.path,
            f"{what} has gfx906 files, but none load on {labels} ({', '.join(targets)})",
            "the code objects were built for other target features", shell_command(["install", "--tree", c.path]),
            data={"code_object_targets": c.deep.targets if c.deep else None})
    if "gfx906" in c.file_targets:
        return Finding(
            "rocblas-gfx906-no-index", Severity.ERROR, c.path,
            f"{what} has gfx906 code objects but no TensileLibrary_lazy_gfx906.dat",
            "rocBLAS finds Tensile kernels only through the per-arch lazy index; a copy by "
            "file pattern missed it", shell_command(["install", "--tree", c.path]))
    return Finding(
        "rocblas-missing-gfx906", Severity.ERROR, c.path,
        f"{what} has no gfx906 Tensile files ({labels} cannot run GEMMs through it)",
        "AMD dropped gfx906 from rocBLAS in ROCm 6.4 (ROCm#4625): rocBLAS stops with "
        "'Cannot read …TensileLibrary.dat … for GPU arch : gfx906'",
        shell_command(["install", "--tree", c.path]),
        data={"targets": c.targets, "owner": c.owner, "layout": c.layout})


def _therock_layout(c, what: str, m906: list) -> Finding:
    """A copy in TheRock's per-arch/.kpack layout: an error when gfx906 GPUs need it, else a note."""
    layout = ", ".join(x for x, on in (("per-arch folders", c.arch_folders),
                                       (f".kpack archives for {', '.join(c.kpack_arches) or '?'}", c.kpack))
                       if on)
    kpacks = {"kpack_archives": c.kpack_archives, "kpack_arches": c.kpack_arches}
    if m906:
        return Finding(
            "rocblas-therock-gfx906", Severity.ERROR, c.path,
            f"{what} uses TheRock's layout ({layout}) and has no gfx906 device code",
            "ROCm 7.13+ (TheRock) ships device code per GPU target as packages of its own, and none for gfx906 "
            "in a stable release; rocmrevive does not copy device code into such trees",
            summary(c.rocm_version, c.path), data=kpacks)
    return Finding(
        "rocblas-new-layout", Severity.INFO, c.path, f"{what} uses TheRock's layout ({layout})",
        "ROCm 7.13+ builds move device code into per-target packages; rocmrevive reads them, "
        "and leaves them to their own packages", "none", FixKind.NONE, data=kpacks)
