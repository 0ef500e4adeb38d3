package gateway_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/gateway"
	"github.com/mcpvisor/mcpvisor/protocol"
)

// withInbox gives the fixture's host the built-in inbox, so it declares
// elicitation upstream.
func withInbox(o *mcpvisor.Options) { o.Inbox = true }

const initElicit = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"form":{}}},"clientInfo":{"name":"test","version":"1"}}`

// askArgs asks for a name, with a defaulted integer the client leaves out.
const askArgs = `{"name":"mcp__a__ask","arguments":{"message":"Your name?","schema":{"type":"object","properties":{"name":{"type":"string"},"n":{"type":"integer","default":7}},"required":["name"]}}}`

type elicitParams struct {
	Mode            string          `json:"mode"`
	Message         string          `json:"message"`
	RequestedSchema json.RawMessage `json:"requestedSchema"`
}

// askAnswer is mcptest ask's structured content: the client's answer as
// the server received it.
type askAnswer struct {
	Action  string         `json:"action"`
	Content map[string]any `json:"content"`
}

func answerOf(t *testing.T, f frame) askAnswer {
	t.Helper()
	if f.Error != nil {
		t.Fatalf("call failed: %+v", f.Error)
	}
	r := decode[struct {
		IsError bool      `json:"isError"`
		SC      askAnswer `json:"structuredContent"`
	}](t, f.Result)
	if r.IsError {
		t.Fatalf("tool error: %s", f.Result)
	}
	return r.SC
}

func (c *httpClient) initializeWith(params string) {
	c.t.Helper()
	resp := c.do(http.MethodPost, request(1, "initialize", params), nil)
	if resp.StatusCode != http.StatusOK {
		c.t.Fatalf("initialize: status %d", resp.StatusCode)
	}
	c.sid = resp.Header.Get("Mcp-Session-Id")
	c.readFrame(resp.Body)
	c.notify("notifications/initialized", "")
}

// respond posts the client's response to a request from the gateway.
func (c *httpClient) respond(id json.RawMessage, result string) {
	c.t.Helper()
	resp := c.do(http.MethodPost, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":`+result+`}`, nil)
	if resp.StatusCode != http.StatusAccepted {
		c.t.Fatalf("response: status %d, want 202", resp.StatusCode)
	}
}

// postAsync posts a request on its own goroutine (its answer may wait on
// the test) and delivers the response frame, read as JSON or from an SSE
// stream, with the stream's content type.
func (c *httpClient) postAsync(id int, method, params string) <-chan asyncResult {
	ch := make(chan asyncResult, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, c.url, strings.NewReader(request(id, method, params)))
		if err != nil {
			ch <- asyncResult{err: err}
			return
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Mcp-Session-Id", c.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- asyncResult{err: err}
			return
		}
		defer resp.Body.Close()
		out := asyncResult{contentType: resp.Header.Get("Content-Type")}
		if out.contentType == "text/event-stream" {
			for f := range sseEvents(resp.Body) {
				out.frames = append(out.frames, f)
			}
		} else {
			var f frame
			out.err = json.NewDecoder(resp.Body).Decode(&f)
			out.frames = []frame{f}
		}
		ch <- out
	}()
	return ch
}

type asyncResult struct {
	contentType string
	frames      []frame
	err         error
}

func awaitAsync(t *testing.T, ch <-chan asyncResult) asyncResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r
	case <-time.After(waitFor):
		t.Fatal("no answer to the call")
	}
	return asyncResult{}
}

// waitInbox waits until the host's inbox holds n elicitations.
func waitInbox(t *testing.T, h *mcpvisor.Host, n int) []mcpvisor.ElicitationRequest {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		changed := h.ElicitationsChanged()
		if list := h.Elicitations(); len(list) == n {
			return list
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("inbox holds %d elicitations, want %d", len(h.Elicitations()), n)
		}
	}
}

