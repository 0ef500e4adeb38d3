package sidecar_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/internal/browsertest"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// The API shows servers, tools and results exactly as json.Marshal of the
// root package's values gives them to an embedder, a server whose schemas
// are not JSON Schema objects included.
func TestAPIIsTheRootPackagesJSON(t *testing.T) {
	a := openAPI(t, sidecar.Options{}, mcptest("t", "-bad-schema"))

	for _, tc := range []struct {
		path, key string
		want      any
	}{
		{"/v1/tools", "tools", a.h.Tools()},
		{"/v1/servers", "servers", a.h.Status()},
	} {
		var body map[string]json.RawMessage
		a.do("GET", tc.path, nil).json(t, &body)
		want, err := json.Marshal(tc.want)
		if err != nil {
			t.Fatalf("json.Marshal for %s: %v", tc.path, err)
		}
		if !bytes.Equal(body[tc.key], want) {
			t.Errorf("GET %s %s:\n%s\nwant json.Marshal's\n%s", tc.path, tc.key, body[tc.key], want)
		}
	}

	var tools struct{ Tools []mcpvisor.Tool }
	a.do("GET", "/v1/tools", nil).json(t, &tools)
	found := false
	for _, tl := range tools.Tools {
		found = found || tl.Name == "mcp__t__bad_schema" && string(tl.InputSchema) == `"not a schema"`
	}
	if !found {
		t.Errorf("mcp__t__bad_schema missing or changed: %+v", tools.Tools)
	}

	r := a.do("POST", "/v1/call", map[string]any{"tool": "mcp__t__structured"})
	res, err := a.h.Call(t.Context(), "mcp__t__structured", nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := json.Marshal(sidecar.NewResultView(res))
	if !bytes.Equal(bytes.TrimSpace(r.body), want) {
		t.Errorf("POST /v1/call:\n%s\nwant\n%s", r.body, want)
	}
	var got sidecar.ResultView
	r.json(t, &got)
	if got.Type != mcpvisor.ResultJSON || string(got.JSON) != `{"x":1}` || got.Wire != res.Wire() {
		t.Errorf("POST /v1/call decodes to %+v", got)
	}
}

// The inbox page reads the servers' camelCase members: a friendly name
// beside the name, the last error in its column.
func TestUIShowsServersFields(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := browsertest.Need(t)
	alpha := mcptest("alpha")
	alpha.FriendlyName = "Alpha Server"
	a := openAPI(t, sidecar.Options{}, alpha)
	bctx := browsertest.Start(t, ctx, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(a.ts.URL+"/ui/#token="+testToken)); err != nil {
		t.Fatal(err)
	}
	row := func(name string, cell int) string {
		return fmt.Sprintf(`Array.from(document.querySelectorAll("#servers tbody tr")).
			filter((tr) => tr.cells[0].querySelector("strong").textContent === %q).
			map((tr) => tr.cells[%d].textContent).join(",")`, name, cell)
	}
	waitFor := func(what, expr string) {
		t.Helper()
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](expr, chromedp.WithPollingMutation())); err != nil {
			got, _ := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#servers tbody").textContent`))
			t.Fatalf("%s: %v (the table shows %q)", what, err, got)
		}
	}
	waitFor("alpha's friendly name", row("alpha", 0)+` === "alpha Alpha Server"`)

	if err := a.h.Register(ctx, mcptest("broken", "-exit-at-start", "3")); err != nil {
		t.Fatal(err)
	}
	waitFor("broken's last error", row("broken", 4)+`.includes("exit")`)
}
