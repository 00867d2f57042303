"""Write a machine folder (for ``rocmrevive --root``) from a small description.

The description is a dict (see ``catalog.py`` for the machines built from the captures). What is
written mirrors the real kernel interfaces, links included:

* ``sys/devices/pci<dom>:<bus>/<root port>/…/<bdf>/`` with ``vendor device subsystem_* revision
  class resource current_link_* max_link_* numa_node`` and the links ``driver``, ``iommu_group``;
  amdgpu's ``mem_info_vram_total``, ``mem_info_vis_vram_total``, ``pp_dpm_*``; ``drm/cardN``,
  ``drm/renderDM``;
* ``sys/bus/pci/devices/<bdf>`` → relative link into ``sys/devices`` (the topology is read
  from the resolved path, as on a real machine); ``sys/class/drm/*`` likewise;
* ``sys/devices/virtual/kfd/kfd/topology/nodes/<n>/`` (``properties``, ``gpu_id``, ``name``,
  ``mem_banks``, ``p2p_links``) with ``sys/class/kfd/kfd`` → ``../../devices/virtual/kfd/kfd``;
* ``sys/kernel/iommu_groups``, ``sys/class/iommu``, ``sys/module/amdgpu/parameters``;
* ``proc/cmdline``, ``proc/cpuinfo``, ``proc/sys/kernel/osrelease``, ``boot/config-<release>``;
* ``dev/kfd``, ``dev/dri/*`` (plain files: a folder cannot hold device nodes), ``etc/passwd``,
  ``etc/group``, ``var/lib/dpkg/status``;
* ROCm trees under ``opt/``, Debian's layout, Python venvs with a PyTorch wheel, Ollama.

Usable as a module (``build_machine(spec, dest)``, ``build(name, dest)``) and as a script:

    python tests/machines/build.py --list
    python tests/machines/build.py dual-mi50 demo/machines/dual-mi50
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make "machines" importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from machines.catalog import MACHINES  # noqa: E402
else:
    from .catalog import MACHINES  # noqa: E402

PLACEHOLDER = "placeholder written by tests/machines/build.py: not a real {what}\n"

# Key order of a KFD GPU node's properties, as in captures/negative_gfx908_mi100_kfd_properties_fixture.txt
KFD_KEYS = ("cpu_cores_count simd_count mem_banks_count caches_count io_links_count p2p_links_count "
            "cpu_core_id_base simd_id_base max_waves_per_simd lds_size_in_kb gds_size_in_kb num_gws "
            "wave_front_size array_count simd_arrays_per_engine cu_per_simd_array simd_per_cu "
            "max_slots_scratch_cu gfx_target_version vendor_id device_id location_id domain "
            "drm_render_minor hive_id num_sdma_engines num_sdma_xgmi_engines num_sdma_queues_per_engine "
            "num_cp_queues max_engine_clk_fcompute local_mem_size fw_version capability debug_prop "
            "sdma_fw_version unique_id num_xcc max_engine_clk_ccompute").split()

FLAGS = {  # resource flags, as the kernel prints them (ECOSYSTEM §4.2 shows 0x14220c on a real BAR)
    "mem64pref": 0x14220C,
    "mem32": 0x40200,
    "rom": 0x46200,
}


# ---- small writers ------------------------------------------------------------------------

def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _link(path: Path, target: str) -> None:
    """A symbolic link; a relative target unless ``target`` is absolute on purpose."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        path.unlink()
    os.symlink(target, path)


def link_or_copy(src: str | os.PathLike, dst: str | os.PathLike) -> Path:
    """Put a cached real file into a machine: a hard link (a copy across file systems), so the
    cache is never written (rocmrevive replaces files by rename). Returns ``dst``. Also a
    ``shutil.copytree(..., copy_function=link_or_copy)``."""
    dst = Path(dst)
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)
    except OSError:
        shutil.copy2(src, dst)
    return dst


def _rel(src_dir: Path, dest: Path) -> str:
    return os.path.relpath(dest, src_dir)


def _hex(v: int, width: int = 4) -> str:
    return f"0x{v:0{width}x}\n"


def _speed(gts: float | None) -> str:
    return "Unknown\n" if gts is None else f"{gts:.1f} GT/s PCIe\n"


