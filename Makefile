# eds: `make run` serves a demo database; `make test` runs the whole suite.
SHELL := /bin/sh
CARGO ?= cargo
# The test suite's throwaway PostgreSQL cluster (one per checkout).
TEST_PG_DIR ?= /tmp/eds-test-pg-$(shell pwd | sha256sum | cut -c1-16)
export EDS_TEST_PG_DIR := $(TEST_PG_DIR)

.PHONY: run test deps build lint bench chaos soak fuzz docs clean-test-cluster

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release

run: build
	@scripts/run-demo.sh

lint: deps
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets -- -D warnings

# The throwaway cluster is removed afterwards: every checkout makes its own, and they add up.
test: lint
	@scripts/fetch-node-tools.sh
	$(CARGO) test --lib --bins --tests; status=$$?; $(MAKE) --no-print-directory clean-test-cluster; exit $$status

# One benchmark, with the tools it drives: `make bench BENCH=query` (or peer, reproject,
# rights, thumbnails, counters, batch, changes, graphql); figures and options in the guide (docs/guide/src/performance/).
BENCH ?= query
bench: deps
	@scripts/install-bench-tools.sh
	$(CARGO) bench --bench $(BENCH)

# The crash and fault tests at length (`make test` runs them for 12 s each): kills, PostgreSQL
# restarts and ended connections under load, one after another, each on a PostgreSQL cluster
# of its own; figures on stderr.
CHAOS_SECONDS ?= 300
chaos: deps
	EDS_CHAOS_SECONDS=$(CHAOS_SECONDS) $(CARGO) test --test chaos -- --nocapture --test-threads=1

# Half an hour of mixed load against one process; a table per minute on stderr.
SOAK_SECONDS ?= 1800
soak: deps
	EDS_SOAK_SECONDS=$(SOAK_SECONDS) $(CARGO) test --test soak -- --ignored --nocapture; \
	status=$$?; $(MAKE) --no-print-directory clean-test-cluster; exit $$status

# Coverage-guided fuzzing (cargo-fuzz, nightly): every target of fuzz/ in turn,
# FUZZ_SECONDS each; `make fuzz FUZZ_TARGETS=regex` runs one. Not part of `make test`.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?=
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh $(FUZZ_TARGETS)

# The guide (docs/guide/, mdBook) built into docs/guide/book/, which `eds serve`
# serves at /guide/; mdBook is installed from crates.io when missing.
MDBOOK_VERSION ?= 0.5.4
MDBOOK := $(or $(CARGO_HOME),$(HOME)/.cargo)/bin/mdbook
docs:
	@$(MDBOOK) --version 2>/dev/null | grep -qx 'mdbook v$(MDBOOK_VERSION)' || \
		$(CARGO) install mdbook --locked --version $(MDBOOK_VERSION) --no-default-features --features search
	$(MDBOOK) build docs/guide

clean-test-cluster:
	scripts/stop-test-cluster.sh "$(TEST_PG_DIR)"
	rm -rf "$(TEST_PG_DIR)" "$(TEST_PG_DIR).lock"
