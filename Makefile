# mcpvisor: make is the front door.
GO      ?= go
BIN     := bin
SERVERS := notes mcptest ssh

.PHONY: all build run test test-short lint fmt vet bench bench-quick bench-micro bench-search clean consumer

all: build

build:
	$(GO) build -buildvcs=auto -o $(BIN)/mcpvisor ./cmd/mcpvisor
	@for s in $(SERVERS); do $(GO) build -o $(BIN)/$$s ./examples/servers/$$s || exit 1; done

# Run mcpvisor on the bundled example config, supervising in the foreground.
run: build
	$(BIN)/mcpvisor run --config examples/mcp.json --log-level info

# vet + the race-enabled test suite: what CI runs.
test: vet peers
	$(GO) test -race -count=1 -timeout 20m ./...

# mcpvisor as a user's module gets it: a module zip of the committed HEAD
# from a file:// proxy, required with no replace by examples/embed (built,
# vetted and run against the notes server) and by a program that also links
# upstream protoactor-go. See scripts/consumer.sh.
consumer:
	bash scripts/consumer.sh

test-short:
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

# The third-party MCP servers the tests drive: installs, once, the pinned
# @modelcontextprotocol/server-everything and Node.js 22 from npm into
# .cache/peers (a no-op when present). Without npm or the registry it says
# so and succeeds; the tests that need the peers then skip. See
# internal/peers.
.PHONY: peers
peers:
	@bash scripts/peers.sh
	@bash scripts/inspector.sh

# The official MCP conformance suite: installs Node.js 22 and the two pinned
# runners (0.1.16, 0.2.0-alpha.12) from npm into .cache/conformance once, then
# runs the client sets against the host's HTTP transport, one scenario at a
# time: 2025-11-25 with 0.1.16 (conformance/expected-failures.yml) and the
# 2026-07-28 requirement set with 0.2.0-alpha.12
# (conformance/expected-failures-2026-07-28.yml); then the 0.1.16 server suite
# against the gateway fronting server-everything
# (conformance/expected-failures-server.yml). CONFORMANCE_SETS and
# CONFORMANCE_SCENARIOS narrow the client runs. See conformance/README.md.
.PHONY: conformance
conformance:
	bash conformance/run.sh

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@if command -v staticcheck >/dev/null; then staticcheck ./...; fi

# The load-test harness (bench/, a module of its own): every scenario, with
# the raw pipe and the peer SDK clients in the same run. Writes the dated
# report, its chart and the JSON records to bench/results/ (about four minutes, most of it the 10,000-server HTTP attempt).
bench: bench-peers
	cd bench && $(GO) build -o bin/ ./cmd/mcpbench ./cmd/echoserver && bin/mcpbench -server bin/echoserver -out results

# The harness at a tenth of the size (under 2 minutes, for CI); its report
# goes to bench/results/quick/, which git ignores.
bench-quick: bench-peers
	cd bench && $(GO) run ./cmd/mcpbench -quick -out results/quick

# The peer gateways of the gateway-peers scenario: installs, once, the
# pinned supergateway and mcp-proxy from npm into .cache/bench-peers, run on
# the Node.js 22 of `make peers` (a no-op when present). Without npm or the
# registry it says so and succeeds; the scenario then skips them.
.PHONY: bench-peers
bench-peers:
	@bash bench/scripts/peers.sh

# Go micro-benchmarks of the hot path, next to the code.
bench-micro:
	$(GO) test -run '^$$' -bench . -benchmem ./...

# Tool search on the real tool corpus: latency, index memory and hit@5
# (BenchmarkCorpusSearch), and what embedders add to the words
# (BenchmarkCorpusFusion: random indexing, and the GloVe vectors
# scripts/glove.sh installs; BenchmarkCorpusFusionUSE: the Universal
# Sentence Encoder scripts/use.sh installs, served as an OpenAI-compatible
# endpoint). Installs are once, into .cache/; the first USE run embeds the
# corpus in about 8 minutes.
.PHONY: bench-search
bench-search:
	@bash scripts/glove.sh
	@bash scripts/use.sh
	$(GO) test -run '^$$' -bench 'CorpusFusion' -benchtime 1x -timeout 60m ./internal/toolsearch/
	$(GO) test -run '^$$' -bench 'CorpusSearch' ./internal/toolsearch/

clean:
	rm -rf $(BIN) .mcpvisor
