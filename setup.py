"""Build glue that pyproject.toml cannot express: the cffi probe extension and
the helper programs fork_exec launches (one static, one dynamic)."""
import os

from setuptools import setup
from setuptools.command.build_ext import build_ext

HELPERS = {  # executable name -> (source, extra link flags)
    "osbench-exit0-dynamic": ("probes/helpers/exit0.c", []),
    "osbench-exit0-static": ("probes/helpers/exit0.c", ["-static"]),
    # sits between runner and worker: nothing outlives the runner (launch.py)
    "osbench-guard": ("probes/helpers/guard.c", []),
}


class build_ext_with_helpers(build_ext):
    def run(self):
        super().run()
        # The helpers go next to the built extension, wherever this build puts it
        # (build/lib for a wheel, the source tree for an in-place/editable build).
        ext_dir = os.path.dirname(self.get_ext_fullpath("osbench_analysis._probes"))
        out_dir = os.path.join(ext_dir, "_bin")
        os.makedirs(out_dir, exist_ok=True)
        for name, (source, flags) in HELPERS.items():
            objs = self.compiler.compile([source], output_dir=self.build_temp, extra_postargs=["-O2", "-Wall"])
            self.compiler.link_executable(objs, name, output_dir=out_dir, extra_postargs=flags)
        if self.inplace or getattr(self, "editable_mode", False):
            src_bin = os.path.join("osbench_analysis", "_bin")
            if os.path.abspath(src_bin) != os.path.abspath(out_dir):
                os.makedirs(src_bin, exist_ok=True)
                for name in HELPERS:
                    self.copy_file(os.path.join(out_dir, name), os.path.join(src_bin, name))


setup(
    cffi_modules=["probes/build_probes.py:ffibuilder"],
    cmdclass={"build_ext": build_ext_with_helpers},
)
