package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// Sizes are how much work each scenario does.
type Sizes struct {
	// Repeats is how many times scenarios 1, 2, 4, 7 and 8 run each
	// contender (each isolation phase), interleaved, a fresh client each
	// time; their figures are the medians of the repeats'.
	Repeats          int
	LatencyCalls     int           // scenarios 1 and 7: calls per contender per repeat, 1 caller
	ThroughputCalls  int           // scenarios 2 and 8: calls per contender per repeat
	Callers          int           // scenarios 2, 3 and 8: concurrent callers
	FanoutServers    int           // scenario 3
	FanoutCalls      int           // scenario 3: calls per contender
	IsolationServers int           // scenario 4: healthy + 3 misbehaving
	IsolationCalls   int           // scenario 4: calls to the healthy servers, per phase per repeat
	IsolationCallers int           // scenario 4: callers of the healthy servers
	StartupServers   int           // scenario 5
	StartupRuns      int           // scenario 5: runs per contender (the median is kept)
	ScaleServers     int           // scenario 6
	ScaleCalls       int           // scenario 6: calls to random servers once ready
	ScaleHTTPServers int           // scenario 9: HTTP servers in one Host, all on one echo server
	ScaleHTTPCalls   int           // scenario 9: calls to random servers once ready
	ScaleHTTPWait    time.Duration // scenario 9: longest wait for every server to be ready
	JournalEvents    int           // scenario 10: notifications flooded per host run (split over the servers)
	JournalServers   int           // scenario 10: servers flooding at once in the second host run
	JournalWait      time.Duration // scenario 10: longest wait for a flood to be journaled
	GatewayCalls     int           // scenario 11: calls per contender, 1 caller
	// Scenario 13, per gateway: calls with 1 caller; with Callers callers
	// (on one session, then on as many sessions); in the one session of
	// the session-age part, whose first and last GatewayPeerAgeWindow
	// calls are compared.
	GatewayPeerCalls, GatewayPeerLoadCalls, GatewayPeerAgeCalls, GatewayPeerAgeWindow int
	Rounds                                                                            int // scenarios 3 and 11: rounds of the interleaving, contenders rotate within each
	WarmupCalls                                                                       int // per contender (per repeat) before measuring
	BadCallersPerKind                                                                 int // scenario 4: concurrent callers of each misbehaving server
}

// FullSizes are the sizes (make bench). The repeated scenarios
// make as many calls in all as a single run of 20,000 / 50,000 calls did.
func FullSizes() Sizes {
	return Sizes{
		Repeats: 5, LatencyCalls: 4000, ThroughputCalls: 10000, Callers: 64,
		FanoutServers: 100, FanoutCalls: 50000,
		IsolationServers: 20, IsolationCalls: 8000, IsolationCallers: 16,
		StartupServers: 100, StartupRuns: 3,
		ScaleServers: 1000, ScaleCalls: 2000,
		ScaleHTTPServers: 10000, ScaleHTTPCalls: 1000, ScaleHTTPWait: 180 * time.Second,
		JournalEvents: 1000000, JournalServers: 4, JournalWait: 120 * time.Second,
		GatewayCalls: 20000, Rounds: 10, WarmupCalls: 1000, BadCallersPerKind: 4,
		GatewayPeerCalls: 4000, GatewayPeerLoadCalls: 10000, GatewayPeerAgeCalls: 20000, GatewayPeerAgeWindow: 2000,
	}
}

// QuickSizes are about a tenth of the work (make bench-quick, CI).
func QuickSizes() Sizes {
	return Sizes{
		Repeats: 3, LatencyCalls: 700, ThroughputCalls: 1500, Callers: 64,
		FanoutServers: 20, FanoutCalls: 5000,
		IsolationServers: 20, IsolationCalls: 700, IsolationCallers: 16,
		StartupServers: 20, StartupRuns: 1,
		ScaleServers: 100, ScaleCalls: 200,
		ScaleHTTPServers: 1000, ScaleHTTPCalls: 1000, ScaleHTTPWait: 30 * time.Second,
		JournalEvents: 100000, JournalServers: 4, JournalWait: 60 * time.Second,
		GatewayCalls: 1000, Rounds: 4, WarmupCalls: 200, BadCallersPerKind: 4,
		GatewayPeerCalls: 300, GatewayPeerLoadCalls: 1000, GatewayPeerAgeCalls: 2000, GatewayPeerAgeWindow: 400,
	}
}

// TinySizes prove that every scenario works; the harness's own tests use them.
func TinySizes() Sizes {
	return Sizes{
		Repeats: 2, LatencyCalls: 50, ThroughputCalls: 50, Callers: 4,
		FanoutServers: 2, FanoutCalls: 50,
		IsolationServers: 5, IsolationCalls: 50, IsolationCallers: 2,
		StartupServers: 2, StartupRuns: 1,
		ScaleServers: 3, ScaleCalls: 10,
		ScaleHTTPServers: 3, ScaleHTTPCalls: 10, ScaleHTTPWait: 30 * time.Second,
		JournalEvents: 2000, JournalServers: 4, JournalWait: 30 * time.Second,
		GatewayCalls: 50, Rounds: 2, WarmupCalls: 5, BadCallersPerKind: 4,
		GatewayPeerCalls: 20, GatewayPeerLoadCalls: 40, GatewayPeerAgeCalls: 100, GatewayPeerAgeWindow: 20,
	}
}

