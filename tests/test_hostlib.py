"""The static ABI check against C libraries compiled here with gcc, each one a defect the dynamic
loader really has (a missing library, a missing symbol version, a removed symbol, RUNPATH that is
not inherited, a renamed SONAME, a file of the wrong class, a file that is not ELF), and the
loader's own answer (`ldd -r`) for every case it can run here."""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from rocmrevive.hostlib.abi import check_library
from rocmrevive.hostlib.elfdyn import DynamicError, read_dynamic
from rocmrevive.hostlib.loader import DEFAULT_DIRS, ld_so_conf_dirs
from rocmrevive.rootfs import Root
from tests.fixtures import fixcache

CACHE = Path(os.environ.get("ROCMREVIVE_TEST_CACHE", "/var/tmp/rocmrevive-test-cache"))
HOST = Root("/")

# Every library below is compiled from this script; the cache key is its hash.
BUILD = r"""
set -eu
cc() { gcc -shared -fPIC -O1 "$@"; }
w() { mkdir -p "$(dirname "$1")"; cat > "$1"; }

# --- a: a needed library that is gone
w src/gone.c <<'EOF'
int gone_fn(void) { return 1; }
EOF
w src/needsgone.c <<'EOF'
int gone_fn(void);
int needsgone(void) { return gone_fn(); }
EOF
mkdir -p a/build
cc -Wl,-soname,libgone.so.1 src/gone.c -o a/build/libgone.so.1
cc src/needsgone.c -o a/libneedsgone.so -La/build -l:libgone.so.1
rm -r a/build

# --- b: symbol versions (FOO_2.0 added in the new build)
w src/foo_new.map <<'EOF'
FOO_1.0 { global: foo_a; local: *; };
FOO_2.0 { global: foo_b; } FOO_1.0;
EOF
w src/foo_old.map <<'EOF'
FOO_1.0 { global: foo_a; local: *; };
EOF
w src/foo_new.c <<'EOF'
int foo_a(void) { return 1; }
int foo_b(void) { return 2; }
EOF
w src/foo_old.c <<'EOF'
int foo_a(void) { return 1; }
EOF
w src/user.c <<'EOF'
int foo_a(void); int foo_b(void);
int user(void) { return foo_a() + foo_b(); }
EOF
mkdir -p b/new b/old
cc -Wl,-soname,libfoo.so.1 -Wl,--version-script=src/foo_new.map src/foo_new.c -o b/new/libfoo.so.1
cc -Wl,-soname,libfoo.so.1 -Wl,--version-script=src/foo_old.map src/foo_old.c -o b/old/libfoo.so.1
cc src/user.c -o b/libuser.so -Lb/new -l:libfoo.so.1

# --- c: an unversioned symbol removed
w src/bar_new.c <<'EOF'
int bar_x(void) { return 1; }
int bar_y(void) { return 2; }
EOF
w src/bar_old.c <<'EOF'
int bar_x(void) { return 1; }
EOF
w src/user2.c <<'EOF'
int bar_x(void); int bar_y(void);
int user2(void) { return bar_x() + bar_y(); }
EOF
mkdir -p c/new c/old
cc -Wl,-soname,libbar.so.1 src/bar_new.c -o c/new/libbar.so.1
cc -Wl,-soname,libbar.so.1 src/bar_old.c -o c/old/libbar.so.1
cc src/user2.c -o c/libuser2.so -Lc/new -l:libbar.so.1

# --- d: compatible changes: an old versioned reference served by a hidden (non-default)
#        version, and an unversioned reference served by a library that gained versions
w src/foo_compat.map <<'EOF'
FOO_1.0 { global: foo_a; local: *; };
FOO_2.0 { global: foo_a; } FOO_1.0;
EOF
w src/foo_compat.c <<'EOF'
int foo_a_v1(void) { return 1; }
int foo_a_v2(void) { return 2; }
__asm__(".symver foo_a_v1, foo_a@FOO_1.0");
__asm__(".symver foo_a_v2, foo_a@@FOO_2.0");
EOF
w src/olduser.c <<'EOF'
int foo_a(void);
int olduser(void) { return foo_a(); }
EOF
w src/baz.c <<'EOF'
int baz(void) { return 3; }
EOF
w src/baz.map <<'EOF'
BAZ_1.0 { global: baz; local: *; };
EOF
w src/user3.c <<'EOF'
int baz(void);
int user3(void) { return baz(); }
EOF
mkdir -p d/compat d/bazplain d/bazver
cc -Wl,-soname,libfoo.so.1 -Wl,--version-script=src/foo_compat.map src/foo_compat.c -o d/compat/libfoo.so.1
cc src/olduser.c -o d/libolduser.so -Lb/old -l:libfoo.so.1
cc -Wl,-soname,libbaz.so.1 src/baz.c -o d/bazplain/libbaz.so.1
cc -Wl,-soname,libbaz.so.1 -Wl,--version-script=src/baz.map src/baz.c -o d/bazver/libbaz.so.1
cc src/user3.c -o d/libuser3.so -Ld/bazplain -l:libbaz.so.1

# --- e: RPATH is inherited by what the library loads, RUNPATH is not
w src/leaf.c <<'EOF'
int leaf(void) { return 4; }
EOF
w src/mid.c <<'EOF'
int leaf(void);
int mid(void) { return leaf(); }
EOF
w src/top.c <<'EOF'
int mid(void);
int top(void) { return mid(); }
EOF
mkdir -p e/deps e/lib
cc -Wl,-soname,libleaf.so.1 src/leaf.c -o e/deps/libleaf.so.1
cc -Wl,-soname,libmid.so.1 src/mid.c -o e/deps/libmid.so.1 -Le/deps -l:libleaf.so.1
cc src/top.c -o e/lib/libtop_runpath.so -Le/deps -l:libmid.so.1 -Wl,--enable-new-dtags -Wl,-rpath,'$ORIGIN/../deps'
cc src/top.c -o e/lib/libtop_rpath.so -Le/deps -l:libmid.so.1 -Wl,--disable-new-dtags -Wl,-rpath,'$ORIGIN/../deps'

# --- f: a "faked version link": libsn.so.2 is really libsn.so.1
w src/sn.c <<'EOF'
int sn(void) { return 5; }
EOF
w src/usesn.c <<'EOF'
int sn(void);
int usesn(void) { return sn(); }
EOF
mkdir -p f/build f/lib
cc -Wl,-soname,libsn.so.2 src/sn.c -o f/build/libsn.so.2
cc src/usesn.c -o f/libusesn.so -Lf/build -l:libsn.so.2
cc -Wl,-soname,libsn.so.1 src/sn.c -o f/lib/libsn.so.1.0
ln -s libsn.so.1.0 f/lib/libsn.so.2
rm -r f/build

# --- g: a 32-bit file of the right name comes first and is passed over; a file that is not
#        ELF at all stops the loader
w src/cls.c <<'EOF'
int cls(void) { return 6; }
EOF
w src/usecls.c <<'EOF'
int cls(void);
int usecls(void) { return cls(); }
EOF
mkdir -p g/first g/second g/junk
clang-15 -m32 -shared -nostdlib -Wl,-soname,libcls.so.1 src/cls.c -o g/first/libcls.so.1
cc -Wl,-soname,libcls.so.1 src/cls.c -o g/second/libcls.so.1
cc src/usecls.c -o g/libusecls.so -Lg/second -l:libcls.so.1
printf 'INPUT(-lcls)\n' > g/junk/libcls.so.1

# --- h: weak references need no definition; BIND_NOW
w src/weak.c <<'EOF'
__attribute__((weak)) int maybe_there(void);
int weakuser(void) { return maybe_there ? maybe_there() : 0; }
EOF
mkdir -p h
cc -Wl,-z,now src/weak.c -o h/libweak.so
"""


def _build_c_libs() -> Path:
    """The libraries BUILD makes, cached while BUILD and the compilers are the same (fixcache)."""
    key = hashlib.sha256(BUILD.encode()).hexdigest()[:16]
    inputs = {"build": hashlib.sha256(BUILD.encode()).hexdigest(),
              "gcc": fixcache.tool_version("gcc", "--version"), "clang": fixcache.tool_version("clang-15", "--version")}
    return fixcache.build_entry(
        CACHE / "hostlib-c" / key, inputs,
        lambda tmp: subprocess.run(["bash", "-c", BUILD], cwd=tmp, check=True, capture_output=True),
        hash_files=True)


@pytest.fixture(scope="module")
def clibs() -> Path:
    return _build_c_libs()


# ---------------------------------------------------------------------------------------
# the loader's own answer

def ldd_r(lib: Path, library_path: list[str]) -> dict:
    """Run the real loader in trace mode with relocation processing (``ldd -r``) and parse it."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
           "LD_LIBRARY_PATH": ":".join(library_path)}
    p = subprocess.run(["ldd", "-r", str(lib)], env=env, capture_output=True, text=True)
    return parse_loader_trace(p.stdout + p.stderr, p.returncode)


def parse_loader_trace(text: str, rc: int) -> dict:
    out = {"rc": rc, "resolved": {}, "missing": set(), "versions": set(), "undefined": set(),
           "fatal": None}
    for line in text.splitlines():
        if m := re.match(r"^\t(\S+) => not found", line):
            out["missing"].add(m.group(1))
        elif m := re.match(r"^\t(\S+) => (\S+) \(0x", line):
            out["resolved"][m.group(1)] = os.path.realpath(m.group(2))
        elif m := re.search(r": (\S+): version `([^']+)' not found \(required by (\S+)\)", line):
            out["versions"].add((m.group(2), os.path.basename(m.group(1)), os.path.realpath(m.group(3))))
        elif m := re.match(r"^undefined symbol: ([^,\s]+)(?:, version (\S+))?\s+\((\S+)\)", line):
            out["undefined"].add((m.group(1), m.group(2), os.path.realpath(m.group(3))))
        elif m := re.match(r"^symbol (\S+) version (\S+) not defined in file \S+ with link time "
                           r"reference\s+\((\S+)\)", line):
            out["undefined"].add((m.group(1), m.group(2), os.path.realpath(m.group(3))))
        elif "error while loading shared libraries" in line:
            out["fatal"] = line
    return out


def ours(verdict, root: Root = HOST) -> dict:
    """The same facts from our verdict, in the loader's terms (real paths, file names)."""
    d = verdict.details
    real = lambda mp: os.path.realpath(root.path(mp))  # noqa: E731
    return {
        "resolved": {n["name"]: real(n["path"]) for n in d["needed"] if n.get("path")},
        "missing": {n["name"] for n in d["needed"] if n.get("found") is False and not n.get("bad_file")},
        "versions": {(m["version"], os.path.basename(m["path"]), real(m["required_by_path"]))
                     for m in d["versions_missing"]},
        "undefined": {(u["symbol"], u["version"], real(u["required_by_path"]))
                      for u in d["undefined_symbols"]},
    }


