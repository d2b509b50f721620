# The README's commands. `make test` is what CI runs (through .ci/run).
GO ?= go

.PHONY: test check deps lint build quickstart fuzz bench bench-quick bench-bootstrap soak soak-quick

# lakegw_checkplans compares every plan derive/ derives from a parent's
# with iceberg-go's planner, in every test (derive/plan_check.go).
TESTTAGS ?= lakegw_checkplans

test: deps lint
	$(GO) test -race -count=1 -timeout 30m -tags $(TESTTAGS) ./...

# The inner loop: lint and every package's unit tests, without e2e/ (which
# builds the binary and starts real servers).
check: lint
	$(GO) test -race -count=1 -timeout 20m -tags $(TESTTAGS) $$($(GO) list ./... | grep -v '/e2e')

deps:
	bash scripts/install-test-deps.sh

# staticcheck at a fixed version, built by the go command from the module
# proxy (cached after the first run): no install step, same result everywhere.
STATICCHECK ?= $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet -tags $(TESTTAGS) ./...
	$(STATICCHECK) -tags $(TESTTAGS) ./...

build:
	$(GO) build -o bin/lakegw ./cmd/lakegw

quickstart:
	$(GO) run ./cmd/lakegw quickstart

# Fuzzes every Fuzz target of the repository for FUZZTIME each (go test
# -fuzz takes one target at a time): the targets are listed with
# `go test -list`, so a new one is picked up without editing this. `make
# test` (go test ./...) replays each target's seed corpus, testdata/fuzz
# included, without fuzzing.
FUZZTIME ?= 30s
fuzz:
	@set -e; for dir in $$(git grep -l '^func Fuzz' -- '*_test.go' | xargs -n1 dirname | sort -u); do \
		for target in $$($(GO) test -list '^Fuzz' ./$$dir | grep '^Fuzz'); do \
			echo "fuzz ./$$dir $$target for $(FUZZTIME)"; \
			$(GO) test ./$$dir -run '^$$' -fuzz "^$$target$$" -fuzztime $(FUZZTIME); \
		done; \
	done

# Side by side with a real Apache Kafka broker (issue 6; needs Java 17+ and
# Maven, fetches the broker from Maven Central once): prints the Markdown
# table and `ratio <name> <value>` lines; results.md and results.csv land in
# bench-results/. bench-quick: ~200,000 records in under three minutes.
bench-quick:
	$(GO) run ./e2e/bench -records 200000 -out bench-results/quick

# bench: 5 million records in 20 snapshots, then the bootstrap pass, each
# as medians of three passes (about 15 minutes in all).
bench:
	$(GO) run ./e2e/bench -records 5000000 -reps 3 -fresh-samples 200 -fanout-records 200000 -out bench-results/full
	$(MAKE) bench-bootstrap BOOTSTRAP_REPS=3

# bench-bootstrap: a new consumer of a 10-million-row table written in one
# snapshot (issue 20's bootstrap case), against Kafka holding the same
# records; rss_cold_peak_mib is the gateway's peak through the cold pass.
BOOTSTRAP_REPS ?= 1
bench-bootstrap:
	$(GO) run ./e2e/bench -records 10000000 -snapshot-records 10000000 -reps $(BOOTSTRAP_REPS) -java=false -lsm=false -cluster=false -fanout 1 -fresh-samples 5 -out bench-results/bootstrap

# A simulated long life at full speed (issue 11): three tables committing
# as fast as they can, two consumer groups, three restarts each followed by a cold replay;
# prints the Markdown table and `ratio <name> <value>` lines, and writes
# results.md and results.json to soak-results/. Background maintenance is
# on by default; SOAK_FLAGS=-maintain=false for a build without it.
# soak-quick: 600 commits per table (TestSoakQuick runs 300 in `make test`).
SOAK_FLAGS ?=
soak-quick:
	$(GO) run ./e2e/soak -commits 600 -out soak-results/quick $(SOAK_FLAGS)

soak:
	$(GO) run ./e2e/soak -commits 20000 -out soak-results/full $(SOAK_FLAGS)

# Flink (MiniCluster jobs) and the Java kafka-clients consumer against a
# freshly built lakegw: e2e/flink_test.go runs `mvn test` in e2e/flink.
# Needs java 17+ and mvn; fails saying so when they are missing.
.PHONY: e2e-flink
e2e-flink:
	LAKEGW_E2E_FLINK=1 $(GO) test -count=1 -timeout 25m -run '^TestFlink$$' -v ./e2e

# Apache Kafka 4.4's own command-line tools (kafka-topics,
# kafka-consumer-groups, kafka-get-offsets, kafka-cluster, kafka-configs,
# kafka-broker-api-versions, the console producer and consumer) against a
# freshly built lakegw: e2e/kafka_tools_test.go. `make test` runs them too;
# this is the quick way to run only them (needs java 17+ and mvn; the tools
# are fetched from Maven Central once).
.PHONY: e2e-kafka-tools
e2e-kafka-tools:
	bash e2e/kafkatools/kafkatools.sh fetch
	$(GO) test -count=1 -timeout 10m -run '^TestKafkaTools' -v ./e2e
