# The README's commands. `make test` is what CI runs (through .ci/run).
GO ?= go

.PHONY: test deps lint build quickstart fuzz

test: deps lint
	$(GO) test -race -count=1 ./...

deps:
	bash scripts/install-test-deps.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...

build:
	$(GO) build -o bin/lakegw ./cmd/lakegw

quickstart:
	$(GO) run ./cmd/lakegw quickstart

# A longer fuzzing run than the seed corpus CI replays.
fuzz:
	$(GO) test ./protocol -run '^$$' -fuzz FuzzParseRequest -fuzztime 2m