def agree(verdict, trace: dict, root: Root = HOST) -> None:
    mine = ours(verdict, root)
    assert mine["missing"] == trace["missing"]
    assert mine["versions"] == trace["versions"]
    assert mine["undefined"] == trace["undefined"]
    for name, path in trace["resolved"].items():
        if name in mine["resolved"]:
            assert mine["resolved"][name] == path, name
        else:  # the loader lists a library once, under the first name it was needed by
            assert any(p == path for p in mine["resolved"].values()), name


def check(lib: Path, dirs: list[Path], **kw):
    return check_library(HOST, lib, search_dirs=[str(d) for d in dirs], **kw)


# ---------------------------------------------------------------------------------------
# the cases, each against the loader

def test_missing_library(clibs):
    lib = clibs / "a/libneedsgone.so"
    v = check(lib, [])
    assert not v.ok
    assert v.lines[0].startswith("needs libgone.so.1, not found in ")
    expected = list(dict.fromkeys(ld_so_conf_dirs(HOST) + list(DEFAULT_DIRS)))
    assert v.details["needed"][0]["searched"] == expected
    assert "undefined symbol gone_fn (libneedsgone.so)" in v.lines[1]
    assert v.details["undefined_symbols"][0]["reason"] == "library-missing"
    t = ldd_r(lib, [])
    assert t["missing"] == {"libgone.so.1"}
    agree(v, t)


