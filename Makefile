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

# Branch coverage of the tests' own process (worker subprocesses are not counted).
test: check
	$(BIN)/pytest --cov=duetime --cov-branch --cov-report=term:skip-covered --cov-fail-under=85

bench: install
	$(BIN)/python bench/bench.py

demo: install
	$(BIN)/python examples/series_premiere.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