def _resource(bars: list) -> str:
    lines = ["0x0000000000000000 0x0000000000000000 0x0000000000000000"] * 13
    for index, start, size, kind in bars:
        lines[index] = f"0x{start:016x} 0x{start + size - 1:016x} 0x{FLAGS[kind]:016x}"
    return "\n".join(lines) + "\n"


# ---- PCI ----------------------------------------------------------------------------------

def _pci_function(root: Path, spec: dict, dev: dict, chain_path: str, iommu: dict | None) -> Path:
    """Write one function (bridge or endpoint) at sys/devices/<chain_path>."""
    d = root / "sys/devices" / chain_path
    bdf = dev["bdf"]
    if (d / "vendor").exists():
        return d  # a shared bridge, written by an earlier GPU
    vendor, device = dev["id"]
    _write(d / "vendor", _hex(vendor))
    _write(d / "device", _hex(device))
    sv, sd = dev.get("subsystem", (vendor, 0))
    _write(d / "subsystem_vendor", _hex(sv))
    _write(d / "subsystem_device", _hex(sd))
    _write(d / "revision", _hex(dev.get("revision", 0), 2))
    _write(d / "class", _hex(dev["class"], 6))
    _write(d / "resource", _resource(dev.get("bars", [])))
    link = dev.get("link")
    if link:
        _write(d / "current_link_speed", _speed(link.get("speed")))
        _write(d / "current_link_width", f"{link.get('width', 0)}\n")
        _write(d / "max_link_speed", _speed(link.get("max_speed")))
        _write(d / "max_link_width", f"{link.get('max_width', 0)}\n")
    _write(d / "numa_node", f"{dev.get('numa_node', spec.get('numa_node', -1))}\n")
    driver = dev.get("driver")
    if driver:
        drv = root / "sys/bus/pci/drivers" / driver
        drv.mkdir(parents=True, exist_ok=True)
        _link(d / "driver", _rel(d, drv))
        _link(drv / bdf, _rel(drv, d))
    group = dev.get("iommu_group")
    if iommu and group is not None:
        g = root / "sys/kernel/iommu_groups" / str(group)
        _write(g / "type", f"{iommu.get('type', 'DMA')}\n")
        _link(g / "devices" / bdf, _rel(g / "devices", d))
        _link(d / "iommu_group", _rel(d, g))
    _link(root / "sys/bus/pci/devices" / bdf, _rel(root / "sys/bus/pci/devices", d))
    return d


BRIDGE_CLASS = 0x060400


def _gpu_pci(root: Path, spec: dict, gpu: dict) -> Path:
    iommu = spec.get("iommu")
    path = gpu["host_bridge"]
    (root / "sys/devices" / path).mkdir(parents=True, exist_ok=True)
    for br in gpu.get("chain", []):
        path = f"{path}/{br['bdf']}"
        _pci_function(root, spec, {"class": BRIDGE_CLASS, "driver": "pcieport", **br,
                                   "numa_node": gpu.get("numa_node", spec.get("numa_node", -1))},
                      path, iommu)
    path = f"{path}/{gpu['bdf']}"
    pci = gpu["pci"]
    dev = {"bdf": gpu["bdf"], "id": (0x1002, pci["device"]), "subsystem": pci.get("subsystem"),
           "revision": pci.get("revision", 0), "class": pci["class"], "bars": gpu.get("bars", []),
           "link": gpu.get("link"), "numa_node": gpu.get("numa_node", spec.get("numa_node", -1)),
           "driver": gpu.get("driver", "amdgpu"), "iommu_group": gpu.get("iommu_group")}
    if dev["subsystem"] is None:
        dev.pop("subsystem")
    d = _pci_function(root, spec, dev, path, iommu)
    if dev["driver"] == "amdgpu":
        vram = gpu["vram"]
        bar0 = max((b[2] for b in gpu.get("bars", []) if b[3] == "mem64pref"), default=vram)
        _write(d / "mem_info_vram_total", f"{vram}\n")
        _write(d / "mem_info_vis_vram_total", f"{gpu.get('vis_vram', min(vram, bar0))}\n")
        for name in ("pp_dpm_mclk", "pp_dpm_sclk"):
            if name in gpu:
                _write(d / name, gpu[name])
        if "perf_level" in gpu:
            _write(d / "power_dpm_force_performance_level", gpu["perf_level"] + "\n")
        if gpu.get("unique_id"):
            _write(d / "unique_id", f"{gpu['unique_id']:016x}\n")
        for kind, num in (("card", gpu.get("card")), ("renderD", gpu.get("render_minor"))):
            if num is None:
                continue
            name = f"{kind}{num}"
            minor = num
            _write(d / "drm" / name / "dev", f"226:{minor}\n")
            _link(root / "sys/class/drm" / name, _rel(root / "sys/class/drm", d / "drm" / name))
            _write(root / "dev/dri" / name, "")
    return d


