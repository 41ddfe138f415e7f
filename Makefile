# pbmserv: make run (serve on 127.0.0.1:2525 with SQLite), make test (the whole suite)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint check clean bench

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/pbmserv serve

test: $(STAMP)
	$(BIN)/ruff check pbmserv tests bench migrations
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache
	$(BIN)/pytest -q

# make bench BENCH="--processes 2 --database-url postgresql+psycopg://postgres@127.0.0.1/pbmserv_bench"
bench: $(STAMP)
	$(BIN)/python bench/throughput.py $(BENCH)
	$(BIN)/python bench/bot_answer.py --bot bot1
	$(BIN)/python bench/bot_answer.py --bot bot3 --game amoeba --moves 5
	$(BIN)/python bench/flat_cost.py

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache
