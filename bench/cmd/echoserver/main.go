// Command echoserver is the one MCP stdio server every contender of the
// bench harness talks to. It answers initialize, ping, tools/list (two
// tools, echo and flood) and tools/call echo, whose result is one text block
// holding the call's arguments as JSON. It is the floor of every
// measurement, so it does as little as it can: one goroutine reads lines
// through a large buffer and writes replies through a buffered writer,
// flushed only when no more input is already buffered (a burst of pipelined
// requests costs one write).
//
// tools/call flood with {"n": N}, for the journal scenario, writes N
// notifications {"jsonrpc":"2.0","method":"event/flood","params":{"i":k}}
// (k = 1..N) as fast as it can, in buffer-sized writes, then answers with a
// text block.
//
// With -era modern it speaks protocol revision 2026-07-28 instead (the
// "modern" era: no initialize handshake, the protocol version in every
// request's _meta): it answers server/discover with the versions it
// supports (2026-07-28 only), refuses initialize with
// UnsupportedProtocolVersionError (-32022, data {"supported": [...],
// "requested": ...}), answers tools/list and tools/call as in the legacy era
// plus "resultType":"complete" (and tools/list's cache hint, ttlMs and
// cacheScope), and rejects any request whose _meta lacks
// "io.modelcontextprotocol/protocolVersion" with -32602, or names another
// version with -32022, so that a client that forgets the _meta cannot be
// measured by accident. ping, removed in 2026-07-28, is an unknown method
// there. The default, -era legacy, is the server as it always was
// (2025-11-25 and earlier, through initialize). -era modern is served over
// stdio and over HTTP (-http), with no session there.
//
// Flags make it misbehave for the isolation scenario:
//
//	-hang   answer the handshake and tools/list, never answer tools/call
//	-crash  exit with status 3 at once (a crash loop under a supervisor)
//	-deaf   stop reading stdin after the first tools/list answer, stay alive
//
// With -http ADDR (e.g. 127.0.0.1:0) it is the same server over Streamable
// HTTP instead of stdio: it listens on ADDR, prints its endpoint's URL
// (http://HOST:PORT/mcp) as the first line of stdout, and serves until
// SIGTERM or SIGINT. See http.go. It lists and answers echo only: a reply
// there is one JSON body, which cannot carry notifications before it.
// With -http and -era modern, every POST stands alone (no session): besides
// the _meta, it must carry the headers of 2026-07-28 (MCP-Protocol-Version,
// Mcp-Method, and Mcp-Name for tools/call), matching its body.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
	"unicode/utf8"
)

func main() {
	var m mode
	flag.BoolVar(&m.hang, "hang", false, "answer the handshake and tools/list, never answer tools/call")
	crash := flag.Bool("crash", false, "exit with status 3 at start")
	flag.BoolVar(&m.deaf, "deaf", false, "stop reading stdin after the first tools/list answer, but stay alive")
	httpAddr := flag.String("http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:0) instead of stdio; prints the URL")
	era := flag.String("era", eraLegacy, "the protocol era to speak: legacy (initialize, 2025-11-25 and earlier) or modern (2026-07-28: server/discover, _meta on every request, no HTTP session)")
	flag.Parse()
	switch *era {
	case eraLegacy:
	case eraModern:
		m.modern = true
	default:
		fmt.Fprintf(os.Stderr, "echoserver: -era %q: want %s or %s\n", *era, eraLegacy, eraModern)
		os.Exit(2)
	}
	if *httpAddr != "" {
		if err := serveHTTPMain(*httpAddr, m.modern); err != nil {
			fmt.Fprintln(os.Stderr, "echoserver:", err)
			os.Exit(1)
		}
		return
	}
	if *crash {
		fmt.Fprintln(os.Stderr, "echoserver: crashing on purpose (-crash)")
		os.Exit(3)
	}
	err := serve(os.Stdin, os.Stdout, m)
	if errors.Is(err, errDeaf) {
		for { // alive, never reading again: the supervisor must stop us
			time.Sleep(time.Hour)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "echoserver:", err)
		os.Exit(1)
	}
}

