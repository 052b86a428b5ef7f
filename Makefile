# eds: `make run` serves a demo database; `make test` runs the whole suite.
SHELL := /bin/sh
CARGO ?= cargo
# The test suite's throwaway PostgreSQL cluster (one per checkout).
TEST_PG_DIR ?= /tmp/eds-test-pg-$(shell pwd | sha256sum | cut -c1-16)
export EDS_TEST_PG_DIR := $(TEST_PG_DIR)

.PHONY: run test deps build lint bench fuzz clean-test-cluster

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
# rights, thumbnails, counters); figures and options in the README.
BENCH ?= query
bench: deps
	@scripts/install-bench-tools.sh
	$(CARGO) bench --bench $(BENCH)

# Coverage-guided fuzzing (cargo-fuzz, nightly): every target of fuzz/ in turn,
# FUZZ_SECONDS each; `make fuzz FUZZ_TARGETS=regex` runs one. Not part of `make test`.
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?=
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) scripts/fuzz.sh $(FUZZ_TARGETS)

clean-test-cluster:
	scripts/stop-test-cluster.sh "$(TEST_PG_DIR)"
	rm -rf "$(TEST_PG_DIR)" "$(TEST_PG_DIR).lock"