func TestHTTPElicitationForwarded(t *testing.T) {
	f := newFixture(t, gateway.Options{}, withInbox)
	c := newHTTP(t, f)
	c.initializeWith(initElicit)
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)

	// The call's answer becomes an SSE stream that carries the server's
	// question, with an id of the gateway's, before the call's response.
	resp := c.do(http.MethodPost, request(3, "tools/call", askArgs), nil)
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q, want an SSE stream", ct)
	}
	events := sseEvents(resp.Body)
	el := next(t, events, "elicitation/create")
	if el.Method != "elicitation/create" || len(el.ID) == 0 {
		t.Fatalf("got %+v, want the server's elicitation/create", el)
	}
	p := decode[elicitParams](t, el.Params)
	if p.Message != "Your name?" || !strings.Contains(string(p.RequestedSchema), `"name"`) {
		t.Fatalf("elicitation params %s", el.Params)
	}
	if n := len(f.h.Elicitations()); n != 0 {
		t.Fatalf("the inbox holds %d elicitations; the client was asked", n)
	}
	c.respond(el.ID, `{"action":"accept","content":{"name":"Ada"}}`)
	final := next(t, events, "the call's response")
	if string(final.ID) != "3" {
		t.Fatalf("got %+v, want the response to 3", final)
	}
	// The host filled in the schema's default before the server saw it.
	got := answerOf(t, final)
	if got.Action != "accept" || got.Content["name"] != "Ada" || got.Content["n"] != float64(7) {
		t.Fatalf("the server received %+v", got)
	}
	if _, more := <-events; more {
		t.Fatal("the stream goes on after the response")
	}
}

func TestHTTPElicitationWithoutCapabilityGoesToInbox(t *testing.T) {
	f := newFixture(t, gateway.Options{}, withInbox)
	c := newHTTP(t, f)
	c.initialize() // no elicitation capability
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)

	ch := c.postAsync(3, "tools/call", askArgs)
	pending := waitInbox(t, f.h, 1)
	if pending[0].Server != "a" || pending[0].Message != "Your name?" {
		t.Fatalf("inbox: %+v", pending[0])
	}
	if err := f.h.ResolveElicitation(pending[0].ID, mcpvisor.ElicitDecline, nil); err != nil {
		t.Fatal(err)
	}
	r := awaitAsync(t, ch)
	if len(r.frames) != 1 || r.frames[0].Method != "" {
		t.Fatalf("answer %q with frames %+v, want the response alone", r.contentType, r.frames)
	}
	if got := answerOf(t, r.frames[0]); got.Action != "decline" {
		t.Fatalf("the server received %+v", got)
	}
}

// An elicitation is never forwarded to a client while another session has
// a request in flight on the same server: it could be that session's.
func TestHTTPElicitationAmbiguousGoesToInbox(t *testing.T) {
	f := newFixture(t, gateway.Options{}, withInbox)
	other := newHTTP(t, f)
	other.initialize()
	other.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)
	slow := other.postAsync(3, "tools/call", `{"name":"mcp__a__slow","arguments":{"ms":60000,"started":true}}`)
	f.waitNotification(t, "a", "event/started")

	c := &httpClient{t: t, url: other.url}
	c.initializeWith(initElicit)
	c.rpc(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`)
	ch := c.postAsync(3, "tools/call", askArgs)
	pending := waitInbox(t, f.h, 1)
	if err := f.h.ResolveElicitation(pending[0].ID, mcpvisor.ElicitAccept, map[string]any{"name": "from the inbox"}); err != nil {
		t.Fatal(err)
	}
	r := awaitAsync(t, ch)
	for _, f := range r.frames {
		if f.Method == "elicitation/create" {
			t.Fatalf("the client was asked on its call's stream: %+v", r.frames)
		}
	}
	if got := answerOf(t, r.frames[0]); got.Action != "accept" || got.Content["name"] != "from the inbox" {
		t.Fatalf("the server received %+v", got)
	}

	other.notify("notifications/cancelled", `{"requestId":3}`)
	awaitAsync(t, slow)
}

func TestStdioElicitation(t *testing.T) {
	f := newFixture(t, gateway.Options{}, withInbox)
	c, _ := startStdio(t, f)
	c.send(request(1, "initialize", initElicit))
	c.await(1, nil)
	c.send(notification("notifications/initialized", ""))
	c.send(request(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`))
	c.await(2, skipListChanged(t))

	// ask answers the question it is given on stdout with what comes back
	// on stdin.
	askAndAnswer := func(id int, answer string) askAnswer {
		t.Helper()
		c.send(request(id, "tools/call", askArgs))
		asked := false
		res := c.await(id, func(fr frame) {
			if fr.Method == "notifications/tools/list_changed" {
				return
			}
			if fr.Method != "elicitation/create" {
				t.Fatalf("unexpected frame %+v", fr)
			}
			asked = true
			c.send(`{"jsonrpc":"2.0","id":` + string(fr.ID) + `,"result":` + answer + `}`)
		})
		if !asked {
			t.Fatal("the client was not asked")
		}
		return answerOf(t, res)
	}
	if got := askAndAnswer(3, `{"action":"decline"}`); got.Action != "decline" {
		t.Fatalf("decline: the server received %+v", got)
	}
	// Content that does not match the schema never reaches the server.
	if got := askAndAnswer(4, `{"action":"accept","content":{"name":5}}`); got.Action != "cancel" || got.Content != nil {
		t.Fatalf("invalid content: the server received %+v", got)
	}
	if got := askAndAnswer(5, `{"action":"accept","content":{"name":"Grace","n":1}}`); got.Action != "accept" || got.Content["name"] != "Grace" || got.Content["n"] != float64(1) {
		t.Fatalf("accept: the server received %+v", got)
	}

	// A call cancelled while its question is open: the question is
	// withdrawn (notifications/cancelled with the gateway's id), the call
	// gets no response, and the session goes on.
	c.send(request(6, "tools/call", askArgs))
	el := next(t, c.frames, "elicitation/create")
	for el.Method == "notifications/tools/list_changed" {
		el = next(t, c.frames, "elicitation/create")
	}
	if el.Method != "elicitation/create" {
		t.Fatalf("got %+v", el)
	}
	c.send(notification("notifications/cancelled", `{"requestId":6}`))
	withdrawn := next(t, c.frames, "notifications/cancelled")
	if withdrawn.Method != "notifications/cancelled" || !strings.Contains(string(withdrawn.Params), `"requestId":`+string(el.ID)) {
		t.Fatalf("got %+v, want the question withdrawn", withdrawn)
	}
	c.send(request(7, "ping", ""))
	if p := c.await(7, nil); p.Error != nil {
		t.Fatal(p.Error)
	}
	waitHistory(t, f.h, "mcp__a__ask", "cancelled")
	if n := len(f.h.Elicitations()); n != 0 {
		t.Fatalf("the inbox holds %d elicitations", n)
	}
}

