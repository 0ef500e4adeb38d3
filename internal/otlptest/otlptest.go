// Package otlptest is an OTLP/HTTP receiver on loopback for tests: it
// takes POST /v1/traces and /v1/metrics (protobuf, gzip or not) as a
// collector does and keeps the spans, with their resource, and the
// metrics, for the test to read.
//
//	rc := otlptest.NewReceiver(t)
//	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rc.URL())
//	... make spans ...
//	span := rc.Wait(t, func(s otlptest.Span) bool { return s.Name == "tools/call mcp__a__echo" })
package otlptest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	colmetricpb "go.opentelemetry.io/proto/otlp/collector/metrics/v1"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	metricpb "go.opentelemetry.io/proto/otlp/metrics/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one received span and the service.name of its resource.
type Span struct {
	*tracepb.Span
	Service string
}

// Attr is the string value of the span's attribute key, "" if absent.
func (s Span) Attr(key string) string {
	for _, kv := range s.Attributes {
		if kv.Key == key {
			return kv.Value.GetStringValue()
		}
	}
	return ""
}

// Receiver collects the spans exported to it. Its methods are safe for
// concurrent use.
type Receiver struct {
	srv     *httptest.Server
	mu      sync.Mutex
	spans   []Span
	metrics []*metricpb.Metric
	arrived chan struct{} // closed and replaced when spans or metrics arrive
}

// NewReceiver starts a receiver, closed when the test ends.
func NewReceiver(t testing.TB) *Receiver {
	rc := &Receiver{arrived: make(chan struct{})}
	rc.srv = httptest.NewServer(http.HandlerFunc(rc.serve))
	t.Cleanup(rc.srv.Close)
	return rc
}

// URL is the receiver's base URL: OTEL_EXPORTER_OTLP_ENDPOINT, to which an
// exporter adds /v1/traces.
func (rc *Receiver) URL() string { return rc.srv.URL }

func (rc *Receiver) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/traces" && r.URL.Path != "/v1/metrics" {
		http.NotFound(w, r)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.URL.Path == "/v1/metrics" {
		rc.serveMetrics(w, b)
		return
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		service := ""
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				service = kv.Value.GetStringValue()
			}
		}
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				rc.spans = append(rc.spans, Span{Span: s, Service: service})
			}
		}
	}
	close(rc.arrived)
	rc.arrived = make(chan struct{})
	rc.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// Spans are the spans received so far.
func (rc *Receiver) Spans() []Span {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]Span(nil), rc.spans...)
}

// Wait returns the first span received for which match is true, waiting for
// it up to 30 s; the test fails without one.
func (rc *Receiver) Wait(t testing.TB, match func(Span) bool) Span {
	t.Helper()
	return waitFor(t, rc, func() []Span { return rc.spans }, match, "span")
}

// waitFor returns the first of the items list gives (read under rc.mu)
// for which match is true, waiting up to 30 s for one to arrive.
func waitFor[T any](t testing.TB, rc *Receiver, list func() []T, match func(T) bool, what string) T {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		rc.mu.Lock()
		arrived := rc.arrived
		for _, x := range list() {
			if match(x) {
				rc.mu.Unlock()
				return x
			}
		}
		n := len(list())
		rc.mu.Unlock()
		select {
		case <-arrived:
		case <-timeout:
			t.Fatalf("otlptest: no matching %s among the %d received in 30 s", what, n)
			var zero T
			return zero
		}
	}
}

func (rc *Receiver) serveMetrics(w http.ResponseWriter, b []byte) {
	var req colmetricpb.ExportMetricsServiceRequest
	if err := proto.Unmarshal(b, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rm := range req.ResourceMetrics {
		for _, sm := range rm.ScopeMetrics {
			rc.metrics = append(rc.metrics, sm.Metrics...)
		}
	}
	close(rc.arrived)
	rc.arrived = make(chan struct{})
	rc.mu.Unlock()
	out, _ := proto.Marshal(&colmetricpb.ExportMetricsServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// WaitMetric returns the first metric received for which match is true,
// waiting for it up to 30 s; the test fails without one.
func (rc *Receiver) WaitMetric(t testing.TB, match func(*metricpb.Metric) bool) *metricpb.Metric {
	t.Helper()
	return waitFor(t, rc, func() []*metricpb.Metric { return rc.metrics }, match, "metric")
}