def test_missing_symbol_version(clibs):
    lib = clibs / "b/libuser.so"
    old = check(lib, [clibs / "b/old"])
    assert not old.ok
    assert old.lines == ["needs FOO_2.0 (libfoo.so.1), this host's libfoo.so.1 has up to FOO_1.0"]
    assert old.details["versions_missing"][0]["version"] == "FOO_2.0"
    assert [u["symbol"] for u in old.details["undefined_symbols"]] == ["foo_b"]
    assert old.details["undefined_symbols"][0]["reason"] == "version-missing"
    agree(old, ldd_r(lib, [str(clibs / "b/old")]))

    new = check(lib, [clibs / "b/new"])
    assert new.ok and new.lines == []
    assert new.details["symbols_resolved"] >= 2
    agree(new, ldd_r(lib, [str(clibs / "b/new")]))


def test_removed_symbol(clibs):
    lib = clibs / "c/libuser2.so"
    v = check(lib, [clibs / "c/old"])
    assert v.lines == ["undefined symbol bar_y (libuser2.so) not exported by any needed library"]
    t = ldd_r(lib, [str(clibs / "c/old")])
    assert t["undefined"] == {("bar_y", None, str(lib))}
    agree(v, t)
    assert check(lib, [clibs / "c/new"]).ok


def test_compatible_version_changes(clibs):
    # built against FOO_1.0 only, run against a library where foo_a@FOO_1.0 is hidden
    # (non-default) and foo_a@@FOO_2.0 is the default: the old reference still binds
    v = check(clibs / "d/libolduser.so", [clibs / "d/compat"])
    assert v.ok, v.lines
    agree(v, ldd_r(clibs / "d/libolduser.so", [str(clibs / "d/compat")]))
    # built against an unversioned libbaz, run against one that gained BAZ_1.0
    v = check(clibs / "d/libuser3.so", [clibs / "d/bazver"])
    assert v.ok, v.lines
    agree(v, ldd_r(clibs / "d/libuser3.so", [str(clibs / "d/bazver")]))
    # and the reverse of the first: built against FOO_2.0, the compat library has it
    v = check(clibs / "b/libuser.so", [clibs / "d/compat"])
    assert not v.ok  # foo_b is gone even though FOO_2.0 exists
    assert v.lines == ["undefined symbol foo_b@FOO_2.0 (libuser.so) not exported by any needed library"]
    agree(v, ldd_r(clibs / "b/libuser.so", [str(clibs / "d/compat")]))


def test_rpath_is_inherited_runpath_is_not(clibs):
    rp = check(clibs / "e/lib/libtop_rpath.so", [])
    assert rp.ok, rp.lines
    vias = {n["name"]: n["via"] for n in rp.details["needed"]}
    assert vias["libmid.so.1"] == "rpath" and vias["libleaf.so.1"] == "rpath"
    assert [n["path"] for n in rp.details["needed"] if n["name"] == "libleaf.so.1"] == \
        [str(clibs / "e/deps/libleaf.so.1")]
    agree(rp, ldd_r(clibs / "e/lib/libtop_rpath.so", []))

    ru = check(clibs / "e/lib/libtop_runpath.so", [])
    assert not ru.ok
    assert ru.lines[0].startswith("needs libleaf.so.1 (for libmid.so.1), not found in ")
    assert str(clibs / "e/deps") not in ru.lines[0]
    t = ldd_r(clibs / "e/lib/libtop_runpath.so", [])
    assert t["missing"] == {"libleaf.so.1"}
    agree(ru, t)


