# Two entry points for newcomers: `make demo` and `make test` (see README.md).
# The venv is built from /usr/bin/python3 so an unprivileged test user can execute it.
PYTHON ?= /usr/bin/python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: install demo test bench bench-all

# (setup.py and the C source: the compiled spawn is built in place by the editable install)
$(BIN)/.installed: pyproject.toml setup.py agentic_bash/executors/_fastspawn.c
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[all,test]'
	touch $@

install: $(BIN)/.installed

demo: install
	$(BIN)/agentic-bash run --cmd 'cd /workspace && echo "hello from $$(pwd)" > hi.txt && cat hi.txt | tr a-z A-Z'

test: install
	$(BIN)/python -m pytest -n auto -q -p no:cacheprovider --durations=25 tests integration

# the in-process suites with their tables (peers side by side where installed); ARGS=--quick
bench: install
	$(BIN)/python benchmarks/run.py $(ARGS)

# every suite, the sandboxed ones too (namespaces, cgroups, network, packages, serve)
bench-all: install
	$(BIN)/python benchmarks/run.py --all $(ARGS)
