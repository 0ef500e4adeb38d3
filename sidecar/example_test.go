package sidecar_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

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
	// 401 {"error":{"code":"unauthorized","message":"missing or wrong bearer token: send Authorization: Bearer TOKEN, the token mcpvisor serve keeps in its data directory (mcpvisor token prints it)"}}
	// 200 {"servers":[]}
}

// Serve puts the API on a listener with its connection limits, until the
// context ends. The open probes answer anyone; /readyz names servers that
// are not ready only to a caller with the token.
func ExampleServer_Serve() {
	dir, _ := os.MkdirTemp("", "sidecar-example-")
	defer os.RemoveAll(dir)
	h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{DataDir: dir, Inbox: true,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer h.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	api := sidecar.New(h, sidecar.Options{Token: "t0ken", DataDir: dir,
		Limits: sidecar.Limits{MaxConns: 256, IdleTimeout: 30 * time.Second}})
	go func() { done <- api.Serve(ctx, ln) }()

	for _, path := range []string{"/healthz", "/readyz"} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Print(resp.StatusCode, " ", string(body))
	}
	cancel()
	fmt.Println("Serve returned", <-done)
	// Output:
	// 200 {"status":"ok"}
	// 200 {"status":"ready"}
	// Serve returned <nil>
}
