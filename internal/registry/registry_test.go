package registry

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// unstarted records the servers Load gave an authorizer without starting.
type unstarted struct{ names []string }

func newRegistry(t *testing.T) (*Registry, *unstarted, *secrets.Store) {
	t.Helper()
	sec, err := secrets.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	store, err := persistence.Open(t.TempDir(), persistence.Options{MaintenanceInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	j := actors.NewJournal(store, actors.JournalOptions{}, nil)
	rt := actors.New(actors.Options{})
	t.Cleanup(func() {
		_ = rt.Close(context.Background())
		_ = j.Close()
		_ = store.Close()
	})
	h := &unstarted{}
	specs := Specs{Authorize: func(spec *actors.ServerSpec, _ bool) error {
		if !slices.Contains(h.names, spec.Name) {
			h.names = append(h.names, spec.Name)
		}
		return nil
	}}
	return New(j, sec, rt, specs, nil), h, sec
}

func server(name string) config.Server {
	return config.Server{Name: name, Type: "stdio", Command: "true", Enabled: true}
}

// Load: the file's servers first in its order, then API rows by age; a
// config row the file dropped is deleted; an enable set by the API
// outlives a restart while the file's entry is unchanged; Only leaves
// the others unstarted.
func TestLoad(t *testing.T) {
	r, h, sec := newRegistry(t)
	ctx := context.Background()
	if err := r.Put(ctx, server("c"), persistence.OriginAPI); err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{Servers: []config.Server{server("b"), server("gone"), server("a")}}
	specs, err := r.Load(ctx, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(specs); got != "b gone a c" {
		t.Fatalf("specs = %s", got)
	}
	if err := r.SetEnabled(ctx, "a", false); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"c", "gone"} {
		if err := sec.Set(name, map[string]string{"K": "v"}); err != nil {
			t.Fatal(err)
		}
	}
	h.names = nil
	cfg.Servers = []config.Server{server("b"), server("a")}
	if specs, err = r.Load(ctx, cfg, []string{"a", "c"}); err != nil {
		t.Fatal(err)
	}
	if got := names(specs); got != "a c" {
		t.Fatalf("specs = %s", got)
	}
	if !slices.Contains(h.names, "b") {
		t.Errorf("authorized = %q, want b, which Load leaves unstarted, among them", h.names)
	}
	if _, ok := sec.Lookup("gone", "K"); ok {
		t.Error("the secrets of a server dropped from the file are kept")
	}
	if _, ok := sec.Lookup("c", "K"); !ok {
		t.Error("the secrets of a registered server were dropped")
	}
	if _, ok, _ := r.Row("gone"); ok {
		t.Error("the row of a server dropped from the file is still there")
	}
	rec, ok, err := r.Row("a")
	if err != nil || !ok || rec.Enabled || !rec.EnabledByAPI {
		t.Fatalf("row a = %+v, %v, %v: want disabled by the API", rec, ok, err)
	}
	sc, err := Config(rec)
	if err != nil || sc.Enabled || sc.Command != "true" {
		t.Fatalf("Config = %+v, %v", sc, err)
	}
}

// SetEnabled of an unknown server fails with actors.ErrUnknownServer;
// Delete removes the row.
func TestSetEnabledDelete(t *testing.T) {
	r, _, _ := newRegistry(t)
	ctx := context.Background()
	if err := r.SetEnabled(ctx, "x", true); !errors.Is(err, actors.ErrUnknownServer) {
		t.Fatalf("SetEnabled of an unknown server: %v", err)
	}
	if err := r.Put(ctx, server("x"), persistence.OriginAPI); err != nil {
		t.Fatal(err)
	}
	if err := r.Delete(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := r.Row("x"); ok || err != nil {
		t.Fatalf("after Delete: %v, %v", ok, err)
	}
}

func names(specs []actors.ServerSpec) string {
	var out string
	for i, s := range specs {
		if i > 0 {
			out += " "
		}
		out += s.Name
	}
	return out
}
