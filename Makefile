# raidlab: two commands matter. `make demo` sets everything up and runs the headline
# study; `make test` sets everything up and runs every test. `make bench` measures speed.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NATIVE_STAMP := $(VENV)/.native
# The real-data engine, installed next to the venv's python where raidlab.engine and
# `raidlab create/serve/...` look for it first; the file is its own stamp.
ENGINE := $(VENV)/bin/raidlab-engine
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml pyproject.toml

.PHONY: setup tools demo test test-rust test-python lint bench clean

# Real peers the tests compare against (Debian packages): fio for job semantics, JSON
# shape and its nbd engine; qemu-io (qemu-utils) and nbdcopy (libnbd-bin) as NBD
# clients of the engine; nbdkit as a reference server in the NBD benchmark.
# Installed once; needs root, as on the project's machines and CI.
TOOLS := fio:fio qemu-io:qemu-utils nbdcopy:libnbd-bin nbdkit:nbdkit
tools:
	@missing=""; for pair in $(TOOLS); do \
	  command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair##*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	fi

setup: $(NATIVE_STAMP) $(ENGINE)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet "maturin>=1.5,<2" "pandas>=2" "matplotlib>=3.7" "typer>=0.12" "rich>=13" "pytest>=7" "ruff>=0.4" "fio-plot>=1.1.21"
	touch $@

$(NATIVE_STAMP): $(STAMP) $(RUST_SOURCES)
	VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop --release --quiet
	touch $@

$(ENGINE): $(STAMP) $(RUST_SOURCES) Cargo.lock
	cargo build --release -p raidlab-engine
	install -m 755 target/release/raidlab-engine $@

demo: setup
	$(VENV)/bin/raidlab reproduce ssd-raid0-atto --out out/ssd-raid0-atto
	$(VENV)/bin/raidlab reproduce hdd-raid0-atto --out out/hdd-raid0-atto
	$(VENV)/bin/raidlab reproduce ssd-raid-tuning
	@echo
	@echo "Figures: out/ssd-raid0-atto/*.png and out/hdd-raid0-atto/*.png"

test: setup tools lint test-rust test-python

test-rust:
	cargo test --workspace --exclude raidlab-py --profile ci

test-python: setup
	$(PY) -m pytest -q

lint: $(STAMP)
	cargo fmt --all -- --check
	cargo clippy --workspace --profile ci --all-targets -- -D warnings
	$(VENV)/bin/ruff check python tests benches

bench: setup tools
	$(PY) benches/bench_sim.py
	cargo build --release -p raidlab-engine
	$(PY) benches/bench_nbd.py

clean:
	rm -rf $(VENV) target out