# An idle MI50's sensors as rocm-smi printed them (captures/mixed_gfx906_gfx1010_lspci_rocmsmi_nixos_notes.txt:
# edge 39.0 C, junction 40.0 C, memory 38.0 C, 19.0 W, SCLK 938 MHz, MCLK 350 MHz), in amdgpu's
# hwmon units (millidegrees, Hz, microwatts; kernel.org amdgpu docs, "hwmon interfaces").
IDLE_MI50_HWMON = {"temp1_label": "edge", "temp1_input": 39000, "temp2_label": "junction", "temp2_input": 40000,
                   "temp3_label": "mem", "temp3_input": 38000, "freq1_label": "sclk", "freq1_input": 938_000_000,
                   "freq2_label": "mclk", "freq2_input": 350_000_000, "power1_average": 19_000_000}
AER_NAMES = {"correctable": ("RxErr", "BadTLP", "BadDLLP", "Rollover", "Timeout", "NonFatalErr", "CorrIntErr",
                             "HeaderOF", "TOTAL_ERR_COR"),
             "nonfatal": ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
                          "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "TOTAL_ERR_NONFATAL"),
             "fatal": ("Undefined", "DLP", "SDES", "TLP", "FCP", "CmpltTO", "CmpltAbrt", "UnxCmplt", "RxOF",
                       "MalfTLP", "ECRC", "UnsupReq", "ACSViol", "TOTAL_ERR_FATAL")}


def gpu_metrics_v1_0(throttle_status: int = 0) -> bytes:
    """An 80-byte gpu_metrics table, format 1 content 0 (Vega 20), with ``throttle_status`` at
    byte 68 (struct gpu_metrics_v1_0, kgd_pp_interface.h); the other fields zero."""
    data = bytearray(80)
    data[0:4] = (80).to_bytes(2, "little") + bytes([1, 0])
    data[68:72] = throttle_status.to_bytes(4, "little")
    return bytes(data)


def write_health(dev_dir: Path, *, ras: dict | None = None, aer: dict | None = None,
                 hwmon: dict | None = None, gpu_metrics: bytes | None = None) -> None:
    """amdgpu's health files in a device folder: ``ras/<block>_err_count`` ("ue: N\nce: N"),
    ``aer_dev_{correctable,nonfatal,fatal}`` (one "NAME count" line each, the kernel's names),
    ``hwmon/hwmon0/*`` and the binary ``gpu_metrics``."""
    for block, (ue, ce) in (ras or {}).items():
        _write(dev_dir / "ras" / f"{block}_err_count", f"ue: {ue}\nce: {ce}\n")
    for kind, counts in (aer or {}).items():
        names = AER_NAMES[kind]
        total = sum(counts.values())
        _write(dev_dir / f"aer_dev_{kind}", "".join(
            f"{n} {total if n.startswith('TOTAL') else counts.get(n, 0)}\n" for n in names))
    for name, value in (hwmon or {}).items():
        _write(dev_dir / "hwmon/hwmon0" / name, f"{value}\n")
    if gpu_metrics is not None:
        (dev_dir / "gpu_metrics").write_bytes(gpu_metrics)


def _other_pci(root: Path, spec: dict, dev: dict) -> None:
    path = dev["host_bridge"]
    for br in dev.get("chain", []):
        path = f"{path}/{br['bdf']}"
        _pci_function(root, spec, {"class": BRIDGE_CLASS, "driver": "pcieport", **br}, path, spec.get("iommu"))
    _pci_function(root, spec, dev, f"{path}/{dev['bdf']}", spec.get("iommu"))


