"""cffi (API mode) build of the probes into osbench_analysis._probes.

Used by setup.py through ``cffi_modules``; ``python probes/build_probes.py``
compiles it into build/cffi, to check a probe edit compiles
(``pip install -e .`` rebuilds the extension the package uses).
"""
import hashlib
import pathlib

from cffi import FFI

PROBES_DIR = pathlib.Path(__file__).resolve().parent
SOURCES = sorted(p.name for p in PROBES_DIR.glob("*.c"))
CFLAGS = ["-O2", "-std=gnu11", "-Wall", "-Wextra", "-Wno-unused-parameter"]

CDEF = """
typedef struct osb_params {
    const char *workdir;
    const char *helper_path;
    int32_t child_cpu;
    int64_t size;
} osb_params;

typedef struct osb_result {
    int64_t iterations;
    int64_t elapsed_ns;
    int64_t work_done;
    int32_t cpu_start;
    int32_t cpu_end;
    int64_t nvcsw;
    int64_t nivcsw;
    int64_t minflt;
    int64_t started_unix_ns;
    int32_t error;
    char message[200];
} osb_result;

int osb_run(const char *probe, const osb_params *p, int64_t iterations, osb_result *out);
int osb_probe_count(void);
const char *osb_probe_name(int i);
const char *osb_build_info(void);
"""


def source_sha256() -> str:
    """Hash of every C source and header, so a campaign names the exact probe code."""
    h = hashlib.sha256()
    for p in sorted(PROBES_DIR.rglob("*")):
        if p.suffix in (".c", ".h") and p.is_file():
            h.update(p.relative_to(PROBES_DIR).as_posix().encode())
            h.update(p.read_bytes())
    return h.hexdigest()


ffibuilder = FFI()
ffibuilder.cdef(CDEF)
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
