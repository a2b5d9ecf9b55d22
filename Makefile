# sparkgate — make help lists the targets.
SHELL := /bin/bash
GO ?= go
BIN := bin/sparkgate
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
FUZZTIME ?= 20s

.PHONY: help build run test e2e bench fuzz lint check setup clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-8s %s\n", $$1, $$2}'

build: ## build bin/sparkgate
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN) ./cmd/sparkgate

run: build ## run the gateway in the safe local mode (or CONFIG=file)
	./$(BIN) $(if $(CONFIG),-config $(CONFIG))

# gotestsum runs go test and ends its output with every failed test's own
# output, so the tail of a CI log says what failed and why.
GOTESTSUM := bin/gotestsum
$(GOTESTSUM):
	GOBIN=$(CURDIR)/bin $(GO) install gotest.tools/gotestsum@v1.13.0

test: $(GOTESTSUM) ## unit tests with the race detector
	$(GO) vet ./...
	$(GOTESTSUM) --format pkgname-and-test-fails -- -race -count=1 ./...

setup: ## install real Spark, Chromium, the OIDC provider, YARN, etcd, kube-apiserver and helm for e2e (idempotent)
	scripts/setup.sh

# The discovery package's integration test starts a real driver from the
# first Spark version setup installs; unit test runs skip it (no Spark), so
# the e2e target runs it and fails if it skipped anyway.
E2E_SPARK ?= $(firstword $(shell sed -n 's/.*SPARK_VERSIONS:-\([^}]*\)}.*/\1/p' scripts/setup-spark.sh))

e2e: setup build $(GOTESTSUM) ## end-to-end suite against real Spark, a real IdP and headless Chromium
	mkdir -p e2e/out
	SPARKGATE_SPARK_HOME=$(CURDIR)/.cache/spark/$(E2E_SPARK) $(GOTESTSUM) --format standard-verbose -- -count=1 -run '^TestIntegration' ./proxy/discovery/ 2>&1 | tee e2e/out/integration.log; exit $${PIPESTATUS[0]}
	! grep -- '--- SKIP' e2e/out/integration.log
	$(GOTESTSUM) --format standard-verbose --jsonfile e2e/out/e2e.json -- -tags e2e -count=1 -timeout 60m ./e2e/ 2>&1 | tee e2e/out/e2e.log; exit $${PIPESTATUS[0]}

bench: build ## benchmarks: Go benchmarks and a wrk load test (figures in bench/out/)
	scripts/bench.sh

fuzz: ## run every fuzz target for FUZZTIME each
	scripts/fuzz.sh $(FUZZTIME)

lint: ## golangci-lint (installed into bin/ on first use)
	test -x bin/golangci-lint || GOBIN=$(CURDIR)/bin $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@v2.15.0
	bin/golangci-lint run --build-tags e2e ./...

# setup first: unit tests use what it installs too (auth's redis-server).
check: setup lint test e2e ## everything CI runs: lint, vet, unit tests, e2e

clean: ## remove build output (keeps the .cache of Spark and friends)
	rm -rf bin e2e/out bench/out
