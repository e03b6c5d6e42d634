# The Ledger That Charged Twice: build, open, test.
# `make lab` opens the workbook; `make test` runs the whole test suite. Both build .venv first.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)
PYTEST_NOTEBOOKS := --nbval --nbval-current-env --nbval-sanitize-with notebooks/sanitize.cfg

.PHONY: install lab test test-unit test-notebooks test-browser notebooks bench soak clean

install: $(STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "Python 3.11 or newer is needed (found $$($(PYTHON) --version)); set PYTHON=python3.11"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	rm -f $(VENV)/.installed-* && touch $@

lab: install
	$(PY) -m jupyter lab $(ALLOW_ROOT) --ServerApp.root_dir="$(CURDIR)" notebooks/00_start_here.ipynb

# The whole suite: unit and scenario tests, every chapter under nbval, then the browser check.
test: install
	$(PY) -m pytest -n 2 --dist loadfile -m "not browser" $(PYTEST_NOTEBOOKS) tests notebooks
	$(PY) -m pytest -m browser tests/browser

test-unit: install
	$(PY) -m pytest -n 2 --dist loadfile -m "not browser" tests

test-notebooks: install
	$(PY) -m pytest -n 2 --dist loadfile $(PYTEST_NOTEBOOKS) notebooks

test-browser: install
	$(PY) -m pytest -m browser tests/browser

# Re-execute the chapters from notebooks/source/ and store their outputs (after changing idem).
notebooks: install
	$(PY) tools/notebooks.py build $(CHAPTERS)

bench: install
	$(PY) -m idem bench --events 500

# Longer reliability runs: more race rounds and more hypothesis examples.
soak: install
	IDEM_SOAK=1 $(PY) -m pytest -m "not browser" tests

clean:
	rm -rf $(VENV) .pytest_cache .hypothesis build *.egg-info
