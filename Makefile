# pbmserv: make run (serve on 127.0.0.1:2525 with SQLite), make test (the whole suite)
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint check clean bench axe messages

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

# make run: this checkout's own server, never an installed one's: its settings are
# $(LOCAL) if that file exists, else the defaults (database ./pbmserv.sqlite3, replies
# into the Maildir ./var/mail); never /etc/pbmserv/pbmserv.toml, never a PBMSERV_*
# variable of the shell. PORT=2600 takes SMTP on 127.0.0.1:2600 instead of 2525,
# WEB=8080 serves the web pages on 127.0.0.1:8080 too.
LOCAL ?= pbmserv.local.toml
PORT ?=
WEB ?=

# umask 077: its database, mail and logs are the owner's alone (they hold mail as it
# came, and replies)
run: $(STAMP)
	@umask 077 && env $$(env | sed -n 's/^\(PBMSERV_[A-Za-z0-9_]*\)=.*/-u \1/p') \
	    PBMSERV_CONFIG="$(wildcard $(LOCAL))" \
	    $(BIN)/pbmserv serve $(if $(PORT),--smtp 127.0.0.1:$(PORT)) \
	    $(if $(WEB),--web 127.0.0.1:$(WEB))

# axe-core (npm), which the browser tests run in the pages (tests/accessibility.py):
# installed into .cache/axe, a pinned version; CI installs it and fails if it cannot
AXE_CORE ?= 4.11.0
axe: .cache/axe/node_modules/axe-core/axe.min.js
.cache/axe/node_modules/axe-core/axe.min.js:
	mkdir -p .cache/axe
	npm install --prefix .cache/axe --no-save --no-audit --no-fund --ignore-scripts \
	    axe-core@$(AXE_CORE)
	test -s $@

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
	$(BIN)/python bench/attacks.py

# make messages: the words of the templates (and the code's messages) extracted into
# pbmserv/locale/messages.pot and merged into each language's catalogue, whose new
# strings are then to translate (docs/architecture.md: adding a string, a language).
# The catalogues are read as they are when the server starts: nothing to compile.
LOCALE := pbmserv/locale
BABEL_KEYWORDS := -k N_ -k our_subject:2
messages: $(STAMP)
	$(BIN)/pybabel -q extract -F babel.cfg --omit-header --sort-output --no-wrap \
	    --add-location=file $(BABEL_KEYWORDS) -o $(LOCALE)/messages.pot .
	for po in $(LOCALE)/*/LC_MESSAGES/messages.po; do \
	    $(BIN)/pybabel -q update --no-wrap --ignore-obsolete --no-fuzzy-matching --ignore-pot-creation-date \
	        -i $(LOCALE)/messages.pot -o $$po -l $$(basename $$(dirname $$(dirname $$po))) \
	        || exit 1; done

clean:
	rm -rf $(VENV) var .pytest_cache .mypy_cache .ruff_cache .cache