def test_origin_of_a_staged_copy(clibs, tmp_path):
    # a copy outside its final place: $ORIGIN is where it will be installed
    staged = tmp_path / "libtop_runpath.so"
    shutil.copy2(clibs / "e/lib/libtop_runpath.so", staged)
    lost = check(staged, [])
    assert any("$ORIGIN" in w for w in lost.warnings) or \
        any("libmid.so.1" in line for line in lost.lines)
    assert any(line.startswith("needs libmid.so.1, not found") for line in lost.lines)
    placed = check(staged, [], origin=str(clibs / "e/lib"))
    assert [n["via"] for n in placed.details["needed"] if n["name"] == "libmid.so.1"] == ["runpath"]


def test_renamed_soname_is_refused_though_the_loader_takes_it(clibs):
    lib = clibs / "f/libusesn.so"
    v = check(lib, [clibs / "f/lib"])
    assert not v.ok
    assert v.lines == [f"needs libsn.so.2, but {clibs}/f/lib/libsn.so.2 is libsn.so.1 (its SONAME): "
                       f"a renamed link, not that library"]
    t = ldd_r(lib, [str(clibs / "f/lib")])
    # the loader maps it without a word: this is the check the loader does not make
    assert t["resolved"]["libsn.so.2"] == str(clibs / "f/lib/libsn.so.1.0")
    assert not t["missing"] and not t["undefined"]


def test_wrong_class_is_passed_over_junk_stops_the_loader(clibs):
    lib = clibs / "g/libusecls.so"
    dirs = [clibs / "g/first", clibs / "g/second"]
    v = check(lib, dirs)
    assert v.ok, v.lines
    (n,) = [n for n in v.details["needed"] if n["name"] == "libcls.so.1"]
    assert n["path"] == str(clibs / "g/second/libcls.so.1")
    agree(v, ldd_r(lib, [str(d) for d in dirs]))

    v = check(lib, [clibs / "g/junk", clibs / "g/second"])
    assert v.lines[0] == (f"needs libcls.so.1, but {clibs}/g/junk/libcls.so.1 is not an ELF file "
                          f"(the loader stops at it)")
    t = ldd_r(lib, [str(clibs / "g/junk"), str(clibs / "g/second")])
    assert t["rc"] != 0 and f"{clibs}/g/junk/libcls.so.1: " in t["fatal"]


def test_weak_reference_and_bind_now(clibs):
    v = check(clibs / "h/libweak.so", [])
    assert v.ok and v.details["bind_now"] is True
    assert v.details["undefined_symbols"] == []
    agree(v, ldd_r(clibs / "h/libweak.so", []))


# ---------------------------------------------------------------------------------------
# the machine's own libraries: every one the loader lists, we list at the same path

@pytest.mark.parametrize("name", ["libstdc++.so.6", "libz.so.1", "libelf.so.1", "libcurl.so.4"])
def test_system_libraries_agree_with_the_loader(name):
    lib = Path("/usr/lib/x86_64-linux-gnu") / name
    if not lib.exists():
        pytest.skip(f"{lib} not on this machine")
    v = check_library(HOST, lib, search_dirs=[])
    t = ldd_r(lib, [])
    assert v.ok and t["rc"] == 0 and not (t["missing"] | t["versions"] | t["undefined"]), v.lines
    agree(v, t)
    assert set(t["resolved"]) <= {n["name"] for n in v.details["needed"]} | \
        {s for n in v.details["needed"] for s in [n.get("soname")] if s}


def test_a_deep_closure():
    lib = Path("/usr/lib/x86_64-linux-gnu/libcurl.so.4")
    if not lib.exists():
        pytest.skip("no libcurl here")
    v = check_library(HOST, lib, search_dirs=[])  # its speed is bench's, not a clock in a test
    assert len(v.details["needed"]) > 20


# ---------------------------------------------------------------------------------------
# units

def test_read_dynamic_facts():
    libc = read_dynamic("/lib/x86_64-linux-gnu/libc.so.6")
    assert libc.soname == "libc.so.6"
    assert "GLIBC_2.2.5" in libc.version_names() and libc.base_version == "libc.so.6"
    assert libc.definitions({"malloc"})["malloc"][0][0] == "GLIBC_2.2.5"
    # memcpy: the old GLIBC_2.2.5 one is hidden, the GLIBC_2.14 one is the default
    mc = sorted(libc.definitions({"memcpy"})["memcpy"])
    assert [(v, h) for v, h, _ in mc] == [("GLIBC_2.14", False), ("GLIBC_2.2.5", True)]


def test_read_dynamic_refuses_non_libraries(tmp_path):
    (tmp_path / "x.txt").write_text("hello")
    with pytest.raises(DynamicError, match="not an ELF file"):
        read_dynamic(tmp_path / "x.txt")
    subprocess.run(["gcc", "-c", "-x", "c", "-", "-o", str(tmp_path / "x.o")],
                   input=b"int f(void){return 0;}", check=True)
    with pytest.raises(DynamicError, match="ET_REL"):
        read_dynamic(tmp_path / "x.o")
    v = check_library(HOST, tmp_path / "x.o", search_dirs=[])
    assert not v.ok and "ET_REL" in v.lines[0]


