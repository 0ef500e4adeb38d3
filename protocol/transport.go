package protocol

// Transport names how a client reaches an MCP server: one of the
// specification's transports.
type Transport string

const (
	// TransportStdio runs the server as a subprocess and exchanges
	// newline-delimited JSON-RPC messages over its stdin and stdout.
	TransportStdio Transport = "stdio"
	// TransportHTTP is Streamable HTTP (2025-03-26 and later).
	TransportHTTP Transport = "http"
	// TransportSSE is the legacy HTTP+SSE transport of 2024-11-05.
	TransportSSE Transport = "sse"
)
