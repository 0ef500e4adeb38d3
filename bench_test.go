package mcpvisor_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// The hot path's cost against its floor: a raw pipe round trip to the same
// server binary (write one tools/call line, read one line back), with no
// host in between. The bench/ harness compares against peer SDKs too.

const initializeLine = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"0"}}}` + "\n"

// rawPipe starts the server binary with plain pipes and completes the
// handshake by hand: the floor every host is compared with.
func rawPipe(b *testing.B) (io.Writer, *bufio.Reader) {
	cmd := exec.Command(bin.mcptest)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { stdin.Close(); cmd.Wait() })
	r := bufio.NewReaderSize(stdout, 64<<10)
	io.WriteString(stdin, initializeLine)
	if _, err := r.ReadSlice('\n'); err != nil {
		b.Fatal(err)
	}
	io.WriteString(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	return stdin, r
}

func BenchmarkRawPipe(b *testing.B) {
	stdin, r := rawPipe(b)
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for i := range b.N {
		fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"n":1}}}`+"\n", i+1)
		if _, err := r.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
}

func benchHost(b *testing.B, journal mcpvisor.JournalOptions) *mcpvisor.Host {
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{
		Config:  &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{mcptest("b")}},
		DataDir: b.TempDir(),
		Logger:  slog.New(slog.DiscardHandler),
		Journal: journal,
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	if err := h.WaitReady(context.Background()); err != nil {
		b.Fatal(err)
	}
	return h
}

func BenchmarkHostCall(b *testing.B) {
	h := benchHost(b, mcpvisor.JournalOptions{})
	ctx := context.Background()
	args := json.RawMessage(`{"n":1}`)
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for range b.N {
		if _, err := h.Call(ctx, "mcp__b__echo", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkHostCallCancellable is BenchmarkHostCall with no history and a
// context that can end, as a server in front of the host (the gateway, the
// sidecar) passes one: what watching it costs a call.
func BenchmarkHostCallCancellable(b *testing.B) {
	h := benchHost(b, mcpvisor.JournalOptions{NoCallHistory: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := json.RawMessage(`{"n":1}`)
	b.ReportAllocs()
	b.ResetTimer()
	defer reportCPU(b)()
	for range b.N {
		if _, err := h.Call(ctx, "mcp__b__echo", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRawPipeParallel is the floor for concurrent callers: one pipe,
// requests pipelined by a writer, responses read by one reader.
func BenchmarkRawPipeParallel(b *testing.B) {
	stdin, r := rawPipe(b)
	w := bufio.NewWriter(stdin)
	var mu sync.Mutex
	waiting := map[int64]chan struct{}{}
	go func() {
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			var m struct{ ID int64 }
			json.Unmarshal(line, &m)
			mu.Lock()
			ch := waiting[m.ID]
			delete(waiting, m.ID)
			mu.Unlock()
			if ch != nil {
				close(ch)
			}
		}
	}()
	var next int64
	b.SetParallelism(32) // 64 callers on 2 cores
	b.ResetTimer()
	defer reportCPU(b)()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ch := make(chan struct{})
			mu.Lock()
			next++
			id := next
			waiting[id] = ch
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"n":1}}}`+"\n", id)
			w.Flush()
			mu.Unlock()
			<-ch
		}
	})
}

// reportCPU reports the CPU time the benchmark's process used per call
// (cpu-ns/op), the host's and the callers' (not the server's), from now
// until the function it returns is called: the measure of CPU per call
// that BenchmarkRawPipeParallel is the floor of.
func reportCPU(b *testing.B) func() {
	cpu := testenv.ReportCPU(b)
	writes, wok := writeCalls()
	return func() {
		cpu()
		if end, ok2 := writeCalls(); wok && ok2 && b.N > 0 {
			b.ReportMetric(float64(end-writes)/float64(b.N), "writes/op")
		}
	}
}

// writeCalls is how many write system calls this process has made, where
// the system says (Linux's /proc/self/io).
func writeCalls() (int64, bool) {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "syscw: "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n, err == nil
		}
	}
	return 0, false
}

// BenchmarkHostCallParallel is 64 callers on one server, every call
// journaled (the default) and, for what that costs, none.
func BenchmarkHostCallParallel(b *testing.B) {
	b.Run("history", func(b *testing.B) { benchHostCallParallel(b, mcpvisor.JournalOptions{}) })
	b.Run("no-history", func(b *testing.B) { benchHostCallParallel(b, mcpvisor.JournalOptions{NoCallHistory: true}) })
}

func benchHostCallParallel(b *testing.B, journal mcpvisor.JournalOptions) {
	h := benchHost(b, journal)
	ctx := context.Background()
	args := json.RawMessage(`{"n":1}`)
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	done := reportCPU(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := h.Call(ctx, "mcp__b__echo", args); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The calls' records are the journal's work too: count the CPU until
	// they are committed.
	if err := h.Journal().Write(ctx); err != nil {
		b.Fatal(err)
	}
	done()
}

// BenchmarkSessionTools is a model round's tool listing on a host of 100
// servers × 50 tools, for a session granted 3 of them (the lazy-loading
// case) and for one granted all 100.
func BenchmarkSessionTools(b *testing.B) {
	const servers, tools = 100, 50
	var cfg mcpvisor.Config
	var all []string
	for i := range servers {
		name := fmt.Sprintf("s%03d", i)
		all = append(all, name)
		// mcptest has a dozen tools of its own; -tools adds the rest.
		cfg.Servers = append(cfg.Servers, mcptest(name, "-tools", "38"))
	}
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{Config: &cfg, DataDir: b.TempDir(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { h.Close() })
	ctx := context.Background()
	if err := h.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	if n := len(h.Tools()); n < servers*tools {
		b.Fatalf("%d tools, want at least %d", n, servers*tools)
	}
	for _, tc := range []struct {
		name   string
		groups []string
	}{{"granted-3", all[:3]}, {"granted-100", all}} {
		s := h.Session("bench-"+tc.name, "")
		if err := s.Activate(ctx, tc.groups...); err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if len(s.Tools()) == 0 {
					b.Fatal("no tools")
				}
			}
		})
	}
}

// BenchmarkHostCallTracing is BenchmarkHostCall with tracing off (the
// default: no provider set, the stage passes the call through) and on (an
// SDK provider that samples every call, spans dropped by the exporter).
func BenchmarkHostCallTracing(b *testing.B) {
	for _, tc := range []struct {
		name string
		tp   trace.TracerProvider
	}{
		{"off", nil},
		{"sdk", sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(discardSpans{})))},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{
				Config:         &mcpvisor.Config{Servers: []mcpvisor.ServerConfig{mcptest("b")}},
				DataDir:        b.TempDir(),
				Logger:         slog.New(slog.DiscardHandler),
				TracerProvider: tc.tp,
			})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { h.Close() })
			ctx := context.Background()
			if err := h.WaitReady(ctx); err != nil {
				b.Fatal(err)
			}
			args := json.RawMessage(`{"n":1}`)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Call(ctx, "mcp__b__echo", args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// discardSpans is an exporter that keeps nothing: the benchmark measures
// making spans, not sending them.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }
