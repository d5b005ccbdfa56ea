# The two commands on a fresh machine:
#   make demo   run Caveat's offline demo on the embedded default (SQLite + local WARC files)
#   make test   install everything the tests need (Python packages, Debian chromium and wget,
#               the field's own WARC tools) and run the test suite
PYTHON ?= python3
VENV ?= .venv
REF_VENV ?= .venv-ref
ENGINE_VENV ?= .venv-engine

.PHONY: demo reader-model test lint install referees engine system-packages vendor-check vendor-swagger-ui warcprox bench-browser

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -e '.[test,browser]'
	touch $@

install: $(VENV)/.installed

# pywb, py-wacz and cdxj-indexer pin their own dependencies; they live in their own venv and the
# tests call their executables, exactly as a user of those tools would.
$(REF_VENV)/.installed:
	$(PYTHON) -m venv $(REF_VENV)
	$(REF_VENV)/bin/pip install -q --upgrade pip
	$(REF_VENV)/bin/pip install -q 'pywb==2.10.0' 'wacz==0.6.0' 'cdxj-indexer==1.5.0' 'warcio==1.8.1'
	touch $@

# ReplayWeb.page (AGPL-3.0) is a referee only, never a dependency: tests/test_browser_replaywebpage.py
# loads Caveat's WACZ in it. Pinned; fetched from the npm registry into .referees/ (not committed).
REPLAYWEBPAGE_VERSION ?= 2.5.3
REPLAYWEBPAGE_DIR = .referees/replaywebpage
$(REPLAYWEBPAGE_DIR)/.installed-$(REPLAYWEBPAGE_VERSION):
	rm -rf $(REPLAYWEBPAGE_DIR) && mkdir -p $(REPLAYWEBPAGE_DIR)
	cd $(REPLAYWEBPAGE_DIR) && npm pack -q replaywebpage@$(REPLAYWEBPAGE_VERSION) && \
	  tar xzf replaywebpage-$(REPLAYWEBPAGE_VERSION).tgz && rm replaywebpage-$(REPLAYWEBPAGE_VERSION).tgz
	touch $@

# A real inference engine for `caveat measure`'s tests (tests/test_measure_engine.py): `transformers serve`
# with the CPU build of torch (2.13.0; a plain `torch` would pull CUDA builds of several GB), in its own venv.
$(ENGINE_VENV)/.installed:
	$(PYTHON) -m venv $(ENGINE_VENV)
	$(ENGINE_VENV)/bin/pip install -q --upgrade pip
	$(ENGINE_VENV)/bin/pip install -q 'torch==2.13.0' 'transformers[serving]==5.24.0'
	touch $@

engine: $(ENGINE_VENV)/.installed

referees: $(REF_VENV)/.installed system-packages $(REPLAYWEBPAGE_DIR)/.installed-$(REPLAYWEBPAGE_VERSION)

# Only the missing ones: a machine whose Node.js comes with its own npm (NodeSource's nodejs package)
# cannot also install Debian's npm, which conflicts with it.
system-packages:
	@missing=""; for p in chromium wget npm; do command -v $$p >/dev/null || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  SUDO=$$(command -v sudo >/dev/null && [ "$$(id -u)" != 0 ] && echo sudo); \
	  echo "installing Debian packages:$$missing"; \
	  $$SUDO apt-get -o DPkg::Lock::Timeout=300 update -q && $$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -q $$missing; fi

# warcprox (a WARC-writing proxy) is bench/browser.py's peer only, in its own venv; `make test` does not need it.
WARCPROX_VENV ?= .venv-warcprox
$(WARCPROX_VENV)/.installed:
	$(PYTHON) -m venv $(WARCPROX_VENV)
	$(WARCPROX_VENV)/bin/pip install -q --upgrade pip
	$(WARCPROX_VENV)/bin/pip install -q 'warcprox==2.13.1'
	touch $@

warcprox: $(WARCPROX_VENV)/.installed

bench-browser: install referees warcprox
	CAVEAT_REF_BIN=$(abspath $(REF_VENV))/bin $(VENV)/bin/python bench/browser.py

demo: install
	$(VENV)/bin/caveat demo

# The learned reader's shipped model (issue 26): trained again from tests/data/real*/ (fixed seed, one thread;
# about 75 s on two cores). The same corpus gives the same file byte for byte (tests/test_reader_train.py).
reader-model: install
	OMP_NUM_THREADS=1 $(VENV)/bin/caveat reader train --out scrapers/learned/model.json

# The layer contract (.importlinter) and the no-imports-inside-functions rule run first: a wrong import fails
# the build before any test runs (docs/ARCHITECTURE.md).
lint: install
	$(VENV)/bin/lint-imports --no-cache
	$(VENV)/bin/ruff check --select PLC0415 app

test: install referees engine system-packages vendor-check lint
	CAVEAT_REF_BIN=$(abspath $(REF_VENV))/bin CAVEAT_ENGINE_BIN=$(abspath $(ENGINE_VENV))/bin \
	  $(VENV)/bin/python -m pytest $(PYTEST_ARGS)

# The API docs page (/docs) serves Swagger UI from web/static/vendor/swagger-ui (committed, pinned by
# SHA256SUMS, so it works offline). vendor-swagger-ui fetches another version from the npm registry.
SWAGGER_UI_VERSION ?= 5.35.0
SWAGGER_UI_DIR = web/static/vendor/swagger-ui
vendor-check:
	cd $(SWAGGER_UI_DIR) && sha256sum -c --quiet SHA256SUMS

vendor-swagger-ui:
	tmp=$$(mktemp -d) && cd $$tmp && npm pack -q swagger-ui-dist@$(SWAGGER_UI_VERSION) && tar xzf swagger-ui-dist-*.tgz && \
	cp package/swagger-ui-bundle.js package/swagger-ui.css package/LICENSE package/NOTICE \
	   package/swagger-ui-bundle.js.LICENSE.txt $(abspath $(SWAGGER_UI_DIR))/ && rm -rf $$tmp
	cd $(SWAGGER_UI_DIR) && sha256sum swagger-ui-bundle.js swagger-ui.css > SHA256SUMS
