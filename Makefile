# The commands a developer runs; .ci/run runs `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: install check test bench demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

install: $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@scripts/ensure-redis

check: install
	$(BIN)/ruff format --check src tests bench examples
	$(BIN)/ruff check src tests bench examples
	$(BIN)/mypy

test: check
	$(BIN)/pytest

bench: install
	$(BIN)/python bench/bench.py

demo: install
	$(BIN)/python examples/series_premiere.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
