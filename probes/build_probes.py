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
SOURCES = sorted(p.name for p in PROBES_DIR.glob("*.c"))
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


ffibuilder = FFI()
ffibuilder.cdef(cdef_from_header())
ffibuilder.set_source(
    "osbench_analysis._probes",
    '#include "harness.h"',
    sources=[str(PROBES_DIR / s) for s in SOURCES],
    include_dirs=[str(PROBES_DIR)],
    extra_compile_args=CFLAGS,
    define_macros=[
        ("OSB_SOURCE_HASH", '"%s"' % source_sha256()),
        ("OSB_CFLAGS", '"%s"' % " ".join(CFLAGS)),
    ],
    libraries=["pthread"],
)

if __name__ == "__main__":
    ffibuilder.compile(tmpdir=str(PROBES_DIR.parent / "build" / "cffi"), verbose=True)
