"""cffi (API mode) build of the probes into osbench_analysis._probes.

Used by setup.py through ``cffi_modules``; ``python probes/build_probes.py``
compiles it into build/cffi, to check a probe edit compiles
(``pip install -e .`` rebuilds the extension the package uses).
"""
import hashlib
import pathlib
import re

from cffi import FFI

PROBES_DIR = pathlib.Path(__file__).resolve().parent
#: Probes that misbehave on purpose (crash, hang) for the isolation tests: built
#: into their own extension, osbench_analysis._probes_test, never into the one
#: campaigns load.
TEST_FAMILIES = ("testonly",)


def families(test: bool = False) -> list[str]:
    """Probe families, one per probes/probe_<family>.c file: adding that file
    (with its table `osb_probes_<family>[]`) is all a new family needs."""
    names = sorted(p.stem[len("probe_"):] for p in PROBES_DIR.glob("probe_*.c"))
    return [f for f in names if (f in TEST_FAMILIES) == test]


def family_table_c(fams: list[str]) -> str:
    """The C glue harness.c walks: the families compiled into one extension."""
    externs = "".join(f"extern const osb_probe osb_probes_{f}[];\n" for f in fams)
    table = ", ".join(f"osb_probes_{f}" for f in fams)
    return f"{externs}const osb_probe *const osb_families[] = {{{table}{', ' if fams else ''}NULL}};\n"


CFLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter"]



def cdef_from_header() -> str:
    """The declarations between the cffi-cdef markers of harness.h: one source
    of truth for the structs the C side fills and Python reads."""
    text = (PROBES_DIR / "harness.h").read_text()
    m = re.search(r"/\* cffi-cdef-begin.*?\*/(.*)/\* cffi-cdef-end \*/", text, re.S)
    if not m:
        raise RuntimeError("probes/harness.h lacks the cffi-cdef-begin/end markers")
    return re.sub(r"/\*.*?\*/", "", m.group(1), flags=re.S)


def source_sha256() -> str:
    """Hash of every C source and header, so a campaign names the exact probe code."""
    h = hashlib.sha256()
    for p in sorted(PROBES_DIR.rglob("*")):
        if p.suffix in (".c", ".h") and p.is_file() and p.relative_to(PROBES_DIR).parts[0] != "environments":
            h.update(p.relative_to(PROBES_DIR).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def make_builder(module: str, fams: list[str]) -> FFI:
    builder = FFI()
    builder.cdef(cdef_from_header())
    builder.set_source(
        module,
        '#include "harness.h"\n' + family_table_c(fams),
        sources=[str(PROBES_DIR / "harness.c")] + [str(PROBES_DIR / f"probe_{f}.c") for f in fams],
        include_dirs=[str(PROBES_DIR)],
        extra_compile_args=CFLAGS,
        define_macros=[
            ("OSB_SOURCE_HASH", '"%s"' % source_sha256()),
            ("OSB_CFLAGS", '"%s"' % " ".join(CFLAGS)),
        ],
        libraries=["pthread"],
    )
    return builder


ffibuilder = make_builder("osbench_analysis._probes", families())
ffibuilder_test = make_builder("osbench_analysis._probes_test", families(test=True))

if __name__ == "__main__":
    for b in (ffibuilder, ffibuilder_test):
        b.compile(tmpdir=str(PROBES_DIR.parent / "build" / "cffi"), verbose=True)