// The values of -era.
const (
	eraLegacy = "legacy"
	eraModern = "modern"
)

// mode is the era the server speaks and how it misbehaves; the zero value
// is a legacy server that behaves.
type mode struct {
	modern bool // speak 2026-07-28 (see handleModern), not the initialize handshake
	hang   bool // never answer tools/call
	deaf   bool // stop reading after the first tools/list answer
}

// errDeaf is returned by serve when it stops reading on purpose (-deaf).
var errDeaf = errors.New("stopped reading stdin (-deaf)")

// serve answers newline-delimited JSON-RPC requests from r on w until r ends
// (nil) or fails.
func serve(r io.Reader, w io.Writer, m mode) error {
	in := bufio.NewReaderSize(r, 1<<20)
	out := bufio.NewWriterSize(w, 64<<10)
	s := session{stdio: true}
	var long []byte // a line longer than the read buffer, assembled
	for {
		line, err := in.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = in.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(bytes.TrimSpace(line)) > 0 {
			reply := s.handle(line, m)
			if s.flood > 0 {
				if werr := writeFlood(out, s.flood); werr != nil {
					return werr
				}
				s.flood = 0
			}
			if len(reply) > 0 {
				if _, werr := out.Write(reply); werr != nil {
					return werr
				}
			}
		}
		if m.deaf && s.listed {
			return errors.Join(out.Flush(), errDeaf)
		}
		if in.Buffered() == 0 || err != nil {
			if ferr := out.Flush(); ferr != nil {
				return ferr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// session is the server's state: reused decoding space, the reply buffer,
// and whether tools/list has been answered.
type session struct {
	req        request
	reply      []byte
	listed     bool
	parseError bool // the last message was not JSON
	// errCode is the code of the last reply if it was an error, else 0.
	errCode int
	// stdio: notifications can precede a reply, so flood is offered.
	stdio bool
	// flood is the notifications the last request asked for, to be
	// written before its reply.
	flood int
}

// request holds the fields of every request the server understands.
// Its RawMessage fields keep their capacity from one request to the next.
type request struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		Name            string          `json:"name"`
		Arguments       json.RawMessage `json:"arguments"`
		ProtocolVersion string          `json:"protocolVersion"`
		// Meta is what the modern era requires of _meta: the protocol
		// version (a JSON string) and the client's capabilities. They
		// are kept raw, which costs no allocation once their capacity
		// is there; clientInfo is named too, so that encoding/json
		// matches its long key exactly instead of folding it (which
		// allocates for keys over 32 bytes).
		Meta struct {
			ProtocolVersion json.RawMessage `json:"io.modelcontextprotocol/protocolVersion"`
			Caps            json.RawMessage `json:"io.modelcontextprotocol/clientCapabilities"`
			Info            json.RawMessage `json:"io.modelcontextprotocol/clientInfo"`
		} `json:"_meta"`
	} `json:"params"`
}

// versions are the revisions the server accepts from a client, newest
// first; it answers with the client's own when it knows it.
var versions = []string{"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"}

const (
	initResult = `{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"echoserver","version":"1.0.0"}}`
	echoTool   = `{"name":"echo","description":"Returns its arguments as a text block.","inputSchema":{"type":"object"}}`
	floodTool  = `{"name":"flood","description":"Sends n event/flood notifications as fast as it can, then answers.",` +
		`"inputSchema":{"type":"object","properties":{"n":{"type":"integer","minimum":0}},"required":["n"]}}`
	listResult      = `{"tools":[` + echoTool + `]}`
	listResultStdio = `{"tools":[` + echoTool + `,` + floodTool + `]}`
)

// The modern era (-era modern): 2026-07-28 only.
const (
	modernVersion = "2026-07-28"
	// cacheHint is the freshness hint of a cacheable result (tools/list,
	// server/discover): an hour, longer than any run, so that no client
	// lists the tools again while it is measured.
	cacheHint      = `"ttlMs":3600000,"cacheScope":"public"`
	discoverResult = `{"resultType":"complete","supportedVersions":["` + modernVersion + `"],"capabilities":{"tools":{}},` +
		`"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"echoserver","version":"1.0.0"}},` + cacheHint + `}`
	listResultModern      = `{"resultType":"complete","tools":[` + echoTool + `],` + cacheHint + `}`
	listResultModernStdio = `{"resultType":"complete","tools":[` + echoTool + `,` + floodTool + `],` + cacheHint + `}`
	// codeUnsupportedVersion is UnsupportedProtocolVersionError's code.
	codeUnsupportedVersion = -32022
)

// modernVersionJSON is modernVersion as a JSON string, as a client writes
// it in _meta.
var modernVersionJSON = []byte(`"` + modernVersion + `"`)

// handle returns the reply line (with its newline) for one request, or nil
// for a notification or a call it must not answer. The slice is reused.
func (s *session) handle(line []byte, m mode) []byte {
	q := &s.req
	q.ID, q.Method = q.ID[:0], ""
	q.Params.Name, q.Params.Arguments, q.Params.ProtocolVersion = "", q.Params.Arguments[:0], ""
	q.Params.Meta.ProtocolVersion = q.Params.Meta.ProtocolVersion[:0]
	q.Params.Meta.Caps, q.Params.Meta.Info = q.Params.Meta.Caps[:0], q.Params.Meta.Info[:0]
	s.parseError, s.errCode = false, 0
	if err := json.Unmarshal(line, q); err != nil {
		s.parseError = true
		return s.errorReply(json.RawMessage("null"), -32700, "parse error")
	}
	if len(q.ID) == 0 || q.Method == "" {
		return nil // a notification (initialized, cancelled), or a response
	}
	if m.modern {
		return s.handleModern(q, m)
	}
	switch q.Method {
	case "initialize":
		v := versions[0]
		for _, known := range versions {
			if known == q.Params.ProtocolVersion {
				v = known
			}
		}
		return s.result(q.ID, fmt.Appendf(nil, initResult, v))
	case "ping":
		return s.result(q.ID, []byte("{}"))
	case "tools/list":
		s.listed = true
		if s.stdio {
			return s.result(q.ID, []byte(listResultStdio))
		}
		return s.result(q.ID, []byte(listResult))
	case "tools/call":
		if q.Params.Name == "flood" && s.stdio {
			return s.floodCall(q, m)
		}
		if q.Params.Name != "echo" {
			return s.errorReply(q.ID, -32602, "unknown tool: "+q.Params.Name)
		}
		if m.hang {
			return nil
		}
		return s.echo(q, `,"result":{"content":[{"type":"text","text":`)
	}
	return s.errorReply(q.ID, -32601, "method not found: "+q.Method)
}

// echo returns the reply to a call of the echo tool: head (the result up
// to the text block's text), then the call's arguments as a JSON string.
func (s *session) echo(q *request, head string) []byte {
	args := q.Params.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	b := append(s.reply[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(b, q.ID...)
	b = append(b, head...)
	b = appendString(b, args)
	b = append(b, "}]}}\n"...)
	s.reply = b
	return b
}

// handleModern answers a request in the modern era (2026-07-28): there is
// no handshake, so initialize is refused with the versions the server
// speaks; every other request must declare that version in its _meta. It
// is the legacy handler's hot path plus one comparison of a few bytes.
func (s *session) handleModern(q *request, m mode) []byte {
	if q.Method == "initialize" {
		return s.unsupportedVersion(q.ID, appendString(nil, []byte(q.Params.ProtocolVersion)))
	}
	if v := q.Params.Meta.ProtocolVersion; !bytes.Equal(v, modernVersionJSON) {
		if reply := s.checkVersion(q.ID, v); reply != nil {
			return reply
		}
	}
	if c := q.Params.Meta.Caps; len(c) == 0 || c[0] != '{' {
		return s.errorReply(q.ID, -32602, `_meta must carry "io.modelcontextprotocol/clientCapabilities" (an object)`)
	}
	switch q.Method {
	case "server/discover":
		return s.result(q.ID, []byte(discoverResult))
	case "tools/list":
		s.listed = true
		if s.stdio {
			return s.result(q.ID, []byte(listResultModernStdio))
		}
		return s.result(q.ID, []byte(listResultModern))
	case "tools/call":
		if q.Params.Name == "flood" && s.stdio {
			return s.floodCall(q, m)
		}
		if q.Params.Name != "echo" {
			return s.errorReply(q.ID, -32602, "unknown tool: "+q.Params.Name)
		}
		if m.hang {
			return nil
		}
		return s.echo(q, `,"result":{"resultType":"complete","content":[{"type":"text","text":`)
	}
	return s.errorReply(q.ID, -32601, "method not found: "+q.Method)
}

// checkVersion returns the error reply to a modern request whose _meta
// protocol version v (raw JSON) is not modernVersion written plainly: -32602
// when it is missing or not a string, -32022 when it names another
// version. It returns nil for modernVersion written with escapes.
func (s *session) checkVersion(id json.RawMessage, v json.RawMessage) []byte {
	var version string
	if len(v) == 0 || v[0] != '"' || json.Unmarshal(v, &version) != nil {
		return s.errorReply(id, -32602, `_meta must carry "io.modelcontextprotocol/protocolVersion" (a string): `+
			`this server speaks `+modernVersion+` only, which has no initialize handshake`)
	}
	if version == modernVersion {
		return nil
	}
	return s.unsupportedVersion(id, v)
}

// unsupportedVersion returns UnsupportedProtocolVersionError: the versions
// the server supports, and requested (a JSON string) as the client asked.
func (s *session) unsupportedVersion(id json.RawMessage, requested []byte) []byte {
	s.errCode = codeUnsupportedVersion
	b := append(s.reply[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, codeUnsupportedVersion, 10)
	b = append(b, `,"message":"Unsupported protocol version: this server speaks `+modernVersion+` only","data":{"supported":["`+modernVersion+`"],"requested":`...)
	b = append(b, requested...)
	b = append(b, "}}}\n"...)
	s.reply = b
	return b
}

// floodCall sets s.flood to the notifications a flood call asks for and
// returns its reply, which the caller writes after them.
func (s *session) floodCall(q *request, m mode) []byte {
	var args struct {
		N *int `json:"n"`
	}
	if err := json.Unmarshal(q.Params.Arguments, &args); err != nil || args.N == nil || *args.N < 0 {
		return s.errorReply(q.ID, -32602, `flood: arguments must be {"n": N} with N ≥ 0`)
	}
	if m.hang {
		return nil
	}
	s.flood = *args.N
	if m.modern {
		return s.result(q.ID, fmt.Appendf(nil, `{"resultType":"complete","content":[{"type":"text","text":"sent %d notifications"}]}`, *args.N))
	}
	return s.result(q.ID, fmt.Appendf(nil, `{"content":[{"type":"text","text":"sent %d notifications"}]}`, *args.N))
}

// floodLineMax bounds one flood notification line: its fixed text and an
// int's digits.
const floodLineMax = 64 + 20

// writeFlood writes n event/flood notifications to out, each appended in
// place to out's free space: out reaches the pipe in buffer-sized writes.
func writeFlood(out *bufio.Writer, n int) error {
	for k := 1; k <= n; k++ {
		if out.Available() < floodLineMax {
			if err := out.Flush(); err != nil {
				return err
			}
		}
		b := out.AvailableBuffer()
		b = append(b, `{"jsonrpc":"2.0","method":"event/flood","params":{"i":`...)
		b = strconv.AppendInt(b, int64(k), 10)
		b = append(b, "}}\n"...)
		if _, err := out.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func (s *session) result(id json.RawMessage, result []byte) []byte {
	b := append(s.reply[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, result...)
	b = append(b, "}\n"...)
	s.reply = b
	return b
}

func (s *session) errorReply(id json.RawMessage, code int, msg string) []byte {
	s.errCode = code
	b := append(s.reply[:0], `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	b = appendString(b, []byte(msg))
	b = append(b, "}}\n"...)
	s.reply = b
	return b
}

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD.
func appendString(b, s []byte) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return append(b, '"')
}
