"""Every notebook as a researcher meets it: JupyterLab 4 in headless Chromium
(Selenium), each notebook opened, checked unmodified on opening, all cells run,
its images and errors counted, screenshots saved top to bottom.

    make browser-check        # installs chromium, chromium-driver and selenium first
    .venv/bin/python benchmarks/jupyterlab_check.py [--out build/jupyterlab] [NOTEBOOK ...]

Prints one line per notebook (seconds to run all cells, images shown, errors,
whether opening marked it modified) and writes summary.json beside the
screenshots.  JupyterLab runs with autosave off and its settings and
workspaces in a scratch folder, so nothing is saved into the checkout;
run_campaign.ipynb gets tiny parameters and a scratch campaigns folder.
Timings are wall-clock on a shared machine: indicative, not a benchmark.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = ["run_campaign.ipynb", "analyze.ipynb", "explore.ipynb", "reference_comparisons.ipynb"]
# fleet.ipynb needs a Dask scheduler and hosts: it is opened and checked unmodified, not run.
OPEN_ONLY = ["fleet.ipynb"]
# images each notebook must show: analyze one figure per family and the ratios; explore the runs of the
# question, of the two campaigns and the widget's; reference_comparisons the architecture ratios and ours
# beside the published values (run_campaign draws none: its bar is a widget)
MIN_IMAGES = {"analyze.ipynb": 4, "explore.ipynb": 3, "reference_comparisons.ipynb": 2}
#: explore's two-campaign figure needs two rounds of this host; a fresh machine's one round prints this
#: (explore.two_campaigns' note) and draws one figure fewer
ONE_ROUND_NOTE = "nothing to compare yet"


def tiny_campaign_parameters(scratch: Path) -> str:
    """run_campaign.ipynb's parameters cell for a campaign of seconds into a scratch folder."""
    return "\n".join([
        'profile = "quick"          # quick',
        'probes = ["null_syscall", "pipe_pingpong"]  # two probes',
        "runs = 2                   # worker processes per condition",
        "batches = 2                # measured batches per worker",
        "min_batch_ms = 1.0         # calibration target",
        "precision_target = 0.0     # fixed runs",
        'environment = "native"     # native only',
        f'output = "{scratch}"      # scratch campaigns folder',
        "wait = True                # queue behind another campaign on this host",
    ])


