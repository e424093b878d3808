# The commands a developer runs; .ci/run runs `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: package install check docs test test-fast test-bench test-pythons bench ab demo clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# The package alone: all the demo runs.
package: $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e .

# The development tools too, and the redis-server the tests start.
install: package
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@scripts/ensure-redis
	@scripts/ensure-postgres
	@scripts/ensure-chromium
	@scripts/ensure-valgrind

check: install
	$(BIN)/ruff format --check src tests bench examples scripts
	$(BIN)/ruff check src tests bench examples scripts
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# The documentation site (mkdocs.yml) into site/, in a few seconds. --strict makes every
# warning fail: a broken link or anchor, a page missing from the nav, a docstring that does
# not parse. NO_MKDOCS_2_WARNING quiets the theme's banner about MkDocs' future.
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site

# Every test, spread over processes (pytest-xdist; each process starts its own servers),
# with the branch coverage of the tests' own processes (worker subprocesses are not
# counted). TEST_PROCESSES=1 runs them in one process.
TEST_PROCESSES ?= 3
test: check docs
	$(BIN)/pytest -n $(TEST_PROCESSES) --cov=duetime --cov-branch \
	  --cov-report=term:skip-covered --cov-fail-under=85

# For iteration, in under three minutes: lint, types, the unit tests and the contract suite
# on SQLite (no server needed but the file).
test-fast: check
	$(BIN)/pytest -n 2 -q tests/unit tests/contract -k "sqlite or not contract"

# The runs of the benchmark (tests marked `bench`: bench/ab.py end to end, its counted
# workloads under valgrind), left out of `make test`: they measure, and they load the
# machine. Run them on a change to the hot path or to bench/.
test-bench: install
	$(BIN)/pytest -q -m bench

# The test suite on other Pythons, each in its own venv; not part of `make test` (CI runs
# the default python3). Name interpreters by path where pyenv's shims do not work:
#   make test-pythons PYTHONS="/opt/python3.12/bin/python3.12"
PYTHONS ?= python3.12 python3.13
test-pythons:
	@for py in $(PYTHONS); do \
	  venv=.venv-$$(basename $$py); \
	  echo "== $$py"; \
	  $$py -m venv $$venv && $$venv/bin/python -m pip install --quiet -e '.[dev]' \
	    && $$venv/bin/pytest -q -p no:cacheprovider || exit 1; \
	done

bench: install
	$(BIN)/python bench/bench.py
	$(BIN)/python bench/expiry.py
	$(BIN)/python bench/pollers.py

# Two revisions, each from its own build, alternating on one Redis and one SQLite directory
# (bench/ab.py; docs/performance.md says how to read it). By default the working tree's
# uncommitted change against HEAD:
#   make ab A=d27d428 B=HEAD AB_ARGS="--stores redis --rounds 5"
A ?= HEAD
B ?= WORKTREE
AB_ARGS ?=
ab: package
	@scripts/ensure-redis
	$(BIN)/python bench/ab.py $(A) $(B) $(AB_ARGS)

demo: package
	$(BIN)/python examples/series_premiere.py

clean:
	rm -rf $(VENV) .venv-* .pytest_cache .mypy_cache .ruff_cache site
