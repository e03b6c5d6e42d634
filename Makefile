# The Ledger That Charged Twice: build, open, test.
# `make lab` opens the workbook; `make test` runs the whole test suite. Both build .venv first.
SHELL := /bin/bash
comma := ,
# One Python for the suite, Binder (environment.yml) and the functions (template.yaml's Runtime):
# tests/test_project.py holds them to this line. PYTHON=/path/to/python3.13 names one by hand.
PYTHON_VERSION := 3.13
ifeq ($(origin PYTHON),undefined)
PYTHON := $(shell tools/find_python.sh $(PYTHON_VERSION) 2>/dev/null)
endif
VENV := .venv
PY := $(VENV)/bin/python
CONSTRAINTS := requirements/constraints.txt
STAMP := $(VENV)/.installed-$(PYTHON_VERSION)-$(shell cat pyproject.toml $(CONSTRAINTS) | cksum | cut -d' ' -f1)
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
PYTEST_NOTEBOOKS := --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg
# `make lab PORT=8899 LAB_ARGS="--no-browser"`: the port and any other JupyterLab options.
PORT ?= 8888
LAB_ARGS ?=

.PHONY: install lab test test-unit test-notebooks test-binder test-browser test-load notebooks constraints \
	upgrade binder-url bench soak clean sam checkov test-install test-lowest-newest

install: $(STAMP)

# `PY $(RUNS_VERSION)` succeeds when PY is Python $(PYTHON_VERSION).
RUNS_VERSION = -c 'import sys; sys.exit(sys.version_info[:2] != ($(subst .,$(comma) ,$(PYTHON_VERSION))))'

# What Binder installs (the workbook extra's closure) at the pinned versions; the rest floats.
$(STAMP): pyproject.toml $(CONSTRAINTS)
	@[ -n "$(PYTHON)" ] || { tools/find_python.sh $(PYTHON_VERSION); exit 1; }
	@$(PYTHON) $(RUNS_VERSION) || \
		{ echo "Python $(PYTHON_VERSION) is needed (found $$($(PYTHON) --version)): the suite, Binder and Lambda run it"; exit 1; }
	@# A .venv of another Python (an older clone's) is built anew, not patched.
	@[ ! -x $(PY) ] || $(PY) $(RUNS_VERSION) || \
		{ echo "$(VENV) runs $$($(PY) --version): building it anew on $(PYTHON_VERSION)"; rm -rf $(VENV); }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -c $(CONSTRAINTS) -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $@

lab: install
	$(PY) -m jupyter lab $(ALLOW_ROOT) --port=$(PORT) $(LAB_ARGS) --ServerApp.root_dir="$(CURDIR)" \
		notebooks/00_start_here.ipynb

# The whole suite: unit and scenario tests, every chapter under nbval, the Binder rehearsal
# (a fresh venv from environment.yml runs every chapter), then the browser check. It prints its 25
# slowest tests at the end: the suite's time on 2 cores is a standard of its own (under 15 minutes).
test: install
	$(PY) -m pytest -n 2 --dist loadfile --durations=25 -m "not browser" $(PYTEST_NOTEBOOKS) tests notebooks
	$(PY) -m pytest -m browser tests/browser

test-unit: install
	$(PY) -m pytest -n 2 --dist loadfile -m "not browser and not binder" tests

test-notebooks: install
	$(PY) -m pytest -n 2 --dist loadfile $(PYTEST_NOTEBOOKS) notebooks

test-binder: install
	$(PY) -m pytest -m binder tests/test_binder.py

test-browser: install
	$(PY) -m pytest -m browser tests/browser

# The wheel installed with its check extra into a fresh venv, checking the copied handler (--json
# against the schema shipped in the wheel); then the check's tests at the floors and the newest.
test-install:
	PYTHON=$(PYTHON) tools/ci_clean_install.sh

test-lowest-newest:
	PYTHON=$(PYTHON) tools/ci_lowest_newest.sh

# The tests of real threads and real-time bounds (marker `concurrency`, in LOAD_TESTS), LOAD_RUNS
# whole passes in a row (one process; tests/conftest.py repeats them) while one busy loop per core
# (`nproc` of them) holds every core: a test that depends on how threads are scheduled, or on the
# machine's speed, fails here. Any failure fails the target; the busy loops end with it, passed or
# failed (and by themselves if make is killed outright: their parent gone, they stop).
LOAD_RUNS ?= 8
LOAD_TESTS := tests/test_races.py tests/test_claims_and_key_stories.py tests/test_cli.py \
	tests/test_teaching.py tests/test_ship_and_local_aws_views.py tests/test_recipe_check.py \
	tests/test_deploy_connect.py tests/test_check_handlers.py
BUSY_LOOP := import os; parent = os.getppid(); exec("while os.getppid() == parent: pass")
test-load: install
	@hogs=(); for _ in $$(seq "$$(nproc)"); do $(PY) -c '$(BUSY_LOOP)' & hogs+=($$!); done; \
	trap 'kill "$${hogs[@]}" 2>/dev/null' EXIT; \
	echo "test-load: $(LOAD_RUNS) passes of the concurrency tests, with $${#hogs[@]} busy loops"; \
	IDEM_LOAD_RUNS=$(LOAD_RUNS) $(PY) -m pytest -q -p no:cacheprovider -m concurrency $(LOAD_TESTS)

# Re-execute the chapters from notebooks/source/ and store their outputs (after changing idem).
notebooks: install
	$(PY) tools/notebooks.py build $(CHAPTERS)

# Pin what Binder installs to the versions .venv holds now (after changing pyproject.toml's deps).
constraints: install
	$(PY) tools/constraints.py write

# Move .venv to the newest versions pyproject.toml allows (no constraints), then pin them.
upgrade:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check --upgrade --upgrade-strategy eager -e '.[dev]'
	$(PY) tools/constraints.py write
	rm -f $(VENV)/.installed-*

# The mybinder.org link for this clone's GitHub remote (origin); says so when there is none.
binder-url:
	@$(PYTHON) tools/binder.py url

# The SAM CLI (about 340 MB, with pins of its own) in a venv of its own, so it never moves .venv's
# versions; tests/test_production_profile.py runs `sam validate --lint` and `sam build` with it
# when it is there, and says it skipped them when it is not.
SAM_VENV := .venv-sam
SAM_VERSION ?= 1.170.0
sam: $(SAM_VENV)/bin/sam

$(SAM_VENV)/bin/sam:
	$(PYTHON) -m venv $(SAM_VENV)
	$(SAM_VENV)/bin/python -m pip install --quiet --disable-pip-version-check \
		aws-sam-cli==$(SAM_VERSION) cfn-lint-serverless

# checkov in a venv of its own (.venv-checkov), for the same reason: tests/test_checkov.py runs it
# on template.yaml and on the SAM-expanded template when it is there, and says it skipped when not.
CHECKOV_VENV := .venv-checkov
CHECKOV_VERSION ?= 3.3.30
checkov: $(CHECKOV_VENV)/bin/checkov

$(CHECKOV_VENV)/bin/checkov:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip install --quiet --disable-pip-version-check checkov==$(CHECKOV_VERSION)

bench: install
	$(PY) -m idem bench --events 500

# Longer reliability runs: more race rounds and more hypothesis examples.
soak: install
	IDEM_SOAK=1 $(PY) -m pytest -m "not browser and not binder" tests

clean:
	rm -rf $(VENV) $(SAM_VENV) $(CHECKOV_VENV) .pytest_cache .hypothesis build *.egg-info
