# Project-local installs of the agent CLIs (git-ignored `.agents/`); `onegc doctor` and the
# adapters find them there when they are not on PATH (runner/agents/locate.py).
#
#   make agents                               # the pinned versions (the newest that passed the end-to-end tests)
#   make agents CLAUDE_CODE_VERSION=latest    # any version npm knows
#   make agents-latest                        # the newest of each into .agents-latest: the end-to-end tests run both

AGENTS_PREFIX       ?= .agents
# Pinned to the newest versions the end-to-end tests passed with (docs/agents.md lists them; the
# fixtures of shared/fixtures/transcripts/ and tests/runner/agents/fixtures/ are their output).
CLAUDE_CODE_VERSION ?= 2.1.332
CODEX_VERSION       ?= 0.171.0
OPENCODE_VERSION    ?= 1.18.33
NPM                 ?= npm

LATEST_PREFIX       ?= .agents-latest

.PHONY: agents agents-latest agents-versions agents-clean

agents:
	@command -v $(NPM) >/dev/null || { echo "npm not found: install Node.js 20+ (https://nodejs.org) and rerun 'make agents'" >&2; exit 2; }
	$(NPM) install --prefix $(AGENTS_PREFIX) --save-exact --no-audit --no-fund --loglevel=error \
		@anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) \
		@openai/codex@$(CODEX_VERSION) \
		opencode-ai@$(OPENCODE_VERSION)
	@$(MAKE) --no-print-directory agents-versions

# the newest of each CLI beside the pins; the end-to-end tests run these too (once, if they are the pins)
agents-latest:
	@$(MAKE) --no-print-directory agents AGENTS_PREFIX=$(LATEST_PREFIX) \
		CLAUDE_CODE_VERSION=latest CODEX_VERSION=latest OPENCODE_VERSION=latest

agents-versions:
	@for cli in claude codex opencode; do \
		exe=$(AGENTS_PREFIX)/node_modules/.bin/$$cli; printf '%-9s ' $$cli; \
		if [ -x $$exe ]; then $$exe --version 2>&1 | head -n 1; else echo "not installed: run 'make agents'"; fi; \
	done

agents-clean:
	rm -rf $(AGENTS_PREFIX) $(LATEST_PREFIX)

# ---------------------------------------------------------------------------- set-up, demo, tests
# Two commands on a fresh machine: `make demo` and `make test` (.ci/run calls `make lint` and `make test`).
PYTHON ?= python3
VENV   ?= .venv
# The CPU build first; the project's own range admits it, so pip keeps it (no multi-GB CUDA build).
TORCH  ?= torch==2.13.0

.PHONY: venv demo test test-fast lint bench

$(VENV)/.installed: pyproject.toml
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/python -m pip install -q --upgrade pip
	$(VENV)/bin/python -m pip install -q "$(TORCH)"
	$(VENV)/bin/python -m pip install -q -e '.[dev]'
	@# T4 from HIV.csv (RDKit 2024.03.6 has wheels for Python 3.11-3.12 only): optional, said when missing
	$(VENV)/bin/python -m pip install -q -e '.[molecules]' \
	  || echo "note: no RDKit 2024.03.6 for this Python: T4 can be prepared from OGB's hiv.zip, not from HIV.csv"
	@# the agents' Python (requirements-agent.txt): scipy, scikit-learn, pandas; then the torchvision built
	@# for this torch (the command is the fix `onegc doctor` gives) and, only where that pair imports, timm
	@# with its own dependencies; else neither (PyPI's torchvision 0.28 does not import beside the CPU build
	@# of torch 2.13). timm is never left without what it requires: pip's resolver would print a red ERROR
	@# about it at every later install
	$(VENV)/bin/python -m pip install -q -r requirements-agent.txt
	@fix=$$($(VENV)/bin/python -c 'from runner.session.agent_env import torchvision_install as t; print(t() or "")'); \
	if [ -n "$$fix" ] && sh -c "$$fix -q" 2>/dev/null && $(VENV)/bin/python -c 'import torchvision.ops' 2>/dev/null \
	   && $(VENV)/bin/python -m pip install -q "timm>=1.0.20,<2"; then \
	     echo "torchvision and timm for the agents: $$fix"; \
	else $(VENV)/bin/python -m pip uninstall -q -y torchvision timm 2>/dev/null; \
	     echo "note: T3's backbones (timm) will not run here: $$($(VENV)/bin/python -c 'from runner.session.agent_env import torchvision_problem as p; print(p())')"; fi
	@# what the agent can import, asked once now (torch's import takes seconds) so that `onegc doctor` answers at once
	@$(VENV)/bin/python -c 'from runner.session.agent_env import check; check()' || true
	@touch $@

venv: $(VENV)/.installed

# q leaves the session running and `onegc demo` says so with exit code 6 (docs/exit-codes.md): for
# make that is the demo done, not an error
demo: venv
	@$(VENV)/bin/onegc demo || [ $$? -eq 6 ]

# every test, three at a time on 2 cores: many real-session tests spend minutes waiting on the
# runner (a live drain, an official phase's bound) with a core idle, and worksteal hands a free
# worker the tail of a busy one. Measured here in one session: 1 255 s (-n 3 --dist worksteal)
# against 1 451 s (-n 2) for the same 1 171 tests, both with no failure
test: venv
	$(VENV)/bin/python -m pytest -q -n 3 --dist worksteal

# unit and Pilot tests only, two at a time (one per core): no test that starts a process or
# trains (those are marked slow; tests/conftest.py fails one that starts a process unmarked)
test-fast: venv
	$(VENV)/bin/python -m pytest -q -m "not slow" -n 2

# style, types and the layers (configured in pyproject.toml); .ci/run runs this before the tests
lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(VENV)/bin/lint-imports

# every benchmark, one table (docs/benchmarks.md); BENCH_ARGS=--quick for a pass of a few minutes
bench: venv
	$(VENV)/bin/python benchmarks/run_all.py $(BENCH_ARGS)