def test_soname_and_needed_by_the_light_reader_agree_with_pyelftools(clibs, tmp_path):
    """``soname_of`` (what detect and audit ask of every librocblas.so) reads a 64-bit file's
    .dynamic and the names it points at without pyelftools (issue 40: its 40 modules were half
    of detect's imports); ``codeobj.elf.dynamic_tags`` is that reader, and ``programs`` takes
    DT_NEEDED from it. Both agree with ``read_dynamic`` on real libraries: the machine's own
    (libLLVM's .dynstr is megabytes), the test's, a 32-bit one (left to pyelftools), a .o."""
    from rocmrevive.codeobj.elf import dynamic_tags
    from rocmrevive.hostlib.elfdyn import soname_of
    libs = sorted(Path("/usr/lib/x86_64-linux-gnu").glob("lib*.so*"))[:150] + sorted(clibs.rglob("*.so*"))
    libs += sorted(Path("/usr/lib/x86_64-linux-gnu").glob("libLLVM*.so*"))[:1]
    subprocess.run(["gcc", "-c", "-x", "c", "-", "-o", str(tmp_path / "x.o")], input=b"int f(void){return 0;}", check=True)
    (tmp_path / "x.txt").write_text("hello")
    libs += [tmp_path / "x.o", tmp_path / "x.txt"]
    both = light = 0
    for lib in libs:
        if not lib.is_file():
            continue
        try:
            full = read_dynamic(lib)
            want, needed = full.soname, full.needed
        except DynamicError:
            want, needed = None, None
        assert soname_of(lib) == want, lib
        with open(lib, "rb") as f:
            tags = dynamic_tags(f.fileno(), os.fstat(f.fileno()).st_size)
        if tags is not None:
            light += 1
            assert (tags.soname, list(tags.needed)) == (want, needed), lib
            both += needed is not None
    assert light > 100 and both == light, (light, both)
    code = ("import sys; from rocmrevive.hostlib.elfdyn import soname_of; "
            "print(soname_of('/lib/x86_64-linux-gnu/libc.so.6'), 'elftools' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))).stdout
    assert out.split() == ["libc.so.6", "False"]


def test_ld_so_conf_includes_under_a_root(tmp_path):
    (tmp_path / "etc/ld.so.conf.d").mkdir(parents=True)
    (tmp_path / "etc/ld.so.conf").write_text("# comment\ninclude ld.so.conf.d/*.conf\n/opt/first\n")
    (tmp_path / "etc/ld.so.conf.d/20-b.conf").write_text("/opt/b:/opt/b2\n")
    (tmp_path / "etc/ld.so.conf.d/10-a.conf").write_text("/opt/a  # rocm\n/opt/a\n")
    assert ld_so_conf_dirs(Root(tmp_path)) == ["/opt/a", "/opt/b", "/opt/b2", "/opt/first"]


def test_a_root_is_searched_not_the_host(clibs, tmp_path):
    # the same library under a root whose /usr/lib/x86_64-linux-gnu holds the old libfoo: a
    # search directory is a machine path, so the host's directory of the same name is not seen
    root = tmp_path / "root"
    (root / "usr/lib/x86_64-linux-gnu").mkdir(parents=True)
    shutil.copy2(clibs / "b/old/libfoo.so.1", root / "usr/lib/x86_64-linux-gnu/")
    (root / "opt/app/lib").mkdir(parents=True)
    shutil.copy2(clibs / "b/libuser.so", root / "opt/app/lib/")
    v = check_library(Root(root), root / "opt/app/lib/libuser.so",
                      search_dirs=["/opt/app/lib", str(clibs / "b/new")])
    assert v.library == "/opt/app/lib/libuser.so"
    libfoo = [n for n in v.details["needed"] if n["name"] == "libfoo.so.1"][0]
    assert libfoo["path"] == "/usr/lib/x86_64-linux-gnu/libfoo.so.1" and libfoo["via"] == "default"
    assert "needs FOO_2.0 (libfoo.so.1), this root's libfoo.so.1 has up to FOO_1.0" in v.lines
    assert v.lines == ["needs FOO_2.0 (libfoo.so.1), this root's libfoo.so.1 has up to FOO_1.0"]
    json.dumps(v.to_json())  # JSON-ready


def test_a_copy_beside_the_tree_loses_to_runpath(clibs, tmp_path):
    # Why a graft replaces the tree's file instead of going beside it with an ld.so.conf entry:
    # a consumer whose RUNPATH/RPATH names its own directory ($ORIGIN, as ROCm's libraries are
    # built) finds the tree's copy first, whatever ld.so.conf says.
    root = tmp_path / "root"
    for d in ("opt/app/lib", "opt/app/deps", "opt/graft", "etc/ld.so.conf.d"):
        (root / d).mkdir(parents=True)
    shutil.copy2(clibs / "e/lib/libtop_runpath.so", root / "opt/app/lib/")
    for f in ("libmid.so.1", "libleaf.so.1"):
        shutil.copy2(clibs / "e/deps" / f, root / "opt/app/deps/")
        shutil.copy2(clibs / "e/deps" / f, root / "opt/graft/")
    (root / "etc/ld.so.conf").write_text("include /etc/ld.so.conf.d/*.conf\n")
    (root / "etc/ld.so.conf.d/00-graft.conf").write_text("/opt/graft\n")
    v = check_library(Root(root), root / "opt/app/lib/libtop_runpath.so", search_dirs=[])
    paths = {n["name"]: (n["path"], n["via"]) for n in v.details["needed"]}
    assert paths["libmid.so.1"] == ("/opt/app/deps/libmid.so.1", "runpath")
    # libmid itself has no RUNPATH: its libleaf comes from ld.so.conf, i.e. the graft directory
    assert paths["libleaf.so.1"] == ("/opt/graft/libleaf.so.1", "ld.so.conf")