# ---- KFD ----------------------------------------------------------------------------------

def _kfd(root: Path, spec: dict) -> None:
    base = root / "sys/devices/virtual/kfd/kfd/topology/nodes"
    base.mkdir(parents=True, exist_ok=True)
    _link(root / "sys/class/kfd/kfd", "../../devices/virtual/kfd/kfd")
    _write(root / "dev/kfd", "")
    cpu_props = spec.get("kfd_cpu_node")
    for n in range(spec.get("kfd_cpu_nodes", 1)):
        props = {"cpu_cores_count": 8, "simd_count": 0, "mem_banks_count": 1, "io_links_count": 0,
                 "gfx_target_version": 0, "vendor_id": 0, "device_id": 0, "location_id": 0,
                 "domain": 0, "drm_render_minor": 0, "unique_id": 0, **(cpu_props or {})}
        _write(base / str(n) / "properties", "".join(f"{k} {v}\n" for k, v in props.items()))
        _write(base / str(n) / "gpu_id", "0\n")
        _write(base / str(n) / "name", "\n")
    for gpu in spec.get("gpus", []):
        if gpu.get("node") is None:
            continue
        nd = base / str(gpu["node"])
        if "kfd_text" in gpu:  # verbatim from a capture
            _write(nd / "properties", gpu["kfd_text"])
        else:
            bus, devfn = int(gpu["bdf"][5:7], 16), int(gpu["bdf"][8:10], 16) << 3 | int(gpu["bdf"][11])
            props = dict(gpu.get("kfd", {}))
            props.update({"gfx_target_version": gpu["gfx_target_version"], "vendor_id": 4098,
                          "device_id": gpu["pci"]["device"], "location_id": bus << 8 | devfn,
                          "domain": int(gpu["bdf"][:4], 16),
                          "drm_render_minor": gpu.get("render_minor", -1),
                          "unique_id": gpu.get("unique_id", 0)})
            if "p2p_peers" in gpu:  # what the kernel decided, when the capture shows it
                props["p2p_links_count"] = len(gpu["p2p_peers"])
            keys = [k for k in KFD_KEYS if k in props] + [k for k in props if k not in KFD_KEYS]
            _write(nd / "properties", "".join(f"{k} {props[k]}\n" for k in keys))
        if gpu.get("gpu_id") is not None:
            _write(nd / "gpu_id", f"{gpu['gpu_id']}\n")
        _write(nd / "name", gpu.get("kfd_name", "") + "\n")
        _write(nd / "mem_banks/0/properties",
               f"heap_type 1\nsize_in_bytes {gpu['vram']}\nflags 0\nwidth {gpu.get('mem_width', 4096)}\n"
               f"mem_clk_max {gpu.get('mem_clk_max', 0)}\n")
        for i, peer in enumerate(gpu.get("p2p_peers", [])):
            _write(nd / f"p2p_links/{i}/properties",
                   f"type 2\nversion_major 0\nversion_minor 0\nnode_from {gpu['node']}\nnode_to {peer}\n"
                   "weight 40\nmin_latency 0\nmax_latency 0\nmin_bandwidth 0\nmax_bandwidth 0\n"
                   "recommended_transfer_size 0\nflags 1\n")


# ---- host ---------------------------------------------------------------------------------

