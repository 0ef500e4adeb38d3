package sidecar_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/persistence"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// TestServersReportJournalLoss: a journal that opens with fewer records
// than its marks file says were committed (what a truncated WAL leaves)
// is reported in GET /v1/servers with the count; a whole one is not.
func TestServersReportJournalLoss(t *testing.T) {
	data := t.TempDir()
	j, err := mcpvisor.OpenJournal(data, mcpvisor.JournalOptions{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := j.Write(context.Background(), persistence.AppendEvent(persistence.EventRecord{Server: "m", Method: "event/test"})); err != nil {
			t.Fatal(err)
		}
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	// As if 15 more events had been committed and then lost with the WAL.
	if err := os.WriteFile(filepath.Join(mcpvisor.JournalDir(data), "MARKS.json"), []byte(`{"event":25,"history":0}`), 0o600); err != nil {
		t.Fatal(err)
	}

	body := serversBody(t, data)
	var out struct {
		Journal *struct {
			Damaged  bool
			Summary  string
			Recovery mcpvisor.JournalRecovery
		} `json:"journal"`
	}
	if err := json.Unmarshal(body, &out); err != nil {
		t.Fatal(err)
	}
	if out.Journal == nil || !out.Journal.Damaged || out.Journal.Recovery.LostEvents != 15 {
		t.Fatalf("GET /v1/servers = %s; want journal.recovery.lostEvents 15", body)
	}
	// Reported once: the next start finds the journal whole.
	var again map[string]json.RawMessage
	if body := serversBody(t, data); json.Unmarshal(body, &again) != nil || again["journal"] != nil {
		t.Errorf("second start: GET /v1/servers = %s; want no journal member", body)
	}
}

// serversBody opens a host on data, serves it, and returns GET /v1/servers.
func serversBody(t *testing.T, data string) []byte {
	t.Helper()
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{Config: &mcpvisor.Config{}, DataDir: data,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer h.Close()
	ts := httptest.NewServer(sidecar.New(h, sidecar.Options{Token: testGatewayToken, AdminToken: testToken, DataDir: data,
		Logger: slog.New(slog.DiscardHandler)}).Handler())
	defer ts.Close()
	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/v1/servers", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/servers: %d %v %s", resp.StatusCode, err, b)
	}
	return b
}
