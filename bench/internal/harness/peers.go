package harness

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os/exec"

	m3client "github.com/mark3labs/mcp-go/client"
	m3transport "github.com/mark3labs/mcp-go/client/transport"
	m3 "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersion is the revision every legacy contender speaks, so that the
// SDKs take the initialize handshake (both default to the newer stateless
// revision's server/discover probe first). The modern contenders speak
// modernVersion.
const protocolVersion = "2025-11-25"

// eraVersion is the revision a contender asks for: modernVersion in the
// modern era, protocolVersion otherwise.
func eraVersion(modern bool) string {
	if modern {
		return modernVersion
	}
	return protocolVersion
}

// goSDKContender is the official Go SDK: one ClientSession per server over
// mcp.CommandTransport (or, over HTTP, mcp.StreamableClientTransport with its
// defaults and the harness's connection pool), called with
// ClientSession.CallTool. modern: ClientSessionOptions.ProtocolVersion is
// 2026-07-28 (its default), so Connect sends server/discover instead of
// initialize, and every request carries the _meta.
type goSDKContender struct{ http, modern bool }

func (ct goSDKContender) name() string {
	if ct.modern {
		return GoSDKModern
	}
	return GoSDK
}

func (ct goSDKContender) connect(ctx context.Context, env *Env, n int, _ bool) (client, error) {
	sdk := mcp.NewClient(&mcp.Implementation{Name: "mcpbench", Version: "1"}, nil)
	c := &goSDKClient{sessions: make([]*mcp.ClientSession, n)}
	err := startAll(n, func(i int) error {
		var t mcp.Transport = &mcp.CommandTransport{Command: exec.Command(env.Server, echoServerArgs(ct.modern)...)}
		if ct.http {
			t = &mcp.StreamableClientTransport{Endpoint: env.httpURL, HTTPClient: &http.Client{Transport: poolTransport()}}
		}
		cs, err := sdk.Connect(ctx, t, &mcp.ClientSessionOptions{ProtocolVersion: eraVersion(ct.modern)})
		if err != nil {
			return err
		}
		c.sessions[i] = cs
		if v := cs.InitializeResult().ProtocolVersion; (v == modernVersion) != ct.modern {
			return fmt.Errorf("session speaks protocol %q, asked for %q", v, eraVersion(ct.modern))
		}
		_, err = cs.ListTools(ctx, nil)
		return err
	})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("go-sdk: %w", err)
	}
	return c, nil
}

type goSDKClient struct{ sessions []*mcp.ClientSession }

func (c *goSDKClient) call(ctx context.Context, server int) error {
	res, err := c.sessions[server].CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: echoArgs})
	if err != nil {
		return err
	}
	if res.IsError {
		return errors.New("go-sdk: tool error")
	}
	return nil
}

func (c *goSDKClient) close() error {
	return closeAll(len(c.sessions), func(i int) error {
		if c.sessions[i] == nil {
			return nil
		}
		return c.sessions[i].Close()
	})
}

// mark3labsContender is mark3labs/mcp-go: one stdio client per server (or,
// over HTTP, one streamable HTTP client per server with its defaults and the
// harness's connection pool), called with Client.CallTool. modern: the
// client asks for 2026-07-28 (WithProtocolVersion and the InitializeRequest),
// so Initialize probes with server/discover and the client stays stateless,
// adding the _meta to every request (v1.2.1 speaks both eras).
type mark3labsContender struct{ http, modern bool }

func (ct mark3labsContender) name() string {
	if ct.modern {
		return Mark3labsModern
	}
	return Mark3labs
}

func (ct mark3labsContender) connect(ctx context.Context, env *Env, n int, _ bool) (client, error) {
	quiet := slog.New(slog.DiscardHandler)
	c := &mark3labsClient{clients: make([]*m3client.Client, n)}
	err := startAll(n, func(i int) error {
		var t m3transport.Interface
		if ct.http {
			ht, err := m3transport.NewStreamableHTTP(env.httpURL,
				m3transport.WithHTTPBasicClient(&http.Client{Transport: poolTransport()}), m3transport.WithHTTPLogger(quiet))
			if err != nil {
				return err
			}
			t = ht
		} else {
			t = m3transport.NewStdioWithOptions(env.Server, nil, echoServerArgs(ct.modern), m3transport.WithCommandLogger(quiet))
		}
		cl := m3client.NewClient(t, m3client.WithProtocolVersion(eraVersion(ct.modern)))
		// The transport ties the process to Start's context: it must outlive ctx.
		if err := cl.Start(context.Background()); err != nil {
			return err
		}
		c.clients[i] = cl
		req := m3.InitializeRequest{}
		req.Params.ProtocolVersion = eraVersion(ct.modern)
		req.Params.ClientInfo = m3.Implementation{Name: "mcpbench", Version: "1"}
		if _, err := cl.Initialize(ctx, req); err != nil {
			return err
		}
		if v := cl.ProtocolVersion(); (v == modernVersion) != ct.modern {
			return fmt.Errorf("client speaks protocol %q, asked for %q", v, eraVersion(ct.modern))
		}
		_, err := cl.ListTools(ctx, m3.ListToolsRequest{})
		return err
	})
	if err != nil {
		c.close()
		return nil, fmt.Errorf("mark3labs: %w", err)
	}
	return c, nil
}

type mark3labsClient struct{ clients []*m3client.Client }

func (c *mark3labsClient) call(ctx context.Context, server int) error {
	req := m3.CallToolRequest{}
	req.Params.Name = "echo"
	req.Params.Arguments = echoArgs
	res, err := c.clients[server].CallTool(ctx, req)
	if err != nil {
		return err
	}
	if res.IsError {
		return errors.New("mark3labs: tool error")
	}
	return nil
}

func (c *mark3labsClient) close() error {
	return closeAll(len(c.clients), func(i int) error {
		if c.clients[i] == nil {
			return nil
		}
		return c.clients[i].Close()
	})
}
