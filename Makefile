# Every target sets up .venv first if it is missing or older than the pins.
# Python 3.11: the first of python3.11 and python3 on PATH (or PYTHON=...); checked below.
PYTHON ?= $(firstword $(shell command -v python3.11 python3 2>/dev/null) python3)
VENV   := .venv
PY     := $(VENV)/bin/python
READY  := $(VENV)/.ready
# The pytest options of the suite are in pyproject.toml ([tool.pytest.ini_options]); NBVAL adds
# to them: NBVAL=--nbval-lax runs every notebook and compares no stored output (README: macOS, ARM).
NBVAL  ?=
# Jupyter refuses to start as root (containers, classroom images) unless told it may.
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: help venv lock lab test chromium lint test-helpers test-notebooks notebooks student assignments docs bench bench-scale sample stability clean

help:
	@echo "make lab        set up .venv and open JupyterLab on notebooks/"
	@echo "make test       lint, helper tests, notebook structure checks, strict nbval of every notebook"
	@echo "make lint       ruff: lint everything, check the formatting of the Python files"
	@echo "make notebooks  re-execute every notebook in place (the only way outputs are made)"
	@echo "make student    student copies without solutions in build/student/"
	@echo "make assignments  an nbgrader course folder in build/nbgrader/"
	@echo "make docs       the documentation site in build/html/ (open build/html/index.html)"
	@echo "make bench      run benchmarks/ and print ratios against their baselines"
	@echo "make bench-scale  opt-in scale run: 10^8 x 100 B and 10^6 x 10 KB (22 GB of disk), cold cache"
	@echo "make mutation   mutation testing of helpers with mutmut, score recorded (MODULE=records: one)"
	@echo "make lock       regenerate requirements.lock from requirements.txt and the dev tools"
	@echo "make sample     rebuild the embedded VOC-format sample in helpers/sample_data/"
	@echo "make flaky      the pytest phase of make test N times (N=20), failing runs' output kept"
	@echo "make stability  run the notebook checks three times: other hash seed, time zone, locale, CPU"

venv: $(READY)

# On Linux x86_64 (where CI runs) every package comes at its exact version from
# requirements.lock, so the stored notebook outputs change only when the lock does.
# Elsewhere the compatible-release pins of requirements.txt and the dev extra apply.
ifeq ($(shell uname -sm),Linux x86_64)
PINS := requirements.lock
INSTALL := -r requirements.lock && $(PY) -m pip install --quiet --no-deps -e .
else
PINS := requirements.txt
INSTALL := -r requirements.txt -e '.[dev]'
endif

