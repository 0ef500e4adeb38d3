package gateway_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/internal/otlptest"
)

// tracerProvider exports every span to rc as it ends.
func tracerProvider(t *testing.T, rc *otlptest.Receiver) *sdktrace.TracerProvider {
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(rc.URL()+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	return tp
}

// rpcWith is rpc with extra request headers.
func (c *httpClient) rpcWith(id int, method, params string, header map[string]string) frame {
	c.t.Helper()
	resp := c.do(http.MethodPost, request(id, method, params), header)
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		c.t.Fatalf("%s: status %d: %s", method, resp.StatusCode, b)
	}
	if resp.Header.Get("Content-Type") == "text/event-stream" {
		var last frame
		for f := range sseEvents(resp.Body) {
			last = f
		}
		return last
	}
	return c.readFrame(resp.Body)
}

// One trace runs from the agent (its traceparent, as a W3C header or in
// the call's _meta) through the gateway into the server: the gateway's
// server span is the agent's child, the host's call span the gateway's,
// the call's phases (queue wait, send, server time) the call span's, and
// the server sees the call span as its parent. No argument reaches any
// span of the trace.
func TestTraceRunsFromTheAgentThroughTheHostToTheServer(t *testing.T) {
	rc := otlptest.NewReceiver(t)
	tp := tracerProvider(t, rc)
	f := newFixture(t, gateway.Options{}, func(o *mcpvisor.Options) {
		o.TracerProvider, o.AlwaysOn = tp, []string{"a"}
	})
	c := newHTTP(t, f)
	c.initialize()

	const secret = "sk-live-DO-NOT-TRACE-7f3a9c"
	args := `{"token":"` + secret + `","note":"` + secret + `"}`
	for i, tc := range []struct {
		name   string
		header map[string]string
		meta   string
		trace  string
		parent string
	}{
		{name: "header", trace: "4bf92f3577b34da6a3ce929d0e0e4736", parent: "00f067aa0ba902b7",
			header: map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},
		{name: "_meta", trace: "0af7651916cd43dd8448eb211c80319c", parent: "b7ad6b7169203331",
			meta: `,"_meta":{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := c.rpcWith(10+i, "tools/call", `{"name":"mcp__a__meta","arguments":`+args+tc.meta+`}`, tc.header)
			if resp.Error != nil {
				t.Fatalf("tools/call: %+v", resp.Error)
			}
			var seen map[string]string
			if err := json.Unmarshal([]byte(decode[callResult](t, resp.Result).text()), &seen); err != nil {
				t.Fatalf("the server's _meta: %v", err)
			}
			// traceparent: 00-<trace id>-<parent span id>-<flags>
			parts := strings.Split(seen["traceparent"], "-")
			if len(parts) != 4 || parts[1] != tc.trace {
				t.Fatalf("the server saw traceparent %q, want trace %s", seen["traceparent"], tc.trace)
			}
			if err := tp.ForceFlush(context.Background()); err != nil {
				t.Fatal(err)
			}
			inTrace := func(name string) otlptest.Span {
				return rc.Wait(t, func(s otlptest.Span) bool {
					return s.Name == name && hex.EncodeToString(s.TraceId) == tc.trace
				})
			}
			id := func(s otlptest.Span) string { return hex.EncodeToString(s.SpanId) }
			parent := func(s otlptest.Span) string { return hex.EncodeToString(s.ParentSpanId) }

			// The gateway's span and the host's share the name: the kind tells.
			named := func(kind tracepb.Span_SpanKind) otlptest.Span {
				return rc.Wait(t, func(s otlptest.Span) bool {
					return s.Name == "tools/call mcp__a__meta" && hex.EncodeToString(s.TraceId) == tc.trace && s.Kind == kind
				})
			}
			inbound, call := named(tracepb.Span_SPAN_KIND_SERVER), named(tracepb.Span_SPAN_KIND_CLIENT)
			if got := parent(inbound); got != tc.parent {
				t.Errorf("the gateway's span's parent = %s, want the agent's %s", got, tc.parent)
			}
			if got := parent(call); got != id(inbound) {
				t.Errorf("the call span's parent = %s, want the gateway's span %s", got, id(inbound))
			}
			if got := id(call); got != parts[2] {
				t.Errorf("the server's parent span = %s, want the call span %s", parts[2], got)
			}
			if call.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR || inbound.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
				t.Errorf("status: call %v, gateway %v", call.Status, inbound.Status)
			}
			for k, v := range map[string]string{"mcp.method.name": "tools/call", "gen_ai.tool.name": "meta",
				"gen_ai.operation.name": "execute_tool", "mcpvisor.server": "a", "mcpvisor.outcome": "ok"} {
				if got := call.Attr(k); got != v {
					t.Errorf("attribute %s = %q, want %q (all: %v)", k, got, v, call.Attributes)
				}
			}
			if got := inbound.Attr("gen_ai.tool.name"); got != "mcp__a__meta" {
				t.Errorf("the gateway's span names tool %q", got)
			}
			// The call's phases, in order, within the call.
			var last uint64
			for _, name := range []string{"queue wait", "send", "server time"} {
				ph := inTrace(name)
				if parent(ph) != id(call) {
					t.Errorf("%s: parent %s, want the call span %s", name, parent(ph), id(call))
				}
				if ph.StartTimeUnixNano < call.StartTimeUnixNano || ph.EndTimeUnixNano > call.EndTimeUnixNano ||
					ph.StartTimeUnixNano < last {
					t.Errorf("%s [%d, %d] is out of order in the call [%d, %d]", name, ph.StartTimeUnixNano,
						ph.EndTimeUnixNano, call.StartTimeUnixNano, call.EndTimeUnixNano)
				}
				last = ph.EndTimeUnixNano
			}
			for _, s := range rc.Spans() {
				if hex.EncodeToString(s.TraceId) != tc.trace {
					continue
				}
				raw, err := proto.Marshal(s.Span)
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains(raw, []byte(secret)) {
					t.Errorf("an argument reached span %q: %v", s.Name, s)
				}
			}
		})
	}
	// The server's start is a trace of its own: spawn, then handshake.
	start := rc.Wait(t, func(s otlptest.Span) bool { return s.Name == "server start a" })
	if start.Attr("mcpvisor.state") != "ready" || len(start.ParentSpanId) != 0 {
		t.Errorf("server start: state %q, parent %x", start.Attr("mcpvisor.state"), start.ParentSpanId)
	}
	for _, name := range []string{"spawn", "handshake"} {
		ph := rc.Wait(t, func(s otlptest.Span) bool { return s.Name == name && bytes.Equal(s.TraceId, start.TraceId) })
		if !bytes.Equal(ph.ParentSpanId, start.SpanId) {
			t.Errorf("%s is not a phase of the server's start", name)
		}
	}
}
