# osbench: two commands on a fresh machine.
#   make all    install, set up the kernel environments, measure this machine (quick profile: the
#               emulated guests as soon as they are built, beside runsc's Go build; then native and
#               every available host environment, interleaved, on a quiet host), regenerate the paper
#               (the reference host's, the same on every machine) and write this machine's report
#               (build/report/machine_report.pdf: does this machine reproduce the paper?); a line
#               with the seconds since it started opens every phase
#   make test   run the whole test suite (what .ci/run calls); `make test-fast` for the fast tier
#   make lock   refresh requirements.lock after pyproject.toml's dependencies change (with the test
#               and fleet extras: `make install` and `make test` install both)
# Everything installs into .venv and build/ from this repository's own files.

PYTHON   ?= python3
VENV     ?= .venv
PY       := $(VENV)/bin/python
PROFILE  ?= quick
ENVIRONMENT ?= all
WAIT     ?= False   # True: queue behind a campaign already measuring on this host instead of stopping
# make paper HOST=<key or words of its label, or "this">: a paper about that host from every campaign of
# data/campaigns; unset: the paper, the reference host's, from the campaigns data/paper_campaigns.txt names
HOST     ?=
PAPER_HOST := $(if $(strip $(HOST)),-p host '$(strip $(HOST))')
RUNS     := build/notebooks
# papermill with its kernels on IPC sockets and shut down without an interrupt: no kernel warning or
# error line on a successful run (osbench_analysis/papermill_run.py)
PAPERMILL := $(PY) -m osbench_analysis.papermill_run --log-level WARNING -k python3
# Every Python package, exact version and hashes (pip-compile); `make lock` refreshes it.
LOCK     := requirements.lock
LOCK_VENV := build/lock-venv
PIP_TOOLS := pip-tools==7.6.2
# uv, the installer `make install` uses (with its hashes; `make lock` refreshes it too), in a venv of its own
UV_LOCK  := requirements-uv.lock
UV_VENV  := build/uv-venv
UV       := $(UV_VENV)/bin/uv
TEX_PACKAGES := texlive-latex-base texlive-latex-recommended texlive-fonts-recommended latexmk poppler-utils

BROWSER_PACKAGES := chromium chromium-driver

.PHONY: all install lock envs kernels setup count env-packages env-runsc env-local measure measure-guests analyze reference figures paper paper-and-report pdf report tex test test-fast clean-derived browser browser-check
all: measure paper-and-report
	$(call phase,make all finished)

# The seconds since the outermost make started (its sub-makes inherit the start), on the line that opens or
# closes each phase of `make all`
ifndef OSBENCH_MAKE_T0
OSBENCH_MAKE_T0 := $(shell date +%s)
endif
export OSBENCH_MAKE_T0
phase = @echo "[make: $$(( $$(date +%s) - $(OSBENCH_MAKE_T0) )) s] $(1)"

# The lock is installed by uv (itself pinned with its hashes in $(UV_LOCK), in a venv of its own), which
# checks the same hashes and installs the ~130 packages in seconds where pip took 80-170 s of a fresh
# `make all`; pip installs it where uv cannot be had or fails.  Bytecode is compiled as pip does (with
# PYTHONDONTWRITEBYTECODE set, every worker process would otherwise compile what it imports).
$(VENV)/.installed: pyproject.toml setup.py $(LOCK) $(wildcard probes/*.c probes/*.h probes/helpers/*.c probes/*.py) | $(UV)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	@if test -x $(UV); then \
	  echo "$(UV) pip install --require-hashes -r $(LOCK)"; \
	  $(UV) pip install -q --python $(PY) --require-hashes --compile-bytecode -r $(LOCK) \
	  && $(UV) pip install -q --python $(PY) --no-deps --no-build-isolation -e . && exit 0; \
	  echo "uv failed: installing with pip"; fi; \
	echo "$(PY) -m pip install --require-hashes -r $(LOCK)"; \
	$(PY) -m pip install -q --require-hashes -r $(LOCK) && $(PY) -m pip install -q --no-deps --no-build-isolation -e .
	@$(PY) -m pip check >/dev/null || { $(PY) -m pip check; \
	  echo "$(LOCK) lacks what pyproject.toml asks for: run make lock"; exit 1; }
	touch $@
	$(call phase,installed: $(VENV))

install: $(VENV)/.installed

# uv for `make install`; where it cannot be installed (no index reachable for it, another platform), pip is used
$(UV): $(UV_LOCK)
	@{ test -x $(UV_VENV)/bin/python || $(PYTHON) -m venv $(UV_VENV); } \
	  && $(UV_VENV)/bin/python -m pip install -q --require-hashes -r $(UV_LOCK) && test -x $@ && touch $@ \
	  || echo "uv could not be installed from $(UV_LOCK): make install uses pip"

# After editing pyproject.toml's dependencies: keeps every pin that still fits and adds what
# is new (`make lock UPGRADE=1` moves everything to the newest versions).  pip-tools lives in
# its own venv so that .venv holds exactly the lock.  The lock is for CPython 3.11 on Linux.
lock:
	test -x $(LOCK_VENV)/bin/python || $(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install -q $(PIP_TOOLS)
	CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes \
	  --allow-unsafe --all-build-deps --extra test --extra fleet --strip-extras --no-emit-find-links \
	  $(if $(UPGRADE),--upgrade) --output-file $(LOCK) pyproject.toml
	echo uv | CUSTOM_COMPILE_COMMAND="make lock" $(LOCK_VENV)/bin/pip-compile --quiet --generate-hashes --strip-extras \
	  --no-emit-find-links $(if $(UPGRADE),--upgrade) --output-file $(UV_LOCK) -

# gVisor, User-mode Linux, FUSE, and GNU Mach + Linux under QEMU (mach, linux-tcg) into build/envs
# (idempotent; one line per environment: ready or why not)
envs: install
	$(PY) -m osbench_analysis.environments.install

# The kernel-version sweep (issue 39, docs/kernels.md), after `make envs`; not part of `make all`, whose
# quick profile keeps its time: every Linux version of catalog/kernel_versions.py's table fetched (a pinned
# .deb) and measured with its default mitigations and with mitigations=off (one campaign each, one guest
# boot at a time, pinned to KERNEL_CPUS), each kernel's instructions profiled by function
# (data/kernel_profiles/), then the history (paper/generated/kernel_*).  63 minutes on a busy 2-CPU VM (2026-11-28).
# MEMORY_EVENTS=warm adds one memory-events campaign per version (default mitigations; about 5 minutes each).
KERNEL_CPUS ?= 0
MEMORY_EVENTS ?=
kernels: install
	$(PY) -m osbench_analysis.measure.kernel_sweep --cpus $(KERNEL_CPUS) $(if $(MEMORY_EVENTS),--memory-events $(MEMORY_EVENTS))
	$(PY) -m osbench_analysis.analysis.versions

# What `make all` and `make test` set up, side by side on a fresh machine: the venv's install (uv or pip),
# the Debian packages (the environments' and the paper's TeX, one apt-get) and runsc's Go build;
# then what is built from them (C helpers, guests: not booted here, the campaign's pre-flight boots
# each, `make envs` boots them once); then the report.  The first two steps need only the system's
# Python (the standard library).
HOST_INSTALL := PYTHONPATH="$(CURDIR)" $(PYTHON) -m osbench_analysis.environments.install
setup:
	@$(MAKE) --no-print-directory -j3 install env-runsc env-local
	@$(PY) -m osbench_analysis.environments.install --report

env-packages:
	$(HOST_INSTALL) --only packages --also $(TEX_PACKAGES)

env-runsc:
	$(HOST_INSTALL) --only runsc

env-local: install env-packages
	$(PY) -m osbench_analysis.environments.install --only local --no-boot

# One campaign round of notebooks/run_campaign.ipynb: $(1) the environments, $(2) the output notebook's name.
# The measuring bar and one line per environment go to this terminal (osbench_analysis/progress.py):
# papermill's own cell bar would only fight with it on the same line.
define campaign
	@mkdir -p $(RUNS)
	$(call phase,measuring: notebooks/run_campaign.ipynb (papermill) -p environment $(1))
	@$(PAPERMILL) --no-progress-bar notebooks/run_campaign.ipynb $(RUNS)/$(2).ipynb -p profile $(PROFILE) -p environment $(1) -p wait $(WAIT)
	$(call phase,measured: environment $(1))
endef

# ENVIRONMENT=all (make all) measures in two rounds.  The guests count their instructions (QEMU
# -icount), which the host's load does not change (docs/environments.md): they measure as soon as they
# are built, while runsc's Go build (niced) and the rest of the set-up go on beside them, each guest
# booted once and its repeat boot only within the quick profile's budget (guest_budget_s, 45 s of this
# machine's wall, judged by each first boot's: a slower machine repeats fewer).  The
# environments timed in ns (native, gVisor, UML, FUSE) measure after the whole set-up, on a quiet host,
# interleaved as always.  Any other ENVIRONMENT: one round after the set-up.
measure:
ifeq ($(strip $(ENVIRONMENT)),all)
	$(call phase,set-up: the venv's install + Debian packages + runsc's build + the guests; the guests measure once built)
	@$(MAKE) --no-print-directory -j4 env-runsc measure-guests
	@$(PY) -m osbench_analysis.environments.install --report
	$(call phase,set-up done)
	$(call campaign,all-timed,run_campaign)
	@# the full profile also sweeps the kernel versions (docs/kernels.md); the quick one never does
	@if [ "$(PROFILE)" = full ]; then $(MAKE) --no-print-directory kernels; fi
else
	$(call phase,set-up)
	@$(MAKE) --no-print-directory setup
	$(call phase,set-up done)
	$(call campaign,$(ENVIRONMENT),run_campaign)
endif

# The guests' round of `make all` (above), once they are built; nothing to do where none is available
measure-guests: install env-local
	@if $(PY) -c "from osbench_analysis.measure.config import resolve_environments as r; raise SystemExit(not r('all-guests'))"; \
	then :; else echo "no emulated guest is available here: the guests' round is left out"; exit 0; fi; \
	$(MAKE) --no-print-directory measure-guests-round

.PHONY: measure-guests-round
measure-guests-round:
	$(call campaign,all-guests,run_campaign_guests)

# Host events per guest operation (perf stat) into data/crossing_counts/, which the crossing accounting
# reads (docs/environments.md), and the application workloads' system calls by name (strace -c, ~10 s) into
# data/syscall_mix/, which the predicted-versus-measured check reads; about 110 s, so not part of
# `make all`: without this host's counts the paper uses another host's committed counts and says so.
count: setup
	$(PY) -m osbench_analysis.measure.counting
	$(PY) -m osbench_analysis.measure.syscall_mix

analyze: install
	@mkdir -p $(RUNS)
	@echo "running notebooks/analyze.ipynb (papermill)"
	@$(PAPERMILL) notebooks/analyze.ipynb $(RUNS)/analyze.ipynb -p write_paper True $(PAPER_HOST)

reference: install
	@mkdir -p $(RUNS)
	@echo "running notebooks/reference_comparisons.ipynb (papermill)"
	@$(PAPERMILL) notebooks/reference_comparisons.ipynb $(RUNS)/reference_comparisons.ipynb -p write_paper True $(PAPER_HOST)

figures: analyze reference

# Regenerates every generated/ file from the raw data, then the PDF if TeX is here: the reference host's
# paper from the campaigns data/paper_campaigns.txt names (copied into build/paper/campaigns first), the
# same files on any machine; HOST=... a paper about that host instead.
# The two notebooks write different files: they run side by side (one per core); analyze.ipynb draws its
# figures in forked processes beside its tables (plots.forest.saving_aside).  WITH_REPORT=1 (make all)
# also writes the machine report once the shorter notebook is done, beside the longer one.
paper: install
	$(if $(strip $(HOST)),,$(PY) -m osbench_analysis.report.scope)
	$(MAKE) --no-print-directory -j2 figures $(if $(WITH_REPORT),report)
	$(MAKE) --no-print-directory pdf

# make all's last phase: the paper and this machine's report (read the same pinned campaigns; independent)
paper-and-report:
	@$(MAKE) --no-print-directory paper WITH_REPORT=1

# "Does this machine reproduce the paper?": this machine's campaigns the paper does not read against the
# paper's host, as build/report/machine_report.pdf (its own PDF, checked like the paper's)
report: install tex
	$(PY) -m osbench_analysis.report.machine

pdf: tex
	$(PY) -m osbench_analysis.cli paper --pdf-only

# Debian's TeX, installed only when missing and only as root; otherwise say so and go on.
tex:
	@if command -v pdflatex >/dev/null && command -v pdftoppm >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing TeX ($(TEX_PACKAGES)) to build paper/paper.pdf"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(TEX_PACKAGES) >/dev/null; \
	else echo "no pdflatex and not root: figures and tables are regenerated, paper/paper.pdf is not"; fi

# Debian's Chromium and its driver (only as root, only when missing) and Selenium into the venv:
# what the JupyterLab check drives.  Not needed by `make test`.
browser: install
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing $(BROWSER_PACKAGES) for the JupyterLab check"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(BROWSER_PACKAGES) >/dev/null; \
	else echo "no chromium/chromedriver and not root: install $(BROWSER_PACKAGES) to run the JupyterLab check"; exit 1; fi
	$(PY) -m pip install -q selenium

# Every notebook opened in JupyterLab 4 in headless Chromium, all cells run, screenshots in build/jupyterlab/
browser-check: browser
	$(PY) benchmarks/jupyterlab_check.py

# On every core and one worker more (pytest-xdist), one test file per worker at a time (--dist loadfile): the
# sandbox tests (tests/test_environments_real.py) stay on one worker, in order, so sandboxes
# never boot side by side and no FUSE mount of another test is taken for a leftover.
# pytest keeps its rewritten test modules in __pycache__ (half of collection time) even where the shell asks
# Python not to write bytecode
# One worker more than the CPUs: a third of a 2-CPU run's time went to tests that wait (a hung probe's deadline,
# a sandbox's boot, a host joining the fleet), which a third worker fills (2026-11-28, Zen 4: 283 s at -n 2,
# 236 s at -n 3, all passed; CPU 74 % -> 89 % busy).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 1 )))
test: setup tex
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

test-fast: install
	PYTHONDONTWRITEBYTECODE= $(PY) -m pytest -m "not slow" -n auto --dist loadfile

clean-derived:
	rm -rf paper/generated/* $(RUNS) data/derived build/paper build/report
