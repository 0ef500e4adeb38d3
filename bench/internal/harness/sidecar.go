package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/sidecar"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Contender names of mcpvisor run as a sidecar.
const (
	SidecarAPI = "sidecar-api"
	SidecarMCP = "sidecar-mcp"
)

// sidecarContender is mcpvisor as a sidecar, the way `mcpvisor serve` runs
// it: the embedded host of stdio echo servers behind sidecar.New's API,
// with the gateway mounted at /mcp, on a real http.Server listening on a
// loopback TCP port. Without mcp, each call is one POST /v1/call with the
// bearer token, through a keep-alive client; with mcp, each call is
// tools/call through the gateway from the official Go SDK client over
// Streamable HTTP, the host opened with every server always on so that
// its tools are listed without activate_tools.
type sidecarContender struct{ mcp bool }

func (ct sidecarContender) name() string {
	if ct.mcp {
		return SidecarMCP
	}
	return SidecarAPI
}

func (ct sidecarContender) connect(ctx context.Context, env *Env, n int, _ bool) (client, error) {
	var opts mcpvisor.Options
	if ct.mcp {
		for i := range n {
			opts.AlwaysOn = append(opts.AlwaysOn, serverName(i))
		}
	}
	sc, err := startSidecar(ctx, env, n, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ct.name(), err)
	}
	if !ct.mcp {
		return newAPIClient(sc, n), nil
	}
	c, err := dialGateway(ctx, sc, n)
	if err != nil {
		sc.close()
		return nil, fmt.Errorf("%s: %w", ct.name(), err)
	}
	return c, nil
}

// benchSidecar is a host with its API and gateway served on loopback.
type benchSidecar struct {
	host   *benchHost
	gw     *gateway.Gateway
	srv    *http.Server
	served chan error // Serve's return
	url    string     // http://127.0.0.1:PORT
	token  string
}

// startSidecar opens a host of n echo servers with opts, waits until they
// are ready, and serves its API and gateway on a free loopback port.
func startSidecar(ctx context.Context, env *Env, n int, opts mcpvisor.Options) (*benchSidecar, error) {
	h, err := hostContender{}.startWith(ctx, env, n, opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		h.close()
		return nil, err
	}
	quiet := slog.New(slog.DiscardHandler)
	sc := &benchSidecar{host: h, served: make(chan error, 1), url: "http://" + ln.Addr().String(), token: rand.Text()}
	sc.gw = gateway.New(h.Host, gateway.Options{Logger: quiet})
	api := sidecar.New(h.Host, sidecar.Options{Token: sc.token, DataDir: h.dataDir, Logger: quiet, MCP: sc.gw.Handler()})
	sc.srv = &http.Server{Handler: api.Handler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { sc.served <- sc.srv.Serve(ln) }()
	return sc, nil
}

// close ends the gateway's sessions (and their GET streams), stops the
// server, waiting a bounded time for its requests, and closes the host.
func (sc *benchSidecar) close() error {
	errs := []error{sc.gw.Close()}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := sc.srv.Shutdown(ctx); err != nil {
		errs = append(errs, err, sc.srv.Close())
	}
	if err := <-sc.served; !errors.Is(err, http.ErrServerClosed) {
		errs = append(errs, err)
	}
	return errors.Join(append(errs, sc.host.close())...)
}

// apiClient calls POST /v1/call: one keep-alive pool (poolTransport, as
// many idle connections as the scenarios have callers), one body per
// server made once, the answer's isError checked.
type apiClient struct {
	sc     *benchSidecar
	hc     *http.Client
	url    string
	auth   []string
	bodies [][]byte
	bufs   sync.Pool // *bytes.Buffer
}

func newAPIClient(sc *benchSidecar, n int) *apiClient {
	c := &apiClient{sc: sc, hc: &http.Client{Transport: poolTransport()}, url: sc.url + "/v1/call",
		auth: []string{"Bearer " + sc.token}, bodies: make([][]byte, n)}
	for i := range c.bodies {
		c.bodies[i] = fmt.Appendf(nil, `{"tool":"mcp__%s__echo","arguments":%s}`, serverName(i), echoArgs)
	}
	return c
}

func (c *apiClient) call(ctx context.Context, server int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.bodies[server]))
	if err != nil {
		return err
	}
	req.Header = http.Header{"Content-Type": hdrJSON, "Authorization": c.auth}
	resp, err := c.hc.Do(req)
	if err != nil {
		return err
	}
	b, _ := c.bufs.Get().(*bytes.Buffer)
	if b == nil {
		b = new(bytes.Buffer)
	}
	defer c.bufs.Put(b)
	b.Reset()
	_, err = b.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("sidecar-api: HTTP %d: %s", resp.StatusCode, bytes.TrimSpace(b.Bytes()))
	}
	var res struct {
		IsError bool   `json:"isError"`
		Wire    string `json:"wire"`
	}
	if err := json.Unmarshal(b.Bytes(), &res); err != nil {
		return fmt.Errorf("sidecar-api: %w", err)
	}
	if res.IsError {
		return fmt.Errorf("sidecar-api: tool error: %s", res.Wire)
	}
	return nil
}

func (c *apiClient) close() error {
	c.hc.CloseIdleConnections()
	return c.sc.close()
}

// gatewayClient is the official Go SDK's client on the gateway: one
// session over StreamableClientTransport, with its defaults (it opens the
// standalone GET stream, which the gateway serves) and the harness's pool,
// the token added to every request.
type gatewayClient struct {
	sc      *benchSidecar
	session *mcp.ClientSession
	tools   []string
}

func dialGateway(ctx context.Context, sc *benchSidecar, n int) (*gatewayClient, error) {
	hc := &http.Client{Transport: bearerTransport{token: "Bearer " + sc.token, next: poolTransport()}}
	t := &mcp.StreamableClientTransport{Endpoint: sc.url + "/mcp", HTTPClient: hc}
	sdk := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	cs, err := sdk.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: protocolVersion})
	if err != nil {
		return nil, err
	}
	c := &gatewayClient{sc: sc, session: cs, tools: make([]string, n)}
	for i := range c.tools {
		c.tools[i] = "mcp__" + serverName(i) + "__echo"
	}
	listed, err := cs.ListTools(ctx, nil)
	if err != nil {
		cs.Close()
		return nil, err
	}
	for _, name := range c.tools {
		if !listsTool(listed.Tools, name) {
			cs.Close()
			return nil, fmt.Errorf("the gateway does not list %s", name)
		}
	}
	return c, nil
}

func listsTool(tools []*mcp.Tool, name string) bool {
	for _, t := range tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func (c *gatewayClient) call(ctx context.Context, server int) error {
	res, err := c.session.CallTool(ctx, &mcp.CallToolParams{Name: c.tools[server], Arguments: echoArgs})
	if err != nil {
		return err
	}
	if res.IsError {
		return errors.New("sidecar-mcp: tool error")
	}
	return nil
}

func (c *gatewayClient) close() error {
	return errors.Join(c.session.Close(), c.sc.close())
}

// bearerTransport adds the sidecar's token to every request.
type bearerTransport struct {
	token string // "Bearer ..."
	next  http.RoundTripper
}

func (t bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context()) // a RoundTripper must not modify its request
	r.Header.Set("Authorization", t.token)
	return t.next.RoundTrip(r)
}
