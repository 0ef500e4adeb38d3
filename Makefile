# mcpvisor: make is the front door.
GO      ?= go
BIN     := bin
SERVERS := notes mcptest

.PHONY: all build run test test-short lint fmt vet bench bench-quick clean

all: build

build:
	$(GO) build -o $(BIN)/mcpvisor ./cmd/mcpvisor
	@for s in $(SERVERS); do $(GO) build -o $(BIN)/$$s ./examples/servers/$$s || exit 1; done

# Run mcpvisor on the bundled example config, supervising in the foreground.
run: build
	$(BIN)/mcpvisor run --config examples/mcp.json --log-level info

# vet + the race-enabled test suite: what CI runs.
test: vet
	$(GO) test -race -count=1 -timeout 20m ./...

test-short:
	$(GO) test -count=1 ./...

vet:
	$(GO) vet ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

lint: vet
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	@if command -v staticcheck >/dev/null; then staticcheck ./...; fi

# Go micro-benchmarks of the hot path (end-to-end harness: bench/).
bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

clean:
	rm -rf $(BIN) .mcpvisor