def _host(root: Path, spec: dict) -> None:
    cpu = spec.get("cpu")
    if cpu:
        _write(root / "proc/cpuinfo",
               f"processor\t: 0\nvendor_id\t: {cpu['vendor_id']}\ncpu family\t: {cpu['family']}\n"
               f"model name\t: {cpu['model_name']}\nflags\t\t: {cpu.get('flags', 'fpu vme de pse')}\n\n")
    k = spec.get("kernel", {})
    if k.get("release"):
        _write(root / "proc/sys/kernel/osrelease", k["release"] + "\n")
    if k.get("cmdline") is not None:
        _write(root / "proc/cmdline", k["cmdline"] + "\n")
    if k.get("config") is not None and k.get("release"):
        lines = [f"# Linux kernel configuration (only the options rocmrevive reads) for {k['release']}"]
        for opt, val in k["config"].items():
            lines.append(f"# {opt} is not set" if val == "n" else f"{opt}={val}")
        _write(root / f"boot/config-{k['release']}", "\n".join(lines) + "\n")
    for name, val in spec.get("amdgpu_params", {}).items():
        _write(root / "sys/module/amdgpu/parameters" / name, f"{val}\n")
    iommu = spec.get("iommu")
    if iommu:
        for unit in iommu.get("units", []):
            _write(root / "sys/devices/virtual/iommu" / unit / "uevent", "")
            _link(root / "sys/class/iommu" / unit, f"../../devices/virtual/iommu/{unit}")
    users = spec.get("users", {})
    passwd = ["root:x:0:0:root:/root:/bin/bash"]
    groups = {"root": (0, []), "video": (44, []), "render": (110, [])}
    for i, (user, member_of) in enumerate(users.items()):
        uid = 1000 + i
        passwd.append(f"{user}:x:{uid}:{uid}:{user}:/home/{user}:/bin/bash")
        groups[user] = (uid, [])
        for g in member_of:
            groups.setdefault(g, (2000 + len(groups), []))[1].append(user)
    _write(root / "etc/passwd", "\n".join(passwd) + "\n")
    _write(root / "etc/group", "".join(f"{g}:x:{gid}:{','.join(m)}\n" for g, (gid, m) in groups.items()))


# ---- software -----------------------------------------------------------------------------

def _library(d: Path, targets: list[str], what: str) -> None:
    """A Tensile library folder: per target the lazy index and two code-object names, plus one
    arch-neutral fallback index. Placeholders: the names are what detection reads."""
    d.mkdir(parents=True, exist_ok=True)
    text = PLACEHOLDER.format(what=what)
    _write(d / "TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_fallback.dat", text)
    for t in targets:
        _write(d / f"TensileLibrary_lazy_{t}.dat", text)
        _write(d / f"TensileLibrary_Type_SS_Contraction_l_Ailk_Bjlk_Cijk_Dijk_{t}.co", text)
        _write(d / f"Kernels.so-000-{t}.hsaco", text)


def _software(root: Path, spec: dict) -> None:
    dpkg = []
    for r in spec.get("rocm", []):
        ver = r["version"]
        short = ver.split("-")[0].split("~")[0]
        inst = root / f"opt/rocm-{short}"
        _write(inst / ".info/version", ver + "\n")
        rb = r.get("rocblas")
        if rb:
            lib = inst / "lib"
            _write(lib / rb["soname"], PLACEHOLDER.format(what="librocblas"))
            major = rb["soname"].split(".so.")[1].split(".")[0]
            if rb["soname"] != f"librocblas.so.{major}":
                _link(lib / f"librocblas.so.{major}", rb["soname"])
            if rb.get("header", True):
                a, b, c = rb["version"].split(".")
                _write(inst / "include/rocblas/internal/rocblas-version.h",
                       f"#define ROCBLAS_VERSION_MAJOR {a}\n#define ROCBLAS_VERSION_MINOR {b}\n"
                       f"#define ROCBLAS_VERSION_PATCH {c}\n")
            _library(lib / "rocblas/library", rb["targets"], "Tensile file")
    if spec.get("rocm_link"):
        _link(root / "opt/rocm", spec["rocm_link"])
    deb = spec.get("debian_rocblas")
    if deb:
        libdir = root / "usr/lib/x86_64-linux-gnu"
        _write(libdir / deb["soname"], PLACEHOLDER.format(what="librocblas"))
        _library(libdir / "rocblas" / deb["dir"] / "library", deb["targets"], "Tensile file")
        dpkg.append(f"Package: {deb['package']}\nStatus: install ok installed\nVersion: {deb['package_version']}\n")
    for v in spec.get("venvs", []):
        prefix = root / v["path"].lstrip("/")
        _write(prefix / "pyvenv.cfg", f"home = /usr/bin\ninclude-system-site-packages = false\n"
                                      f"version = {v['python_full']}\n")
        _link(prefix / "bin" / f"python{v['python']}", f"/usr/bin/python{v['python']}")
        _link(prefix / "bin/python", f"python{v['python']}")
        site = prefix / f"lib/python{v['python']}/site-packages"
        site.mkdir(parents=True, exist_ok=True)
        t = v.get("torch")
        if t:
            _write(site / "torch/__init__.py", "")
            _write(site / "torch/version.py", f"__version__ = '{t['version']}'\n"
                                              f"hip: Optional[str] = '{t['hip']}'\ncuda: Optional[str] = None\n")
            _write(site / "torch/lib" / t["rocblas_file"], PLACEHOLDER.format(what="librocblas"))
            _library(site / "torch/lib/rocblas/library", t["targets"], "Tensile file")
    ol = spec.get("ollama")
    if ol:
        base = root / ol["path"].lstrip("/")
        _write(base / ol["rocblas_file"], PLACEHOLDER.format(what="librocblas"))
        _library(base / "rocblas/library", ol["targets"], "Tensile file")
    if dpkg:
        _write(root / "var/lib/dpkg/status", "\n".join(dpkg))


