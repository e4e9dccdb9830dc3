# Every target installs what it needs: on a fresh machine `make demo` and `make test` are
# the whole set-up.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
PYTEST_ARGS ?= -n 2

.PHONY: install test lint demo perf reliability clean

install: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[dev]'
	touch $(STAMP)

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS) -m "not perf and not reliability"

lint: install
	$(BIN)/ruff check reconciler tests
	$(BIN)/ruff format --check reconciler tests

demo: install
	$(BIN)/python scripts/demo.py

perf: install
	$(BIN)/python -m tests.perf.run

reliability: install
	$(BIN)/python -m pytest -m reliability -p no:xdist -s tests/reliability

clean:
	rm -rf $(VENV) .osmosis .pytest_cache .hypothesis
