"""A checkout anywhere (issue 18): the probe that runs its helper through a
shell (fork_shell, lmbench's `sh -c PROG`) still runs it when the checkout's
path holds a space or a shell character."""
import shutil

import pytest

from osbench_analysis.worker.main import BIN_DIR


@pytest.mark.slow  # over 0.4 s: the full suite (make test) runs it, the fast tier does not
@pytest.mark.parametrize("folder", ["plain", "x y", "a'b$c"])
def test_fork_shell_runs_a_helper_wherever_the_checkout_is(tmp_path, folder):
    from osbench_analysis._probes import ffi, lib

    helper = tmp_path / folder / "osbench-exit0-dynamic"
    helper.parent.mkdir()
    shutil.copy2(BIN_DIR / "osbench-exit0-dynamic", helper)
    keep = [ffi.new("char[]", b""), ffi.new("char[]", str(helper).encode())]
    params = ffi.new("osb_params *")
    params.workdir, params.helper_path = keep
    params.child_cpu = -1
    result = ffi.new("osb_result *")
    rc = lib.osb_run(b"fork_shell", params, 10, result)
    assert (rc, result.error, ffi.string(result.message)) == (0, 0, b"")
    assert result.work_done == 10  # every shell ran the helper, which exited 0
