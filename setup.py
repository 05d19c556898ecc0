"""Build glue that pyproject.toml cannot express: the cffi probe extension and
the helper programs: the ones fork_exec launches (one static, one dynamic), the
guard, and osbench-parent, the minimal native parent the fork probes run in
(it links the same harness and probe tables as the extension)."""
import os
import sys

from setuptools import setup
from setuptools.command.build_ext import build_ext

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "probes"))
import build_probes  # noqa: E402  (the family list and table, shared with the cffi build)

PROBE_SOURCES = ["probes/harness.c"] + [f"probes/probe_{f}.c" for f in build_probes.families()]
HELPERS = {  # executable name -> (sources, extra link flags)
    "osbench-exit0-dynamic": (["probes/helpers/exit0.c"], []),
    "osbench-exit0-static": (["probes/helpers/exit0.c"], ["-static"]),
    # UnixBench execl: re-executes itself a given number of times
    "osbench-execl-dynamic": (["probes/helpers/execl.c"], []),
    "osbench-execl-static": (["probes/helpers/execl.c"], ["-static"]),
    # sits between runner and worker: nothing outlives the runner (launch.py)
    "osbench-guard": (["probes/helpers/guard.c"], []),
    # the small native parent the fork probes run in (worker.py routes them to it)
    "osbench-parent": (["probes/helpers/parent.c", *PROBE_SOURCES], ["-pthread"]),
}


class build_ext_with_helpers(build_ext):
    def run(self):
        super().run()
        # The helpers go next to the built extension, wherever this build puts it
        # (build/lib for a wheel, the source tree for an in-place/editable build).
        ext_dir = os.path.dirname(self.get_ext_fullpath("osbench_analysis._probes"))
        out_dir = os.path.join(ext_dir, "_bin")
        os.makedirs(out_dir, exist_ok=True)
        os.makedirs(self.build_temp, exist_ok=True)
        family_table = os.path.join(self.build_temp, "osb_families.c")
        with open(family_table, "w") as f:
            f.write('#include "harness.h"\n' + build_probes.family_table_c(build_probes.families()))
        for name, (sources, flags) in HELPERS.items():
            if name == "osbench-parent":
                sources = [*sources, family_table]
            # each helper its own object folder: the parent's probe objects must not clash with others'
            objs = self.compiler.compile(sources, output_dir=os.path.join(self.build_temp, name),
                                         include_dirs=["probes"], extra_postargs=["-O2", "-std=gnu11", "-Wall",
                                                                                  "-pthread"])
            self.compiler.link_executable(objs, name, output_dir=out_dir, extra_postargs=flags)
        if self.inplace or getattr(self, "editable_mode", False):
            src_bin = os.path.join("osbench_analysis", "_bin")
            if os.path.abspath(src_bin) != os.path.abspath(out_dir):
                os.makedirs(src_bin, exist_ok=True)
                for name in HELPERS:
                    self.copy_file(os.path.join(out_dir, name), os.path.join(src_bin, name))


setup(
    cffi_modules=["probes/build_probes.py:ffibuilder", "probes/build_probes.py:ffibuilder_test"],
    cmdclass={"build_ext": build_ext_with_helpers},
)