func TestElicitationPassedForURLWithoutCapability(t *testing.T) {
	f := newFixture(t, gateway.Options{}, withInbox)
	c, _ := startStdio(t, f)
	c.send(request(1, "initialize", initElicit)) // form mode only
	c.await(1, nil)
	c.send(request(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`))
	c.await(2, skipListChanged(t))
	c.send(request(3, "tools/call", `{"name":"mcp__a__ask","arguments":{"mode":"url","message":"Sign in","url":"https://example.com/login"}}`))
	pending := waitInbox(t, f.h, 1)
	if pending[0].Mode != mcpvisor.ElicitURL || pending[0].URL != "https://example.com/login" {
		t.Fatalf("inbox: %+v", pending[0])
	}
	if err := f.h.ResolveElicitation(pending[0].ID, mcpvisor.ElicitAccept, nil); err != nil {
		t.Fatal(err)
	}
	if got := answerOf(t, c.await(3, skipListChanged(t))); got.Action != "accept" {
		t.Fatalf("the server received %+v", got)
	}

}

// skipListChanged accepts the list_changed an activation sends, whenever
// it comes, and fails on any other frame.
func skipListChanged(t *testing.T) func(frame) {
	return func(fr frame) {
		if fr.Method != "notifications/tools/list_changed" {
			t.Errorf("unexpected frame %+v", fr)
		}
	}
}

// startActivated is a stdio client of f that initialized with caps
// (requests 1 and 2 are used) and activated server a.
func startActivated(t *testing.T, f *fixture, caps string) *stdioClient {
	t.Helper()
	c, _ := startStdio(t, f)
	c.send(request(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"test","version":"1"}}`))
	c.await(1, nil)
	c.send(notification("notifications/initialized", ""))
	c.send(request(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`))
	c.await(2, skipListChanged(t))
	return c
}

// TestStdioSampling: a server's sampling/createMessage during a call goes
// to the client that made it, and the client's answer back to the server;
// a client that did not declare sampling is not asked, and the server is
// refused.
func TestStdioSampling(t *testing.T) {
	f := newFixture(t, gateway.Options{}, func(o *mcpvisor.Options) { o.CallSampling = true })
	for _, tc := range []struct {
		name, caps string
		asked      bool
	}{
		{"client samples", `{"sampling":{}}`, true},
		{"client cannot", `{}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startActivated(t, f, tc.caps)

			c.send(request(3, "tools/call", `{"name":"mcp__a__sample","arguments":{"prompt":"Say hi"}}`))
			var prompt string
			res := c.await(3, func(fr frame) {
				if fr.Method == "notifications/tools/list_changed" {
					return
				}
				if fr.Method != "sampling/createMessage" {
					t.Fatalf("unexpected frame %+v", fr)
				}
				prompt = string(fr.Params)
				c.send(`{"jsonrpc":"2.0","id":` + string(fr.ID) + `,"result":{"role":"assistant","content":{"type":"text","text":"hi from the client"},"model":"client-model"}}`)
			})
			r := decode[callResult](t, res.Result)
			if !tc.asked {
				if prompt != "" || !r.IsError || !strings.Contains(r.text(), "sampling/createMessage") {
					t.Fatalf("a client without sampling: asked %q, result %+v", prompt, r)
				}
				return
			}
			if !strings.Contains(prompt, `"Say hi"`) || !strings.Contains(prompt, `"maxTokens":50`) {
				t.Fatalf("the client was asked %s", prompt)
			}
			if r.IsError || r.text() != "hi from the client" || !strings.Contains(string(res.Result), `"model":"client-model"`) {
				t.Fatalf("the server received %s", res.Result)
			}
		})
	}
}