def checkout_state() -> tuple:
    """What a notebook run could change in the checkout: new files, ignored ones included
    (paper/generated/ is ignored), the generated files' times, and the notebooks' own bytes.
    Tracked files edited meanwhile are not counted: others commit in this tree while the check
    runs, and no notebook writes a tracked file but itself."""
    import hashlib

    status = subprocess.run(["git", "status", "--porcelain", "--ignored", "--untracked-files=all"], cwd=REPO,
                            capture_output=True, text=True).stdout
    # bytecode, this script's own screenshots, and JupyterLab's checkpoints (git-ignored, the server's: this
    # script keeps them in its scratch folder, but an earlier JupyterLab may have left some)
    ignored_noise = ("__pycache__", "build/", ".ipynb_checkpoints/")
    lines = tuple(sorted(x for x in status.splitlines()
                         if x[:2] in ("??", "!!") and not any(n in x for n in ignored_noise)))
    generated = REPO / "paper" / "generated"
    notebooks = tuple((p.name, hashlib.sha256(p.read_bytes()).hexdigest()) for p in sorted((REPO / "notebooks").glob("*.ipynb")))
    return lines, tuple(sorted((str(p), p.stat().st_mtime_ns) for p in generated.rglob("*"))), notebooks


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_lab(scratch: Path, port: int) -> subprocess.Popen:
    # autosave off (nothing saved into the checkout), every cell rendered (the default windowing keeps
    # cells out of view out of the page, so their images could not be counted), no news pop-up
    for plugin, value in (("docmanager-extension/plugin", {"autosave": False}),
                          ("notebook-extension/tracker", {"windowingMode": "none"}),
                          ("apputils-extension/notification", {"fetchNews": "false"})):
        path = scratch / "settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))
    env = dict(os.environ, JUPYTERLAB_SETTINGS_DIR=str(scratch / "settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(scratch / "workspaces"), JUPYTER_RUNTIME_DIR=str(scratch / "runtime"))
    log = open(scratch / "lab.log", "w")
    proc = subprocess.Popen([str(Path(sys.executable).parent / "jupyter"), "lab", "--no-browser", f"--port={port}",
                             "--ServerApp.token=", "--ServerApp.password=", f"--ServerApp.root_dir={REPO}",
                             # the server's checkpoints of the opened notebooks go to the scratch folder, not notebooks/
                             f"--FileCheckpoints.root_dir={scratch / 'checkpoints'}",
                             "--LabApp.expose_app_in_browser=True", "--allow-root"], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    for _ in range(120):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/api/status", timeout=2)
            return proc
        except OSError:
            time.sleep(1)
    stop(proc)
    raise RuntimeError(f"JupyterLab did not start: see {scratch / 'lab.log'}")


def stop(proc: subprocess.Popen) -> None:
    """The server and its kernels: the process group this script started."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def driver(profile: Path):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    opts = webdriver.ChromeOptions()
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1600,1000", f"--user-data-dir={profile}"):
        opts.add_argument(a)
    opts.binary_location = shutil.which("chromium") or "/usr/bin/chromium"
    drv = webdriver.Chrome(service=Service(shutil.which("chromedriver") or "/usr/bin/chromedriver"), options=opts)
    drv.set_window_size(1600, 1000)
    return drv


def js(drv, script: str, *args):
    return drv.execute_script(script, *args)


PANEL = "jupyterapp.shell.currentWidget"


def wait_for(drv, condition: str, timeout: float) -> bool:
    t0 = time.time()
    while time.time() - t0 < timeout:
        try:
            if js(drv, f"try {{ return !!({condition}); }} catch (e) {{ return false; }}"):
                return True
        except Exception:  # the page is still loading
            pass
        time.sleep(0.5)
    return False


def open_notebook(drv, base: str, name: str) -> bool:
    """Open the notebook, wait for its kernel; True if opening marked it modified."""
    drv.get(f"{base}/lab/tree/notebooks/{name}")
    wait_for(drv, f"window.jupyterapp && {PANEL} && {PANEL}.context && {PANEL}.context.path.endsWith('{name}')", 90)
    wait_for(drv, f"{PANEL}.sessionContext.session && {PANEL}.sessionContext.session.kernel"
                  f" && {PANEL}.sessionContext.session.kernel.status === 'idle'", 120)
    time.sleep(3)     # JupyterLab writes the kernel's metadata into the model once connected
    if js(drv, "return !jupyterapp.shell.leftCollapsed"):   # the notebook gets the screen's width
        js(drv, "jupyterapp.commands.execute('application:toggle-left-area')")
    return bool(js(drv, f"return {PANEL}.context.model.dirty"))


def run_all(drv, timeout: float) -> float | None:
    """Run every cell and wait until none is pending; seconds taken (None: timed out)."""
    t0 = time.time()
    js(drv, "jupyterapp.commands.execute('notebook:run-all-cells')")
    time.sleep(2)
    busy = (f"{PANEL}.content.widgets.some(c => c.model.type === 'code' && "
            f"(c.promptNode && c.promptNode.textContent.includes('*')))")
    if not wait_for(drv, f"!({busy}) && {PANEL}.sessionContext.session.kernel.status === 'idle'", timeout):
        return None
    return time.time() - t0


def count_outputs(drv) -> dict:
    """Images (and blank ones), widgets, errors and the code cells that never ran.  Errors are read
    from the cells' output models: JupyterLab renders a traceback as stderr text, so no DOM selector
    tells it from a warning (the earlier one counted none while a cell showed a KeyError)."""
    return js(drv, f"""
        const node = {PANEL}.content.node;
        const imgs = Array.from(node.querySelectorAll('.jp-OutputArea-output img'));
        const cells = {PANEL}.content.widgets.filter(c => c.model.type === 'code');
        const outs = cells.flatMap(c => Array.from({{length: c.model.outputs.length}},
                                                   (_, i) => c.model.outputs.get(i).toJSON()));
        const errors = outs.filter(o => o.output_type === 'error');
        const text = outs.filter(o => o.output_type === 'stream').map(o => [].concat(o.text).join('')).join('');
        return {{images: imgs.length,
                 said_one_round: text.includes({ONE_ROUND_NOTE!r}),
                 blank_images: imgs.filter(i => i.naturalWidth < 10 || i.naturalHeight < 10).length,
                 errors: errors.length,
                 not_run: cells.filter(c => c.model.sharedModel.getSource().trim() && c.model.executionCount === null).length,
                 widgets: node.querySelectorAll('.jp-OutputArea-output .widget-box, .jp-OutputArea-output .jupyter-widgets').length,
                 error_text: errors.map(e => `${{e.ename}}: ${{e.evalue}}`.slice(0, 300))}};
    """)


def figure_shots(drv, prefix: Path) -> list[str]:
    """Each image a cell shows, whole, as the browser got it (an element screenshot would be cut at
    the window's height, and most figures are taller): the PNG behind its data URI."""
    import base64

    srcs = js(drv, f"return Array.from({PANEL}.content.node.querySelectorAll('.jp-OutputArea-output img'))"
                   ".map(i => i.src)")
    paths = []
    for i, src in enumerate(srcs):
        if src.startswith("data:image/png;base64,"):
            p = f"{prefix}_fig{i:02d}.png"
            Path(p).write_bytes(base64.b64decode(src.split(",", 1)[1]))
            paths.append(p)
    return paths


SCROLLER = f"{PANEL}.content.node.querySelector('.jp-WindowedPanel-outer') || {PANEL}.content.node"


def scroll_shots(drv, prefix: Path, maxn: int = 80) -> list[str]:
    """Screenshots top to bottom, each overlapping the one before (a fixed step longer than the
    visible height skipped what lay between two)."""
    paths, last = [], -1
    step = max(200, js(drv, f"return ({SCROLLER}).clientHeight") - 80)
    js(drv, f"({SCROLLER}).scrollTop = 0")
    time.sleep(0.8)
    for i in range(maxn):
        p = f"{prefix}_{i:02d}.png"
        drv.save_screenshot(p)
        paths.append(p)
        top = js(drv, f"return ({SCROLLER}).scrollTop")
        end = js(drv, f"const n = {SCROLLER}; return n.scrollHeight - n.clientHeight")
        if top >= end - 2 or top == last:
            break
        last = top
        js(drv, f"({SCROLLER}).scrollTop += arguments[0]", step)
        time.sleep(0.8)
    return paths


def table_and_tallest_figure(drv, prefix: Path) -> dict:
    """What a newcomer reads first (issue 30): the screen with the estimate table (the first output table
    whose header has an 'interval' column) at its top, and the one with the tallest figure at its top; the
    table's width beside the notebook column's, and the tallest figure's height, in CSS pixels."""
    found = {}
    table = js(drv, f"""
        const t = Array.from({PANEL}.content.node.querySelectorAll('.jp-OutputArea-output table'))
            .find(t => Array.from(t.querySelectorAll('th')).some(h => h.textContent.trim() === 'interval'));
        if (!t) return null;
        t.scrollIntoView();
        const column = t.closest('.jp-OutputArea-output');
        return {{table_px: Math.round(t.getBoundingClientRect().width),
                 column_px: Math.round(column.getBoundingClientRect().width)}};""")
    if table:
        time.sleep(1)
        drv.save_screenshot(f"{prefix}_estimate_table.png")
        found.update(table, estimate_table=f"{prefix}_estimate_table.png")
    tallest = js(drv, f"""
        const imgs = Array.from({PANEL}.content.node.querySelectorAll('.jp-OutputArea-output img'));
        if (!imgs.length) return null;
        const img = imgs.reduce((a, b) => b.getBoundingClientRect().height > a.getBoundingClientRect().height ? b : a);
        img.scrollIntoView();
        return Math.round(img.getBoundingClientRect().height);""")
    if tallest:
        time.sleep(1)
        drv.save_screenshot(f"{prefix}_tallest_figure.png")
        found.update(tallest_figure_px=tallest, tallest_figure=f"{prefix}_tallest_figure.png")
    return found


def set_parameters(drv, overrides: str) -> None:
    """Append assignments to the parameters cell (the notebook's own defaults stay above them)."""
    js(drv, f"const m = {PANEL}.content.widgets.find(c => c.model.type === 'code').model.sharedModel; "
            "m.setSource(m.getSource() + '\\n' + arguments[0])", overrides)


def widget_update(drv, out: Path) -> dict:
    """In explore.ipynb: pick another probe in the explorer's list; the plot must be redrawn."""
    before = js(drv, f"const w = {PANEL}.content.node.querySelectorAll('.widget-output img'); "
                     "return w.length ? w[w.length - 1].src.length : 0")
    picked = js(drv, f"""
        const sel = Array.from({PANEL}.content.node.querySelectorAll('.widget-dropdown select'))
            .find(s => Array.from(s.options).some(o => o.text === 'null_syscall'));
        if (!sel) return false;
        sel.value = Array.from(sel.options).find(o => o.text === 'null_syscall').value;
        sel.dispatchEvent(new Event('change', {{bubbles: true}}));
        sel.scrollIntoView();
        return true;""")
    t0 = time.time()
    changed = picked and wait_for(
        drv, f"(() => {{ const w = {PANEL}.content.node.querySelectorAll('.widget-output img'); "
             f"return w.length && w[w.length - 1].src.length !== {before}; }})()", 120)
    seconds = time.time() - t0
    time.sleep(2)
    js(drv, f"const w = {PANEL}.content.node.querySelectorAll('.widget-output img'); "
            "if (w.length) w[w.length - 1].scrollIntoView()")
    time.sleep(1)
    drv.save_screenshot(str(out / "explore_widget_after_pick.png"))
    return {"picked": bool(picked), "plot_redrawn": bool(changed), "seconds": round(seconds, 1)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=REPO / "build" / "jupyterlab")
    ap.add_argument("--timeout", type=float, default=900, help="seconds to run one notebook's cells")
    ap.add_argument("notebooks", nargs="*", default=NOTEBOOKS + OPEN_ONLY)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    for old in args.out.glob("*.png"):   # an earlier run's screenshots would pass for this one's
        old.unlink()
    status_before = checkout_state()
    scratch = Path(tempfile.mkdtemp(prefix="osbench-lab-"))
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    summary = {}
    proc = start_lab(scratch, port)
    drv = None
    try:
        drv = driver(scratch / "chromium")
        for name in args.notebooks:
            dirty = open_notebook(drv, base, name)
            row = {"modified_on_opening": dirty}
            if name not in OPEN_ONLY:
                if name == "run_campaign.ipynb":
                    set_parameters(drv, tiny_campaign_parameters(scratch / "campaigns"))
                row["run_all_seconds"] = run_all(drv, args.timeout)
                time.sleep(2)
                row.update(count_outputs(drv))
                if name == "explore.ipynb":
                    row["widget"] = widget_update(drv, args.out)
                if name in ("analyze.ipynb", "reference_comparisons.ipynb"):
                    row["first_read"] = table_and_tallest_figure(drv, args.out / Path(name).stem)
                row["figures"] = figure_shots(drv, args.out / Path(name).stem)
            row["screenshots"] = scroll_shots(drv, args.out / Path(name).stem)
            summary[name] = row
            secs = row.get("run_all_seconds")
            print(f"{name:28s} modified on opening: {dirty!s:5s} "
                  + (f"run all: {secs:.0f} s, images {row['images']} ({row['blank_images']} blank), "
                     f"errors {row['errors']}{' ' + '; '.join(row['error_text']) if row['errors'] else ''}, "
                     f"cells not run {row['not_run']}, widgets {row['widgets']}" if secs else
                     ("run all: timed out" if "run_all_seconds" in row else "opened only"))
                  + (f", widget redraw {row['widget']}" if "widget" in row else "")
                  + (f", first read {row['first_read']}" if "first_read" in row else ""), flush=True)
            # no dialog: the kernel is shut down and the tab disposed without saving
            js(drv, f"const p = {PANEL}; p.sessionContext.shutdown().then(() => p.dispose())")
            time.sleep(3)
    finally:
        if drv is not None:
            drv.quit()
        stop(proc)
        shutil.rmtree(scratch, ignore_errors=True)
    status_after = checkout_state()
    summary["checkout_unchanged"] = status_after == status_before
    if not summary["checkout_unchanged"]:
        summary["checkout_changes"] = [str(sorted(set(a) ^ set(b))) for a, b in zip(status_before, status_after)]
        print("checkout changed:", *summary["checkout_changes"], sep="\n  ")
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(f"checkout unchanged: {summary['checkout_unchanged']}; screenshots and summary.json in {args.out}")
    ok = summary["checkout_unchanged"] and all(
        not r["modified_on_opening"] and not r.get("errors") and not r.get("not_run") and not r.get("blank_images")
        and r.get("images", 0) >= MIN_IMAGES.get(name, 0) - bool(r.get("said_one_round")) and (r.get("run_all_seconds") or name in OPEN_ONLY)
        for name, r in summary.items() if isinstance(r, dict))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