// Env is what every scenario needs.
type Env struct {
	Server string    // the echo server binary
	Sizes  Sizes     // how much work
	Log    io.Writer // progress lines; nil: none
	// TempDir holds each host's data directory. "": os.TempDir().
	TempDir string

	// HeapProfile, when set, is where the HTTP scale scenario writes a heap
	// profile of this process once every server is ready.
	HeapProfile string

	// httpURL is the Streamable HTTP echo server's endpoint, set by the
	// HTTP scenarios for their contenders.
	httpURL string
}

func (e *Env) logf(format string, args ...any) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, time.Now().Format("15:04:05 ")+format+"\n", args...)
	}
}

func (e *Env) tempDir(prefix string) (string, func(), error) {
	dir, err := os.MkdirTemp(e.TempDir, prefix)
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// Record is one contender's figures in one scenario: the JSON record of the
// results file. Durations are in microseconds unless the name says otherwise.
//
// In the repeated scenarios (Repeats > 0) P50us, P90us, P99us, CallsPerSec
// and the CPU figures are the medians of the repeats' own, MaxUs the
// largest of any repeat, Calls and Errors the sums; P50MinUs and P50MaxUs
// are the smallest and largest repeat p50 (the spread), and RepeatP50us,
// RepeatP99us and RepeatCallsPerSec each repeat's, in run order. Elsewhere the figures are
// those of every call pooled.
type Record struct {
	Scenario    string  `json:"scenario"`
	Contender   string  `json:"contender"`
	Servers     int     `json:"servers"`
	Callers     int     `json:"callers,omitempty"`
	Calls       int     `json:"calls,omitempty"`
	Errors      int     `json:"errors"`
	Repeats     int     `json:"repeats,omitempty"`
	P50us       float64 `json:"p50_us,omitempty"`
	P90us       float64 `json:"p90_us,omitempty"`
	P99us       float64 `json:"p99_us,omitempty"`
	MaxUs       float64 `json:"max_us,omitempty"`
	CallsPerSec float64 `json:"calls_per_sec,omitempty"`
	P50MinUs    float64 `json:"p50_min_us,omitempty"`
	P50MaxUs    float64 `json:"p50_max_us,omitempty"`
	// HostCPU is this process's CPU time (getrusage RUSAGE_SELF, user +
	// system) across the measured calls, in seconds per 100,000 calls: the
	// client's and, for mcpvisor, the host's. ServerCPU is the echo server
	// children's over the same window (they are other processes, so
	// HostCPU leaves them out).
	HostCPU           float64            `json:"host_cpu_s_per_100k_calls,omitempty"`
	ServerCPU         float64            `json:"server_cpu_s_per_100k_calls,omitempty"`
	RepeatP50us       []float64          `json:"repeat_p50_us,omitempty"`
	RepeatP99us       []float64          `json:"repeat_p99_us,omitempty"`
	RepeatCallsPerSec []float64          `json:"repeat_calls_per_sec,omitempty"`
	Metrics           map[string]float64 `json:"metrics,omitempty"`
	Note              string             `json:"note,omitempty"`
}

// Scenario names, in the order they run.
const (
	ScenarioLatency    = "latency"
	ScenarioThroughput = "throughput"
	ScenarioFanout     = "fanout"
	ScenarioIsolation  = "isolation"
	ScenarioStartup    = "startup"
	ScenarioScale      = "scale"

	// Over Streamable HTTP, against one echo server process (echoserver -http).
	ScenarioLatencyHTTP    = "latency-http"
	ScenarioThroughputHTTP = "throughput-http"
	ScenarioScaleHTTP      = "scale-http"

	// A notification flood into the journal.
	ScenarioJournal = "journal"

	// The gateway's added latency per call over a direct connection, in
	// both protocol eras.
	ScenarioGateway = "gateway"

	// A healthy server's calls while a neighbour floods notifications.
	ScenarioFlood = "flood"

	// mcpvisor's gateway against the peer gateways, each in front of the
	// stdio echo server.
	ScenarioGatewayPeers = "gateway-peers"
)

// Scenario is one named scenario of the harness.
type Scenario struct {
	Name string
	Run  func(context.Context, *Env) ([]Record, error)
}

// Scenarios are every scenario, in run order.
var Scenarios = []Scenario{
	{ScenarioLatency, Latency},
	{ScenarioThroughput, Throughput},
	{ScenarioFanout, Fanout},
	{ScenarioIsolation, Isolation},
	{ScenarioStartup, Startup},
	{ScenarioScale, Scale},
	{ScenarioLatencyHTTP, LatencyHTTP},
	{ScenarioThroughputHTTP, ThroughputHTTP},
	{ScenarioScaleHTTP, ScaleHTTP},
	{ScenarioJournal, Journal},
	{ScenarioGateway, Gateway},
	{ScenarioFlood, Flood},
	{ScenarioGatewayPeers, GatewayPeers},
	{ScenarioCluster, Cluster},
}

// BuildEchoServer compiles bench/cmd/echoserver into dir and returns the
// binary's path. It runs the go command, so it works wherever the bench
// module's source is (a test, go run, make).
func BuildEchoServer(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "echoserver")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/mcpvisor/mcpvisor/bench/cmd/echoserver")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the echo server: %w\n%s", err, out)
	}
	return bin, nil
}
