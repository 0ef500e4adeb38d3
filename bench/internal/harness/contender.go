package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// Contender names, as they appear in records and reports.
const (
	Raw       = "raw"
	Mcpvisor  = "mcpvisor"
	GoSDK     = "go-sdk"
	Mark3labs = "mark3labs"

	// McpvisorNoHistory is mcpvisor keeping no call history, beside
	// mcpvisor (which journals every call, the default).
	McpvisorNoHistory = Mcpvisor + "-nohistory"
	// McpvisorTraced is mcpvisor with every call traced (an OpenTelemetry
	// SDK provider), beside mcpvisor (no provider: tracing off).
	McpvisorTraced = Mcpvisor + "-traced"
)

// Contender names in the modern era (2026-07-28): the same four against the
// echo server run with -era modern, in the latency and throughput scenarios.
const (
	RawModern       = Raw + modernSuffix
	McpvisorModern  = Mcpvisor + modernSuffix
	GoSDKModern     = GoSDK + modernSuffix
	Mark3labsModern = Mark3labs + modernSuffix
)

// modernSuffix turns a contender's name into its modern-era name.
const modernSuffix = "-modern"

// modernName is the name of contender name's modern-era variant.
func modernName(name string) string { return name + modernSuffix }

// contenders is every contender over stdio, the floor first.
var contenders = []contender{rawContender{}, hostContender{}, goSDKContender{}, mark3labsContender{}}

// modernContenders are the stdio contenders in the modern era: each speaks
// protocol revision 2026-07-28 (server/discover, then _meta on every
// request) to the echo server run with -era modern, which refuses
// initialize and any request without the _meta, so that none can fall back
// to the legacy handshake unnoticed. The floor first.
var modernContenders = []contender{rawContender{modern: true}, hostContender{modern: true}, goSDKContender{modern: true}, mark3labsContender{modern: true}}

// loadContenders are the contenders of the call latency and throughput
// scenarios: the stdio and sidecar contenders of the legacy era, then the
// modern ones, interleaved in the same repeats so that the ratio of a
// modern contender to its legacy self is measured under the same noise.
var loadContenders = append(callContenders[:len(callContenders):len(callContenders)], modernContenders...)

// callContenders are the contenders of the call latency and throughput
// scenarios over stdio: every stdio contender, then mcpvisor as a sidecar,
// called over loopback HTTP (its API, its MCP gateway), and beside mcpvisor
// itself the same host with no call history and the same host tracing.
var callContenders = append(contenders[:len(contenders):len(contenders)], hostContender{noHistory: true}, hostContender{traced: true},
	sidecarContender{}, sidecarContender{mcp: true})

// httpContenders are the same contenders over Streamable HTTP, the floor
// (net/http POSTs) first. Their names are the same; the scenario tells them
// apart.
var httpContenders = []contender{rawHTTPContender{}, hostContender{http: true}, goSDKContender{http: true}, mark3labsContender{http: true}}

// peers are the SDK clients mcpvisor is compared against.
var peers = []string{GoSDK, Mark3labs}

// modernPeers are the same SDK clients in the modern era.
var modernPeers = []string{GoSDKModern, Mark3labsModern}

// modernVersion is the protocol revision of the modern era, the one the
// modern contenders must end up speaking.
const modernVersion = "2026-07-28"

// echoServerArgs are the echo server's arguments for a contender of the
// modern era (-era modern) or not (none).
func echoServerArgs(modern bool) []string {
	if modern {
		return []string{"-era", "modern"}
	}
	return nil
}

// echoArgs are the arguments of every call, sent as they are by each contender.
var echoArgs = json.RawMessage(`{"n":1}`)

// floodArgs are the arguments of a call to the echo server's flood tool:
// n notifications of floodMethod before its answer.
func floodArgs(n int) json.RawMessage { return fmt.Appendf(nil, `{"n":%d}`, n) }

const floodMethod = "event/flood"

// A contender is one way of calling the echo server's tool.
type contender interface {
	name() string
	// connect starts n echo servers at once and returns a client to them
	// when every one has answered initialize and tools/list. pipelined
	// asks the raw client for its concurrent form; the others always are.
	connect(ctx context.Context, env *Env, n int, pipelined bool) (client, error)
}

// A client calls the echo tool of one of its servers (0 ≤ server < n).
// call is safe for concurrent use; close stops every server it started.
type client interface {
	call(ctx context.Context, server int) error
	close() error
}

// startAll runs start(i) for i in [0, n) concurrently and returns the first
// error, after every start has returned.
func startAll(n int, start func(i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() { errs[i] = start(i) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// closeAll runs close(i) concurrently for i in [0, n).
func closeAll(n int, closeOne func(i int) error) error {
	return startAll(n, closeOne)
}

func serverName(i int) string { return fmt.Sprintf("s%03d", i) }
