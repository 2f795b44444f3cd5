# raidlab: two commands matter. `make demo` sets everything up and runs the headline
# study; `make test` sets everything up and runs every test. `make bench` measures speed.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
NATIVE_STAMP := $(VENV)/.native
# The real-data engine, installed next to the venv's python where raidlab.engine and
# `raidlab create/serve/...` look for it first.
ENGINE := $(VENV)/bin/raidlab-engine
RUST_SOURCES := $(shell find crates -name '*.rs' -o -name Cargo.toml) Cargo.toml Cargo.lock pyproject.toml
# The dev venv's module and engine build with the `ci` profile, as the tests and lints
# do, so `make test` compiles the workspace once, not once with thin LTO and once
# without. `make bench` rebuilds them with `release`, the profile of the wheel.
PROFILE ?= ci
# maturin develop runs pip for the dependencies; PIP_QUIET keeps its chatter out.
# --no-compile below: byte-compiling every module of pandas, numpy and matplotlib (their
# test suites included) at install time is wasted; Python compiles what it imports.
QUIET_PIP := PIP_QUIET=1 PIP_DISABLE_PIP_VERSION_CHECK=1

.PHONY: setup build-deps tools bench-tools demo test test-rust test-python test-docs lint bench clean

# Another apt or dpkg (unattended-upgrades on a fresh machine, a second `make`) may
# hold the package locks: apt-get then waits up to APT_LOCK_WAIT_S seconds instead of
# failing. apt-get waits for dpkg's locks itself (DPkg::Lock::Timeout, apt >= 1.9.11),
# but `apt-get update` does not wait for the package lists' lock (apt 2.6 refuses at
# once, whatever the timeout), so apt_update retries while its error says so.
APT_LOCK_WAIT_S := 600
APT_GET := apt-get -o DPkg::Lock::Timeout=$(APT_LOCK_WAIT_S)
define apt_update
waited=0; \
	until said=$$(LC_ALL=C $(APT_GET) update -qq 2>&1); do \
	  case "$$said" in *"Could not get lock"*) ;; *) echo "$$said" >&2; exit 1;; esac; \
	  [ $$waited -lt $(APT_LOCK_WAIT_S) ] || { echo "$$said" >&2; exit 1; }; \
	  [ $$waited -gt 0 ] || echo "waiting for the apt lists lock (another apt is running)"; \
	  sleep 2; waited=$$((waited + 2)); \
	done; \
	[ -z "$$said" ] || echo "$$said" >&2
endef

# Debian packages, each `command:package` (installed when the command is missing) or
# `pkg-config-module:package` in the LIBS lists (installed when pkg-config lacks the
# module). Installed once; needs root, as on the project's machines and CI.
define apt_missing
	@missing=""; for pair in $(1); do \
	  command -v $${pair%%:*} >/dev/null || missing="$$missing $${pair##*:}"; \
	done; \
	for pair in $(2); do \
	  pkg-config --exists $${pair%%:*} 2>/dev/null || missing="$$missing $${pair##*:}"; \
	done; \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:$$missing"; \
	  $(apt_update) && \
	  DEBIAN_FRONTEND=noninteractive $(APT_GET) install -y -qq $$missing >/dev/null; \
	fi
endef

# What the build itself needs: pkg-config and OpenSSL's headers for the engine's `psk`
# feature (serve --tls-psk). Every build (`make setup`, so `make demo` too) checks it.
BUILD_TOOLS := pkg-config:pkg-config
BUILD_LIBS := openssl:libssl-dev
build-deps:
	$(call apt_missing,$(BUILD_TOOLS),$(BUILD_LIBS))

# Real peers the tests compare against: fio for job semantics, JSON shape and its nbd
# engine; qemu-io (qemu-utils) and nbdcopy (libnbd-bin) as NBD clients of the engine;
# nbdkit as a reference server in the NBD benchmark; headless chromium loads `raidlab
# report`'s HTML in tests/test_report.py.
TOOLS := fio:fio qemu-io:qemu-utils nbdcopy:libnbd-bin nbdkit:nbdkit chromium:chromium
tools: build-deps
	$(call apt_missing,$(TOOLS),)

# What benches/peers/build.sh needs to build DiskSim 4 (its parser) besides gcc and make.
BENCH_TOOLS := bison:bison flex:flex
bench-tools: tools
	$(call apt_missing,$(BENCH_TOOLS),)

# Bytecode is compiled here, once: where PYTHONDONTWRITEBYTECODE is set (CI, this
# project's machines) Python never caches it, and every `raidlab` process would compile
# pandas again (~3 s of CPU) and raidlab itself. Test suites of the dependencies are
# skipped. Python recompiles a module whose source is newer, so this stays right.
setup: $(NATIVE_STAMP)
	@$(PY) -m compileall -q -j 0 python/raidlab

# The engine compiles (CPU) while pip downloads and unpacks (network, disk): on a fresh
# clone the two overlap instead of queueing.
$(STAMP): pyproject.toml | build-deps
	$(PYTHON) -m venv $(VENV)
	cargo build --quiet --profile $(PROFILE) -p raidlab-engine & cargo=$$!; \
	$(QUIET_PIP) $(PY) -m pip install --upgrade pip && \
	$(QUIET_PIP) $(PY) -m pip install --no-compile "maturin>=1.5,<2" "pandas>=2" "matplotlib>=3.7" "typer>=0.12,<0.29" "rich>=13" "pyarrow>=14" "dask[distributed]>=2024.1" "pytest>=7" "ruff>=0.4" "fio-plot>=1.1.21"; \
	pip=$$?; wait $$cargo && exit $$pip
	$(PY) -m compileall -q -j 0 -x '/(tests?|testing)/' $(VENV)/lib >/dev/null || true
	touch $@

# maturin develop installs the package with its console scripts, `raidlab-engine`
# among them (a Python wrapper around the engine inside raidlab._native, what a wheel
# user gets); the standalone binary then goes over that script, in the same recipe so
# the two never race: the tests call the engine hundreds of times, and a binary starts
# in a millisecond where an interpreter takes a hundred.
$(NATIVE_STAMP): $(STAMP) $(RUST_SOURCES)
	@echo "building raidlab._native and raidlab-engine (cargo profile $(PROFILE))"
	$(QUIET_PIP) VIRTUAL_ENV=$(abspath $(VENV)) PATH=$(abspath $(VENV))/bin:$$PATH $(VENV)/bin/maturin develop --profile $(PROFILE) --quiet
	cargo build --quiet --profile $(PROFILE) -p raidlab-engine
	install -m 755 target/$(PROFILE)/raidlab-engine $(ENGINE)
	touch $@

# The headline study's JSON becomes out/report.html (`raidlab report` prints its
# headline: MAPE per role, the worst row).
demo: setup
	@mkdir -p out
	$(VENV)/bin/raidlab reproduce ssd-raid0-atto --out out/ssd-raid0-atto --format json > out/ssd-raid0-atto.json
	$(VENV)/bin/raidlab report out/ssd-raid0-atto.json --out out/report.html
	$(VENV)/bin/raidlab reproduce hdd-raid0-atto --out out/hdd-raid0-atto
	$(VENV)/bin/raidlab reproduce ssd-raid-tuning
	@echo
	@echo "Figures: out/ssd-raid0-atto/*.png and out/hdd-raid0-atto/*.png"
	@echo "Report: out/report.html (open it in a browser; it needs no network)"

test: tools setup lint test-rust test-python test-docs

test-rust:
	cargo test --quiet --workspace --exclude raidlab-py --profile ci

# The install test (`-m install`: a clean venv and a pip install of the repository,
# network and disk more than CPU) runs beside the rest of the suite, so it overlaps
# them instead of adding its minutes; its output follows theirs. Plain `pytest`
# deselects it (pyproject.toml).
# Every shell block of README.md and docs/ run as a script, transcripts checked line
# by line (tests/test_docs_run.py): the docs reproduce studies, so this takes minutes.
test-docs: setup
	$(PY) -m pytest -q -m docs tests/test_docs_run.py

test-python: setup
	@log=$$(mktemp); \
	echo "$(PY) -m pytest -q -m install (in the background)"; \
	$(PY) -m pytest -q -m install >$$log 2>&1 & install=$$!; \
	echo "$(PY) -m pytest -q"; \
	$(PY) -m pytest -q; suite=$$?; \
	wait $$install; installed=$$?; \
	echo "$(PY) -m pytest -q -m install:"; cat $$log; rm -f $$log; \
	[ $$suite -eq 0 ] && [ $$installed -eq 0 ]

lint: $(STAMP)
	cargo fmt --all -- --check
	cargo clippy --quiet --workspace --profile ci --all-targets -- -D warnings
	$(VENV)/bin/ruff check --quiet python tests benches

# Benchmarks measure the shipped profile: the module and engine are rebuilt with
# `release` (thin LTO, one codegen unit) first.
bench: bench-tools
	rm -f $(NATIVE_STAMP)
	$(MAKE) --no-print-directory setup PROFILE=release
	$(PY) benches/bench_sim.py
	$(PY) benches/bench_nbd.py
	$(PY) benches/bench_cli.py
	$(PY) benches/bench_sweep.py
	$(PY) benches/bench_peers.py

clean:
	rm -rf $(VENV) target out