// TestStdioRoots: a server's roots/list during a call goes to the client
// that made it when that client declared roots, and its roots back to the
// server; a client that declared none is not asked, and the server gets
// the host's roots (Options.Roots), or none without them.
func TestStdioRoots(t *testing.T) {
	hostRoots := func(o *mcpvisor.Options) {
		o.Roots = func(context.Context, string) ([]protocol.Root, error) {
			return []protocol.Root{{URI: "file:///host", Name: "host"}}, nil
		}
	}
	for _, tc := range []struct {
		name, caps string
		host       bool
		want       string // a root the server received
	}{
		{"client lists roots", `{"roots":{"listChanged":true}}`, true, "file:///client"},
		{"client does not, host does", `{}`, true, "file:///host"},
		{"neither", `{}`, false, `"roots":[]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []func(*mcpvisor.Options){func(o *mcpvisor.Options) { o.CallRoots = true }}
			if tc.host {
				opts = append(opts, hostRoots)
			}
			f := newFixture(t, gateway.Options{}, opts...)
			c := startActivated(t, f, tc.caps)

			c.send(request(3, "tools/call", `{"name":"mcp__a__roots","arguments":{}}`))
			asked := false
			res := c.await(3, func(fr frame) {
				if fr.Method == "notifications/tools/list_changed" {
					return
				}
				if fr.Method != "roots/list" {
					t.Fatalf("unexpected frame %+v", fr)
				}
				asked = true
				c.send(`{"jsonrpc":"2.0","id":` + string(fr.ID) + `,"result":{"roots":[{"uri":"file:///client","name":"client"}]}}`)
			})
			r := decode[callResult](t, res.Result)
			if asked != strings.Contains(tc.caps, "roots") {
				t.Errorf("the client was asked: %v, with capabilities %s", asked, tc.caps)
			}
			if r.IsError || !strings.Contains(string(res.Result), tc.want) {
				t.Fatalf("the server received %s, want %s in it", res.Result, tc.want)
			}
		})
	}
}

// A URL elicitation forwarded to a client is followed, when the server
// says the interaction is done, by its notifications/elicitation/complete.
func TestElicitationURLComplete(t *testing.T) {
	f := newFixture(t, gateway.Options{}, withInbox)
	c, _ := startStdio(t, f)
	c.send(request(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{"url":{}}},"clientInfo":{"name":"test","version":"1"}}`))
	c.await(1, nil)
	c.send(request(2, "tools/call", `{"name":"activate_tools","arguments":{"groups":["a"]}}`))
	c.await(2, skipListChanged(t))
	c.send(request(3, "tools/call", `{"name":"mcp__a__ask","arguments":{"mode":"url","message":"Sign in","url":"https://example.com/login"}}`))
	var id string
	for id == "" {
		fr := next(t, c.frames, "elicitation/create")
		if fr.Method != "elicitation/create" {
			continue
		}
		var p struct {
			ElicitationID string `json:"elicitationId"`
		}
		if err := json.Unmarshal(fr.Params, &p); err != nil || p.ElicitationID == "" {
			t.Fatalf("url elicitation %s: %v", fr.Params, err)
		}
		id = p.ElicitationID
		c.send(`{"jsonrpc":"2.0","id":` + string(fr.ID) + `,"result":{"action":"accept"}}`)
	}
	completed := false
	res := c.await(3, func(fr frame) {
		if fr.Method == "notifications/elicitation/complete" && strings.Contains(string(fr.Params), id) {
			completed = true
		}
	})
	if got := answerOf(t, res); got.Action != "accept" {
		t.Fatalf("the server received %+v", got)
	}
	for !completed {
		fr := next(t, c.frames, "elicitation/complete")
		completed = fr.Method == "notifications/elicitation/complete" && strings.Contains(string(fr.Params), id)
	}
}