# ---- the machine ----------------------------------------------------------------------------

def build_machine(spec: dict, dest: str | os.PathLike, *, clean: bool = True) -> Path:
    """Write the machine described by ``spec`` into ``dest`` (emptied first) and return it."""
    root = Path(dest)
    if clean and root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True, exist_ok=True)
    _write(root / "MACHINE.txt", f"{spec['name']}: {spec['description'].strip()}\n\nSources:\n"
           + "".join(f"  - {s}\n" for s in spec.get("sources", [])))
    _host(root, spec)
    (root / "sys/bus/pci/devices").mkdir(parents=True, exist_ok=True)
    for dev in spec.get("other_pci", []):
        _other_pci(root, spec, dev)
    for gpu in spec.get("gpus", []):
        _gpu_pci(root, spec, gpu)
    if spec.get("kfd", bool(spec.get("gpus"))):
        _kfd(root, spec)
    _software(root, spec)
    return root


def build(name: str, dest: str | os.PathLike, *, no_kfd: bool = False, **overrides) -> Path:
    """Build a machine from the catalog; ``overrides`` go to its description function.
    ``no_kfd=True`` leaves the KFD out (amdgpu not loaded, or the cards failed to initialise)."""
    spec = MACHINES[name](**overrides)
    if no_kfd:
        spec["kfd"] = False
    return build_machine(spec, dest)


def build_amd_layout_from_debian(dest: str | os.PathLike, librocblas4: Path) -> Path:
    """The dual-MI50 machine with AMD's layout (``opt/rocm-6.4.3/lib/rocblas/library``) filled from
    Debian's real rocBLAS 4.4.1 minus its gfx906 files (AMD's 6.4.x ships the same names without
    gfx906), and Debian's ``librocblas.so.4.4`` with its ``.so.4`` link. ``librocblas4`` is the
    unpacked librocblas4 6.4.4-4 package (the ``debian_pkgs`` fixture's folder). Files are hard
    links: the fixture cache is never written (a transaction replaces files by rename).

        root = build_amd_layout_from_debian(tmp_path / "m", debian_pkgs["librocblas4_6.4.4-4_amd64"])
    """
    root = build("dual-mi50", dest)
    rocm = root / "opt/rocm-6.4.3"
    shutil.rmtree(rocm / "lib")
    lib = rocm / "lib/rocblas/library"
    lib.mkdir(parents=True)
    debian_lib = Path(librocblas4) / "usr/lib/x86_64-linux-gnu"
    for f in (debian_lib / "rocblas/4.4.1/library").iterdir():
        if "gfx906" not in f.name:
            os.link(f, lib / f.name)
    os.link(debian_lib / "librocblas.so.4.4", rocm / "lib/librocblas.so.4.4")
    os.symlink("librocblas.so.4.4", rocm / "lib/librocblas.so.4")
    return root


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv[0] == "--list":
        for name, fn in MACHINES.items():
            print(f"{name:22} {fn()['description'].strip().splitlines()[0]}")
        return 0
    if len(argv) != 2 or argv[0] not in MACHINES:
        print(f"usage: build.py NAME DEST   (NAME one of: {', '.join(MACHINES)})", file=sys.stderr)
        return 2
    out = build(argv[0], argv[1])
    print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