$(READY): $(PINS) requirements.txt pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null || \
	  { echo "make needs Python 3.11 (found: $$($(PYTHON) --version 2>&1)); run make PYTHON=/path/to/python3.11" >&2; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet $(INSTALL)
	$(PY) -m ipykernel install --sys-prefix --name python3 --display-name "Python 3 (TFRecord tutorials)" > /dev/null
	touch $(READY)

lock: $(READY)
	$(PY) -m uv pip compile requirements.txt pyproject.toml --extra dev --python-version 3.11 \
	  --python-platform x86_64-unknown-linux-gnu --no-header --annotation-style line \
	  --quiet -o requirements.lock

lab: $(READY)
	$(VENV)/bin/jupyter lab --ServerApp.root_dir=notebooks $(ALLOW_ROOT)

test: lint chromium
	$(PY) -m pytest $(NBVAL)

# make test opens the documentation site in the system's Chromium (CHROMIUM=/path to choose
# another): installed from Debian's packages where make runs as root with apt-get.
chromium:
	@if [ -z "$$CHROMIUM" ] && ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -q && apt-get install -y -q chromium; \
	  else \
	    echo "make test needs Chromium: sudo apt-get install chromium (Debian, Ubuntu), or CHROMIUM=/path/to/chrome make test" >&2; \
	    exit 1; \
	  fi; \
	fi

lint: $(READY)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

test-helpers: $(READY)
	$(PY) -m pytest tests -q

test-notebooks: $(READY)
	$(PY) -m pytest notebooks $(NBVAL)

notebooks: $(READY)
	$(PY) scripts/run_notebooks.py notebooks/[0-9][0-9]_*.ipynb

student: $(READY)
	$(PY) scripts/classroom.py student

assignments: $(READY)
	$(PY) scripts/classroom.py assignments

docs: $(READY)
	$(PY) scripts/build_docs.py

bench: $(READY)
	$(PY) -m benchmarks

# Opt-in, never part of make test or make bench: writes 22 GB under benchmarks/_work/scale (kept,
# skipped when there) and reads it from a cold page cache. SCALE_SETS=100x100000 SCALE_SHARDS=4
# make bench-scale is a smoke run (benchmarks/bench_scale.py lists the variables).
bench-scale: $(READY)
	$(PY) -m benchmarks scale

# Mutation testing of every helpers module but plots, notebook and beam against their unit
# tests ([tool.mutmut] in pyproject.toml), on one core, then the score per module written to
# tests/mutation_score.json (committed); fails below 85% killed. MODULE=records: that module
# only (helpers/records.py). Results stay in mutants/ (git-ignored), so a second run only tests
# what changed. Survivors: .venv/bin/mutmut results, then .venv/bin/mutmut show NAME.
MODULE ?=
.PHONY: mutation
mutation: $(READY)
	$(PY) -m mutmut run --max-children 1 $(if $(MODULE),'helpers.$(MODULE).*')
	$(PY) scripts/mutation_score.py $(MODULE)

# Flaky is red: the pytest phase of make test N times in turn (make flaky N=20). A failing run's
# whole output stays in build/flaky/run-K.log; at the end, how many runs failed and which tests.
N ?= 20
.PHONY: flaky
flaky: $(READY)
	@rm -rf build/flaky && mkdir -p build/flaky; \
	for k in $$(seq 1 $(N)); do \
	  start=$$(date +%s); \
	  if $(PY) -m pytest $(NBVAL) > build/flaky/run-$$k.log 2>&1; then \
	    rm build/flaky/run-$$k.log; echo "run $$k of $(N): passed ($$(( $$(date +%s) - start )) s)"; \
	  else \
	    echo "run $$k of $(N): FAILED ($$(( $$(date +%s) - start )) s), output in build/flaky/run-$$k.log"; \
	  fi; \
	done; \
	failed=$$(ls build/flaky | wc -l); \
	echo "$$failed of $(N) runs failed"; \
	for log in $$(ls build/flaky | sort -t- -k2 -n); do \
	  echo "build/flaky/$$log:"; \
	  grep -E '^(FAILED|ERROR) ' build/flaky/$$log | cut -d' ' -f2 | sed 's/^/  /' | grep . || \
	    echo "  no test named as failed: read the log (a crash, a collection error?)"; \
	done; \
	test $$failed = 0

sample: $(READY)
	$(PY) scripts/build_voc_sample.py

# With another hash seed, time zone and locale; then as on older CPUs, whose float kernels
# differ (oneDNN picks them by instruction set: SSE4.1 only, then AVX2).
stability: $(READY)
	PYTHONHASHSEED=4242 TZ=Pacific/Kiritimati LC_ALL=C.UTF-8 LANG=C.UTF-8 $(MAKE) test-notebooks
	ONEDNN_MAX_CPU_ISA=SSE41 $(MAKE) test-notebooks
	ONEDNN_MAX_CPU_ISA=AVX2 $(MAKE) test-notebooks

clean:
	rm -rf notebooks/_work benchmarks/_work build
	# hidden temporary files of writes that were killed half way (helpers.records)
	find . -path ./.venv -prune -o -type f -name '.*.tfrecord*.tmp' -print -delete
