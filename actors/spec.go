package actors

import (
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/toolpin"
	"github.com/mcpvisor/mcpvisor/protocol"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// Transport names how the host reaches a server. It is protocol's, so
// that the configuration (a lower floor) and the runtime name it alike.
type Transport = protocol.Transport

const (
	TransportStdio = protocol.TransportStdio
	TransportHTTP  = protocol.TransportHTTP
	TransportSSE   = protocol.TransportSSE
)

// Defaults applied by ServerSpec.WithDefaults.
const (
	DefaultCallTimeout    = 120 * time.Second
	DefaultStartupTimeout = 120 * time.Second
	DefaultMaxFrame       = 16 << 20
	// DefaultMaxDescription cuts no description of the real servers
	// measured (the longest, 7,011 bytes; docs/design.md, "Tool names and
	// descriptions"), with room to spare: a cap against runaway
	// descriptions, not a trim of ordinary ones.
	DefaultMaxDescription = 16 << 10
	DefaultStopGrace      = 2 * time.Second
	DefaultTermGrace      = 2 * time.Second
	DefaultWriteQueue     = 256
)

// ServerSpec is everything the runtime needs to run one MCP server. It is
// already resolved: variables expanded, the child's environment built.
// The zero value of every optional field means its default.
type ServerSpec struct {
	Name      string
	Transport Transport

	// stdio
	Command string
	Args    []string
	Env     []string // the child's whole environment, KEY=VALUE
	Dir     string
	// Limits bound the resources of the server's processes: through its
	// cgroup when the runtime contains servers in cgroups with the
	// controllers, rlimits or nothing otherwise (supervision.Limits says
	// what each fallback really limits). Zero: no limit.
	Limits supervision.Limits

	// http, sse
	URL          string
	Headers      map[string]string
	AllowPrivate bool
	// OwnFile marks a server of the user's own config file (not one the
	// API or a model registered): its URL's host may be on loopback
	// without AllowPrivate (outbound.Options.LoopbackHost).
	OwnFile bool
	// OAuth is the server's authorization configuration, expanded (nil:
	// none configured; the host still signs in by discovery when the
	// server asks). Auth, set by the host, authorizes every request.
	OAuth *oauth.Config
	Auth  *oauth.Authorizer
	// Hidden marks an instance the host runs for one user of a server
	// (oauth.perUser): it is called by its own name but not listed by
	// Status, Tools or WaitReady, and its catalog is not journaled.
	Hidden bool
	// HeadersHelper is a command (argv) whose stdout, a JSON object, gives
	// headers to send; run at connect and again on a 401.
	HeadersHelper []string

	Enabled      bool
	Description  string
	FriendlyName string
	// Unstartable, when set, is why the server cannot start (its entry
	// references a variable this environment lacks): it is listed failed
	// with this reason, never spawned or connected, and the others run.
	Unstartable error

	CallTimeout    time.Duration
	StartupTimeout time.Duration
	// MaxTotalTimeout caps a call that resets its timeout on progress (0:
	// no cap beyond each call's own).
	MaxTotalTimeout time.Duration
	// ResetTimeoutOnProgress is the default for calls that do not say.
	ResetTimeoutOnProgress bool
	// LogLevel, when set, is sent as logging/setLevel once the server is
	// ready, if it declared logging.
	LogLevel string

	IncludeTools   []string
	ExcludeTools   []string
	MaxTools       int // 0: no cap
	MaxDescription int // bytes of a tool's description (not of its inputSchema); 0: DefaultMaxDescription; <0: no cap
	// ToolPolicy pins the server's tool definitions (pins.go); unset: the
	// runtime's Options.ToolPolicy.
	ToolPolicy toolpin.Policy

	// Unprefixed exposes the server's tools under their own names rather
	// than mcp__<server>__<tool> (exposure.go); the namespaced name still
	// reaches them.
	Unprefixed bool
	// AlwaysOn puts the server's tools in every session from the start
	// (the host's grants consult IsAlwaysOn).
	AlwaysOn bool
	// ProtocolVersion pins the revision spoken: "" detects the era (era.go);
	// one of protocol.SupportedVersions skips the probe and initializes at
	// that revision; one of protocol.ModernVersions probes with it and
	// never falls back to initialize.
	ProtocolVersion string

	// Node is the cluster member label the server is placed by ("": any
	// member): Placement's second argument.
	Node string

	MaxFrame   int // bytes; 0: DefaultMaxFrame
	WriteQueue int // frames; 0: DefaultWriteQueue

	Restart   supervision.RestartPolicy
	StopGrace time.Duration
	TermGrace time.Duration

	// LastCatalog is the catalog the server listed last time (from the
	// journal): Tools answers with it until the server lists again, and a
	// MaxTools cut keeps its tools first.
	LastCatalog []Tool
}

// WithDefaults returns a copy with every zero optional field set.
func (s ServerSpec) WithDefaults() ServerSpec {
	if s.Transport == "" {
		s.Transport = TransportStdio
	}
	if s.CallTimeout <= 0 {
		s.CallTimeout = DefaultCallTimeout
	}
	if s.StartupTimeout <= 0 {
		s.StartupTimeout = DefaultStartupTimeout
	}
	if s.MaxDescription == 0 {
		s.MaxDescription = DefaultMaxDescription
	}
	if s.MaxFrame <= 0 {
		s.MaxFrame = DefaultMaxFrame
	}
	if s.WriteQueue <= 0 {
		s.WriteQueue = DefaultWriteQueue
	}
	if s.StopGrace <= 0 {
		s.StopGrace = DefaultStopGrace
	}
	if s.TermGrace <= 0 {
		s.TermGrace = DefaultTermGrace
	}
	s.Restart = s.Restart.WithDefaults()
	return s
}
