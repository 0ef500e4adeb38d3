package sidecar_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

func Example() {
	dir, _ := os.MkdirTemp("", "sidecar-example-")
	defer os.RemoveAll(dir)
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: dir, Inbox: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	api := sidecar.New(h, sidecar.Options{Token: "t0ken", DataDir: dir})
	ts := httptest.NewServer(api.Handler())
	defer ts.Close()

	for _, auth := range []string{"", "Bearer t0ken"} {
		req, _ := http.NewRequest("GET", ts.URL+"/v1/servers", nil)
		req.Header.Set("Authorization", auth)
		resp, err := ts.Client().Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.StatusCode, " ", string(body))
	}
	// Output:
	// 401 {"error":{"code":"unauthorized","message":"missing or wrong bearer token"}}
	// 200 {"servers":[]}
}
