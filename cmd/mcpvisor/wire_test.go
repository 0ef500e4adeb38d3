package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// openConfigHost opens a Host on the config file cfg, as an embedder would,
// and waits for its enabled servers.
func openConfigHost(t *testing.T, cfg string) *mcpvisor.Host {
	t.Helper()
	c, err := mcpvisor.LoadConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: c, DataDir: t.TempDir(), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if err := h.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return h
}

// The CLI's --json is the embedder's json.Marshal: tools byte for byte
// (once compacted), status and call results with the same members.
func TestJSONIsTheRootPackagesJSON(t *testing.T) {
	cfg := writeConfig(t, `{"mcpServers": {
	  "notes": {"command": "NOTES"},
	  "m": {"command": "MCPTEST", "args": ["-bad-schema"]}
	}}`)
	h := openConfigHost(t, cfg)

	out, errOut, code := runCLI(t, "tools", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("tools --json: exit %d: %s", code, errOut)
	}
	var got bytes.Buffer
	if err := json.Compact(&got, []byte(out)); err != nil {
		t.Fatalf("tools --json is not JSON: %v\n%s", err, out)
	}
	want, err := json.Marshal(h.Tools())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want) {
		t.Errorf("tools --json:\n%s\nwant json.Marshal(h.Tools()):\n%s", got.Bytes(), want)
	}

	out, errOut, code = runCLI(t, "status", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, errOut)
	}
	var sts []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(out), &sts); err != nil || len(sts) != 2 {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	b, _ := json.Marshal(h.Status())
	var wantSts []map[string]json.RawMessage
	_ = json.Unmarshal(b, &wantSts)
	for i := range wantSts {
		if g, w := slices.Sorted(maps.Keys(sts[i])), slices.Sorted(maps.Keys(wantSts[i])); !slices.Equal(g, w) {
			t.Errorf("status --json %d has %v, want %v", i, g, w)
		}
	}

	out, errOut, code = runCLI(t, "call", "--config", cfg, "mcp__m__structured", "--json")
	if code != 0 {
		t.Fatalf("call --json: exit %d: %s", code, errOut)
	}
	var res sidecar.ResultView
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("call --json: %v\n%s", err, out)
	}
	var sc bytes.Buffer
	_ = json.Compact(&sc, res.JSON)
	if res.Type != mcpvisor.ResultJSON || sc.String() != `{"x":1}` || res.Wire != `{"x":1}` || len(res.Content) == 0 {
		t.Errorf("call --json = %s", out)
	}
}
