package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/protocol"
)

// The read token of a stdio connection (conn_stdio_read.go), driven through
// a Runtime over a pipeServer. These tests run in synctest bubbles over
// in-memory pipes, so synctest.Wait tells when every goroutine is parked
// and the token can be looked at; time is the bubble's. The stress test at
// the end runs over real os.Pipe pairs, outside any bubble: a goroutine
// blocked in a real pipe's Read is not durably blocked for synctest.

func wait(t *testing.T, c <-chan callResult) callResult {
	t.Helper()
	select {
	case r := <-c:
		return r
	default:
		t.Fatal("the call has not returned")
		return callResult{}
	}
}

func held(t *testing.T, srv *pipeServer) pipeCall {
	t.Helper()
	select {
	case c := <-srv.calls:
		return c
	default:
		t.Fatal("no call reached the server")
		return pipeCall{}
	}
}

func assertToken(t *testing.T, pc *pipeConn, want tokenState) {
	t.Helper()
	if diff := cmp.Diff(want, pc.token()); diff != "" {
		t.Errorf("token (-want +got):\n%s", diff)
	}
}

// One caller at a time: it reads its own response, takes the token at once
// for its next call, and the reader goroutine takes it back after
// leadGrace, reads what the server says meanwhile, and hands it over to the
// next caller when asked.
func TestStdioLeaderOneCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &eventLog{}
		srv := newPipeServer(t, false)
		rt := startPipe(t, srv, ServerSpec{}, Options{OnEvent: ev.add})
		synctest.Wait() // the fast path is published just after the state
		pc := srv.last()
		ctx := context.Background()
		assertToken(t, pc, tokenState{Running: true})
		if n := pc.mem.reading(); n != 1 {
			t.Fatalf("%d reads wait on stdout, want the reader goroutine's", n)
		}

		// The reader goroutine is taken out of its Read and hands over.
		a := goCall(ctx, rt, "wait", 1)
		synctest.Wait()
		call := held(t, srv)
		assertToken(t, pc, tokenState{Leader: `{"i":1}`})
		if n := pc.mem.reading(); n != 1 {
			t.Fatalf("%d reads wait on stdout, want the leader's", n)
		}
		call.answer()
		synctest.Wait()
		wait(t, a).check(t)
		assertToken(t, pc, tokenState{Free: true})

		// Within leadGrace the next call takes the free token directly.
		start := time.Now()
		b := goCall(ctx, rt, "wait", 2)
		synctest.Wait()
		assertToken(t, pc, tokenState{Leader: `{"i":2}`})
		held(t, srv).answer()
		synctest.Wait()
		wait(t, b).check(t)
		if d := time.Since(start); d != 0 {
			t.Errorf("the second call took %s of the bubble's clock, want none", d)
		}

		// After leadGrace the reader goroutine reads again, server
		// notifications included.
		time.Sleep(leadGrace)
		synctest.Wait()
		assertToken(t, pc, tokenState{Running: true})
		pc.write(protocol.AppendNotification(nil, "notifications/custom", json.RawMessage(`{"k":1}`)))
		synctest.Wait()
		if n := ev.count(EventNotification); n != 1 {
			t.Errorf("%d notification events, want 1", n)
		}

		c := goCall(ctx, rt, "wait", 3)
		synctest.Wait()
		assertToken(t, pc, tokenState{Leader: `{"i":3}`})
		held(t, srv).answer()
		synctest.Wait()
		wait(t, c).check(t)
		if st, _ := rt.ServerStatus("p"); st.BannerLines != 0 || st.State != StateReady {
			t.Errorf("status %s with %d bad lines", st.State, st.BannerLines)
		}
	})
}

// Several callers: the first leads and routes the others' responses, the
// second waits in line and leads next, the rest are followers that the
// leader or the reader goroutine answers, whatever the order of answers.
func TestStdioLeaderSeveralCallers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, false)
		rt := startPipe(t, srv, ServerSpec{}, Options{})
		synctest.Wait() // the fast path is published just after the state
		pc := srv.last()
		ctx := context.Background()

		a := goCall(ctx, rt, "wait", 1)
		synctest.Wait()
		ca := held(t, srv)
		b := goCall(ctx, rt, "wait", 2)
		synctest.Wait()
		cb := held(t, srv)
		assertToken(t, pc, tokenState{Leader: `{"i":1}`, Next: `{"i":2}`})
		cb.answer() // read by a, for b, which leaves the line
		synctest.Wait()
		wait(t, b).check(t)
		assertToken(t, pc, tokenState{Leader: `{"i":1}`})
		ca.answer()
		synctest.Wait()
		wait(t, a).check(t)

		// Both answers in one write: the leader routes the next's and
		// then reads its own, and the next, answered, may see the token
		// come with it: it must not read for an answer it has.
		for i := range 8 {
			a, b := goCall(ctx, rt, "wait", 2*i), goCall(ctx, rt, "wait", 2*i+1)
			synctest.Wait()
			c1, c2 := held(t, srv), held(t, srv)
			c1.pc.writeRaw(append(append(echoResult(c2.id, c2.args), '\n'), append(echoResult(c1.id, c1.args), '\n')...))
			synctest.Wait()
			wait(t, a).check(t)
			wait(t, b).check(t)
		}

		for _, order := range [][]int{{3, 1, 2, 0}, {0, 1, 2, 3}, {1, 0, 3, 2}} {
			var results []<-chan callResult
			var calls []pipeCall
			for i := range 4 {
				results = append(results, goCall(ctx, rt, "wait", 10+i))
				synctest.Wait()
				calls = append(calls, held(t, srv))
			}
			// Two in flight at most lead: the third and fourth follow.
			assertToken(t, pc, tokenState{Leader: `{"i":10}`, Next: `{"i":11}`})
			for _, i := range order {
				calls[i].answer()
				synctest.Wait()
				wait(t, results[i]).check(t)
			}
		}
		synctest.Wait()
		if st := pc.token(); st.Leader != "" || st.Next != "" {
			t.Errorf("token left with %+v", st)
		}
	})
}

// A leader whose context ends while half its response is on the pipe hands
// the token back in the middle of the line: the reader goroutine reads the
// rest, nothing is lost or misread, and the late response is dropped as an
// unknown id. The same when the call's timeout ends its turn.
func TestStdioLeaderStopsMidLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		free bool // the token is free when the call starts: it leads at once
		end  func(cancel context.CancelFunc)
		want error
	}{
		{"cancelled", false, func(cancel context.CancelFunc) { cancel() }, ErrCancelled},
		{"timeout", false, func(context.CancelFunc) { time.Sleep(5 * time.Second) }, ErrTimeout},
		{"cancelled at once", true, func(cancel context.CancelFunc) { cancel() }, ErrCancelled},
		{"timeout at once", true, func(context.CancelFunc) { time.Sleep(5 * time.Second) }, ErrTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newPipeServer(t, false)
				rt := startPipe(t, srv, ServerSpec{CallTimeout: 5 * time.Second}, Options{})
				synctest.Wait() // the fast path is published just after the state
				pc := srv.last()
				if tc.free {
					first := goCall(context.Background(), rt, "wait", 0)
					synctest.Wait()
					held(t, srv).answer()
					synctest.Wait()
					wait(t, first).check(t)
					assertToken(t, pc, tokenState{Free: true})
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				start := time.Now()
				a := goCall(ctx, rt, "wait", 1)
				synctest.Wait()
				call := held(t, srv)
				assertToken(t, pc, tokenState{Leader: `{"i":1}`})
				frame := echoResult(call.id, call.args)
				pc.writeRaw(frame[:len(frame)/2])
				synctest.Wait()
				tc.end(cancel)
				synctest.Wait()
				if r := wait(t, a); !errors.Is(r.err, tc.want) {
					t.Fatalf("call = %s, %v; want %v", r.res, r.err, tc.want)
				}
				if d := time.Since(start); tc.want == ErrTimeout && d != 5*time.Second {
					t.Errorf("timed out after %s, want 5s", d)
				}
				assertToken(t, pc, tokenState{Running: true})
				pc.writeRaw(append(frame[len(frame)/2:], '\n'))
				synctest.Wait()
				if got := pc.got(); !slices.Contains(got, protocol.MethodCancelled) {
					t.Errorf("the server got %v, no notifications/cancelled", got)
				}
				r := goCall(context.Background(), rt, "echo", 2)
				synctest.Wait()
				wait(t, r).check(t)
				if st, _ := rt.ServerStatus("p"); st.BannerLines != 0 {
					t.Errorf("%d bad lines: a frame was cut", st.BannerLines)
				}
			})
		})
	}
}

// While a caller leads, what the server sends on its own is handled as the
// reader goroutine handles it: a ping is answered, an event emitted, a
// list_changed makes the actor list tools again, whose answer the leader
// reads for it too.
func TestStdioLeaderRoutesServerTraffic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev := &eventLog{}
		srv := newPipeServer(t, false)
		rt := startPipe(t, srv, ServerSpec{}, Options{OnEvent: ev.add})
		synctest.Wait() // the fast path is published just after the state
		pc := srv.last()
		a := goCall(context.Background(), rt, "wait", 1)
		synctest.Wait()
		call := held(t, srv)
		pc.write(protocol.AppendRequest(nil, 77, protocol.MethodPing, nil))
		pc.write(protocol.AppendNotification(nil, "notifications/custom", json.RawMessage(`{}`)))
		pc.write(protocol.AppendNotification(nil, protocol.MethodToolsListChanged, nil))
		synctest.Wait()
		assertToken(t, pc, tokenState{Leader: `{"i":1}`})
		select {
		case m := <-pc.answers:
			if string(m.ID) != "77" || m.Error != nil {
				t.Errorf("ping answered %+v", m)
			}
		default:
			t.Error("the ping was not answered")
		}
		if n := ev.count(EventNotification); n != 1 {
			t.Errorf("%d notification events, want 1", n)
		}
		lists := 0
		for _, m := range pc.got() {
			if m == protocol.MethodToolsList {
				lists++
			}
		}
		if lists != 2 {
			t.Errorf("tools/list sent %d times, want 2 (the handshake's and list_changed's)", lists)
		}
		call.answer()
		synctest.Wait()
		wait(t, a).check(t)
	})
}

// A bad line and oversized frames read by a leader are reported as the
// reader goroutine reports them; an oversized answer fails its call.
func TestStdioLeaderBadAndOversizedFrames(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, false)
		rt := startPipe(t, srv, ServerSpec{MaxFrame: 1024}, Options{})
		synctest.Wait() // the fast path is published just after the state
		pc := srv.last()
		a := goCall(context.Background(), rt, "wait", 1)
		synctest.Wait()
		call := held(t, srv)
		big := json.RawMessage(`"` + strings.Repeat("x", 2000) + `"`)
		pc.writeRaw([]byte("this is not json-rpc\n"))
		pc.write(protocol.AppendResult(nil, json.RawMessage(`999`), big))
		synctest.Wait()
		assertToken(t, pc, tokenState{Leader: `{"i":1}`})
		pc.write(protocol.AppendResult(nil, call.id, big))
		synctest.Wait()
		if r := wait(t, a); !errors.Is(r.err, protocol.ErrFrameTooLarge) {
			t.Fatalf("call = %v, want ErrFrameTooLarge", r.err)
		}
		b := goCall(context.Background(), rt, "echo", 2)
		synctest.Wait()
		wait(t, b).check(t)
		if st, _ := rt.ServerStatus("p"); st.BannerLines != 1 || st.State != StateReady {
			t.Errorf("status %s with %d bad lines, want ready with 1", st.State, st.BannerLines)
		}
	})
}

// The server dies while a caller leads: the leader reads the end of stdout,
// reports it as the reader goroutine would, and its call fails with the
// reason; the reader goroutine is gone with the connection.
func TestStdioLeaderServerDies(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, false)
		rt := startPipe(t, srv, ServerSpec{Restart: noJitter}, Options{})
		synctest.Wait() // the fast path is published just after the state
		pc := srv.last()
		a := goCall(context.Background(), rt, "wait", 1)
		synctest.Wait()
		held(t, srv)
		assertToken(t, pc, tokenState{Leader: `{"i":1}`})
		pc.closeOut()
		synctest.Wait()
		if !pc.conn.rd.ended {
			t.Error("the read side did not end")
		}
		// The actor waits connGracePeriod for the exit status, then fails
		// the calls in flight.
		time.Sleep(connGracePeriod)
		synctest.Wait()
		r := wait(t, a)
		if r.err == nil || !strings.Contains(r.err.Error(), "stdout closed") {
			t.Fatalf("call = %v, want the end of stdout as the reason", r.err)
		}
		// The server restarts (after the policy's 1s) and answers again.
		time.Sleep(time.Second)
		synctest.Wait()
		b := goCall(context.Background(), rt, "echo", 2)
		synctest.Wait()
		wait(t, b).check(t)
	})
}

// Closing the host while a caller leads takes it out of its Read: the call
// fails and Close returns with nothing left running (the bubble checks).
func TestStdioCloseWhileLeading(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, false)
		rt := New(Options{dial: srv.dial})
		spec := ServerSpec{Name: "p", Command: "pipe-server", Enabled: true}
		if err := rt.Register(context.Background(), spec); err != nil {
			t.Fatal(err)
		}
		if err := rt.WaitReady(context.Background(), "p"); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		a := goCall(context.Background(), rt, "wait", 1)
		synctest.Wait()
		held(t, srv)
		assertToken(t, srv.last(), tokenState{Leader: `{"i":1}`})
		if err := rt.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		synctest.Wait()
		if r := wait(t, a); r.err == nil {
			t.Fatal("the call succeeded after Close")
		}
	})
}

// A call that watches progress does not lead; sent while the token is
// free, it has the reader goroutine take the token back at once, so that
// its answer never waits for leadGrace.
func TestStdioFreeTokenReclaimedForFollower(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newPipeServer(t, false)
		rt := startPipe(t, srv, ServerSpec{}, Options{})
		synctest.Wait() // the fast path is published just after the state
		pc := srv.last()
		first := goCall(context.Background(), rt, "wait", 1)
		synctest.Wait()
		held(t, srv).answer()
		synctest.Wait()
		wait(t, first).check(t)
		assertToken(t, pc, tokenState{Free: true})
		start := time.Now()
		res := make(chan error, 1)
		go func() {
			_, err := rt.Call(context.Background(), "mcp__p__wait", json.RawMessage(`{"i":2}`), nil, &CallOptions{OnProgress: func(Progress) {}})
			res <- err
		}()
		synctest.Wait()
		assertToken(t, pc, tokenState{Running: true})
		held(t, srv).answer()
		synctest.Wait()
		select {
		case err := <-res:
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatal("the call has not returned")
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the call took %s of the bubble's clock, want none", d)
		}
	})
}

// A frame a leader cannot hand on without waiting for flow credit goes to
// the reader goroutine with the token, which delivers it, and the frames
// after it, in order once credit frees.
func TestStdoutReaderCarriesFrameBeyondCredit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd, r, out, deliveries := newTestReader(t, ServerSpec{Name: "s", MaxFrame: 4096})
		delivered := func() []string {
			var methods []string
			for _, m := range deliveries() {
				if in, ok := m.(*inboundMsg); ok {
					methods = append(methods, in.msg.Method)
				}
			}
			return methods
		}
		full := int(r.flow.limit)
		r.flow.acquire(full, nil) // the actor is behind: no credit left

		m := &callMsg{tool: "t", args: json.RawMessage(`{}`), reply: make(chan callReply, 1)}
		if _, err := r.pending.add(&pendingReq{kind: reqCall, call: m}); err != nil {
			t.Fatal(err)
		}
		grant := rd.enqueue(m, true)
		synctest.Wait()
		<-grant
		led := make(chan bool, 1)
		go func() {
			_, ok := rd.lead(context.Background(), m, time.Now().Add(time.Hour))
			led <- ok
		}()
		synctest.Wait()
		write := func(frame []byte) { out.Write(append(frame, '\n')) }
		write(protocol.AppendNotification(nil, "first", nil))
		synctest.Wait()
		if ok := <-led; ok {
			t.Fatal("the leader got an answer")
		}
		write(protocol.AppendNotification(nil, "second", nil))
		write(protocol.AppendResult(nil, jsonID(m.id), json.RawMessage(`{}`)))
		synctest.Wait()
		if got := delivered(); len(got) != 0 {
			t.Errorf("delivered %v without credit", got)
		}
		r.flow.release(full)
		synctest.Wait()
		r.flow.release(flowMinCharge) // the actor handles "first"
		synctest.Wait()
		if diff := cmp.Diff([]string{"first", "second"}, delivered()); diff != "" {
			t.Errorf("delivered (-want +got):\n%s", diff)
		}
		select {
		case rep := <-m.reply:
			if rep.err != nil {
				t.Errorf("reply: %v", rep.err)
			}
		default:
			t.Error("the call was not answered")
		}
	})
}

// newTestReader runs a stdoutReader over an in-memory pipe, its deliveries
// recorded, until the test ends.
func newTestReader(t *testing.T, spec ServerSpec) (*stdoutReader, *router, *memPipe, func() []any) {
	var mu sync.Mutex
	var delivered []any
	spec = spec.WithDefaults()
	r := newRouter(1, &spec, func(m any) {
		mu.Lock()
		delivered = append(delivered, m)
		mu.Unlock()
	}, nil)
	out := newMemPipe(0)
	stop := make(chan struct{})
	rd := newStdoutReader(1, out, spec.MaxFrame, &r, stop)
	done := make(chan struct{})
	go func() {
		defer close(done)
		rd.run()
	}()
	t.Cleanup(func() {
		close(stop)
		out.closeRead()
		<-done
	})
	return rd, &r, out, func() []any {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(delivered)
	}
}

// A caller whose answer the reader goroutine routed before it handed the
// token over returns that answer without reading.
func TestStdoutReaderAnswerBeforeToken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rd, r, out, _ := newTestReader(t, ServerSpec{Name: "s"})
		m := &callMsg{tool: "t", args: json.RawMessage(`{}`), reply: make(chan callReply, 1)}
		if _, err := r.pending.add(&pendingReq{kind: reqCall, call: m}); err != nil {
			t.Fatal(err)
		}
		out.Write(append(protocol.AppendResult(nil, jsonID(m.id), json.RawMessage(`{"ok":1}`)), '\n'))
		synctest.Wait()
		grant := rd.enqueue(m, true)
		synctest.Wait()
		select {
		case <-grant:
		default:
			t.Fatal("no token")
		}
		led := make(chan callReply, 1)
		go func() {
			rep, _ := rd.lead(context.Background(), m, time.Now().Add(time.Hour))
			led <- rep
		}()
		synctest.Wait()
		select {
		case rep := <-led:
			if string(rep.result) != `{"ok":1}` {
				t.Errorf("lead = %s, %v", rep.result, rep.err)
			}
		default:
			t.Fatal("the leader waits for an answer it has")
		}
	})
}

// Frames from concurrent callers reach stdin whole and, per caller, in
// order, whether the pipe takes them at once or the writer goroutine waits
// for room; a pipe that takes nothing for stallThreshold refuses more, and
// the connection reports the server unhealthy, once.
func TestStdioWritePath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in := newMemPipe(100)
		c, reports := memStdioConn(t, in)

		const senders, frames = 8, 50
		var wg sync.WaitGroup
		for s := range senders {
			wg.Go(func() {
				for k := range frames {
					params := json.RawMessage(fmt.Sprintf(`{"s":%d,"k":%d,"pad":%q}`, s, k, strings.Repeat("p", rand.IntN(300))))
					if err := c.send(notificationOut("n", params)); err != nil {
						t.Errorf("send: %v", err)
					}
				}
			})
		}
		fr := protocol.NewFrameReader(in, 0)
		next := make([]int, senders)
		for range senders * frames {
			frame, err := fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			msg, err := protocol.Classify(frame)
			if err != nil {
				t.Fatalf("frame %q: %v", frame, err)
			}
			var p struct{ S, K int }
			json.Unmarshal(msg.Params, &p)
			if p.K != next[p.S] {
				t.Fatalf("sender %d: frame %d after %d", p.S, p.K, next[p.S]-1)
			}
			next[p.S]++
		}
		wg.Wait()

		// No one reads: the pipe fills, the writer goroutine waits, and
		// once it has waited stallThreshold new frames are refused.
		for range 10 {
			if err := c.send(notificationOut("n", json.RawMessage(`{"pad":"`+strings.Repeat("q", 60)+`"}`))); err != nil {
				t.Fatalf("send before the stall: %v", err)
			}
		}
		synctest.Wait()
		// Reading some of it is progress: the stall is counted from there.
		time.Sleep(stallThreshold / 2)
		if _, err := in.Read(make([]byte, 10)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(stallThreshold/2 + time.Millisecond)
		synctest.Wait()
		if len(reports) > 0 {
			t.Fatalf("reported %#v while the server still read", <-reports)
		}
		time.Sleep(stallThreshold / 2)
		synctest.Wait()
		select {
		case m := <-reports:
			u, ok := m.(*connUnhealthy)
			if !ok || u.gen != 1 || !errors.Is(u.err, ErrNotReading) {
				t.Fatalf("reported %#v, want connUnhealthy with ErrNotReading", m)
			}
		default:
			t.Fatal("a stalled stdin was not reported")
		}
		if err := c.send(notificationOut("n", nil)); !errors.Is(err, ErrNotReading) {
			t.Errorf("send to a stalled pipe: %v, want ErrNotReading", err)
		}
		if len(reports) > 0 {
			t.Errorf("reported again: %#v", <-reports)
		}
	})
}

// memStdioConn is a connection of generation 1 writing to in, its stdout
// an empty in-memory pipe, and the channel of what it reports to its
// actor; it is closed when the test ends.
func memStdioConn(t *testing.T, in *memPipe) (*stdioConn, chan any) {
	out := newMemPipe(0)
	spec := ServerSpec{Name: "s"}.WithDefaults()
	reports := make(chan any, 16)
	c := newStdioConn(1, &spec, in, out, func(context.Context) {
		in.closeRead()
		out.closeRead()
	}, func(m any) { reports <- m }, nil)
	t.Cleanup(func() { c.close(context.Background()) })
	return c, reports
}

// The drain watch: a frame sent to a ready server that owes nothing must
// leave the pipe within stallThreshold, or the server is not reading; a
// server that reads it, reads some of it, is busy with a request, has a
// cancelled request unanswered, or is still in its handshake is not judged.
func TestStdioDrainWatch(t *testing.T) {
	type setup struct {
		name    string
		ready   bool
		prepare func(c *stdioConn, in *memPipe) // before the watched frame
		during  func(in *memPipe)               // half a threshold after it
		report  bool                            // the server counts as not reading
	}
	frame := notificationOut("n", json.RawMessage(`{"pad":"`+strings.Repeat("x", 100)+`"}`))
	for _, tc := range []setup{
		{name: "deaf", ready: true, report: true},
		{name: "in the handshake", ready: false},
		{name: "reads", ready: true, during: func(in *memPipe) { in.Read(make([]byte, 4096)) }},
		{name: "reads slowly", ready: true, during: func(in *memPipe) { in.Read(make([]byte, 10)) }},
		{name: "busy with a request", ready: true, prepare: func(c *stdioConn, in *memPipe) {
			c.pending().add(&pendingReq{kind: reqToolsList})
		}},
		{name: "cancelled unanswered", ready: true, prepare: func(c *stdioConn, in *memPipe) {
			c.pending().cancelled.Store(true)
		}},
		{name: "cancelled, answered since", ready: true, report: true, prepare: func(c *stdioConn, in *memPipe) {
			c.pending().cancelled.Store(true)
			c.router.handOff(&protocol.Message{Kind: protocol.KindResponse, ID: json.RawMessage("77")})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in := newMemPipe(0)
				c, reports := memStdioConn(t, in)
				if tc.ready {
					c.ready()
				}
				if tc.prepare != nil {
					tc.prepare(c, in)
				}
				if err := c.send(frame); err != nil {
					t.Fatal(err)
				}
				time.Sleep(stallThreshold / 2)
				if tc.during != nil {
					tc.during(in)
				}
				time.Sleep(stallThreshold/2 + time.Millisecond)
				synctest.Wait()
				if tc.report {
					select {
					case m := <-reports:
						if u, ok := m.(*connUnhealthy); !ok || !errors.Is(u.err, ErrNotReading) {
							t.Fatalf("reported %#v, want connUnhealthy with ErrNotReading", m)
						}
					default:
						t.Fatal("a frame left in the pipe for the threshold was not reported")
					}
					if err := c.send(frame); !errors.Is(err, ErrNotReading) {
						t.Errorf("send after the report = %v, want ErrNotReading", err)
					}
					return
				}
				// Long past the threshold, still nothing: a server that
				// read some and stopped is judged from where it stopped.
				time.Sleep(stallThreshold / 4)
				synctest.Wait()
				if len(reports) > 0 {
					t.Fatalf("reported %#v", <-reports)
				}
				if tc.name == "reads slowly" {
					time.Sleep(stallThreshold)
					synctest.Wait()
					if len(reports) != 1 {
						t.Fatal("a server that read part of a frame and then nothing for the threshold was not reported")
					}
				}
			})
		})
	}
}

// A real pipe tells how much of what was written waits at its write end.
func TestFileStdinUnread(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	in, err := newFileStdin(w)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := in.writeNow([]byte("0123456789")); n != 10 || err != nil {
		t.Fatalf("writeNow = %d, %v", n, err)
	}
	if _, err := r.Read(make([]byte, 4)); err != nil {
		t.Fatal(err)
	}
	n, ok := in.unread()
	if runtime.GOOS == "linux" && (!ok || n != 6) {
		t.Fatalf("unread = %d, %v, want 6, true", n, ok)
	}
}

// Many callers at once over real pipes, some cancelled at random moments,
// the server answering in its own order: every call that returns without
// error has its own answer, every other one was cancelled, and the only
// responses the host drops as unknown are those of cancelled calls.
func TestStdioLeaderStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress")
	}
	dropped := &droppedIDs{}
	srv := newPipeServer(t, true)
	rt := startPipe(t, srv, ServerSpec{}, Options{Logger: slog.New(dropped)})
	// The server answers the "wait" calls in bursts, in random order.
	stopServer := make(chan struct{})
	var serverDone sync.WaitGroup
	serverDone.Go(func() {
		var heldCalls []pipeCall
		for {
			select {
			case c := <-srv.calls:
				if c.pc != nil { // else a marker: answer what is held
					heldCalls = append(heldCalls, c)
					if len(heldCalls) < 1+rand.IntN(8) {
						continue
					}
				}
			case <-stopServer:
				return
			}
			rand.Shuffle(len(heldCalls), func(i, j int) { heldCalls[i], heldCalls[j] = heldCalls[j], heldCalls[i] })
			for _, c := range heldCalls {
				c.answer()
			}
			heldCalls = heldCalls[:0]
		}
	})
	// Bursts shorter than 8 calls are flushed by the callers that follow;
	// the last ones by this ticker.
	flush := time.NewTicker(time.Millisecond)
	defer flush.Stop()
	serverDone.Go(func() {
		for {
			select {
			case <-flush.C:
				srv.calls <- pipeCall{} // a marker: answered as a no-op below
			case <-stopServer:
				return
			}
		}
	})

	const callers, calls = 64, 150
	var cancelled sync.Map // args → true
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			for k := range calls {
				tool := "wait"
				if k%3 == 0 {
					tool = "echo"
				}
				args := json.RawMessage(fmt.Sprintf(`{"c":%d,"k":%d}`, c, k))
				ctx, cancel := context.WithCancel(context.Background())
				if rand.IntN(8) == 0 {
					time.AfterFunc(time.Duration(rand.IntN(200))*time.Microsecond, cancel)
				}
				res, err := rt.Call(ctx, "mcp__p__"+tool, args, nil, nil)
				cancel()
				switch {
				case err == nil:
					callResult{args: string(args), res: res}.check(t)
					ok.Add(1)
				case errors.Is(err, ErrCancelled):
					cancelled.Store(string(args), true)
					failed.Add(1)
				default:
					t.Errorf("call %s: %v", args, err)
				}
			}
		})
	}
	wg.Wait()
	close(stopServer)
	serverDone.Wait()
	t.Logf("%d calls answered, %d cancelled", ok.Load(), failed.Load())
	if st, _ := rt.ServerStatus("p"); st.BannerLines != 0 || st.State != StateReady {
		t.Errorf("status %s with %d bad lines", st.State, st.BannerLines)
	}
	// Every unknown response is a cancelled call's.
	pc := srv.last()
	byID := map[string]string{}
	pc.mu.Lock()
	for _, frame := range pc.received {
		msg, _ := protocol.Classify(frame)
		if msg.Method == protocol.MethodToolsCall {
			var p struct {
				Arguments json.RawMessage `json:"arguments"`
			}
			json.Unmarshal(msg.Params, &p)
			byID[string(msg.ID)] = string(p.Arguments)
		}
	}
	pc.mu.Unlock()
	for _, id := range dropped.list() {
		if _, was := cancelled.Load(byID[id]); !was {
			t.Errorf("the response to %s (%s), not cancelled, was dropped", id, byID[id])
		}
	}
}

// droppedIDs is a slog handler that keeps the ids of responses the actor
// dropped as unknown.
type droppedIDs struct {
	mu  sync.Mutex
	ids []string
}

func (d *droppedIDs) Enabled(context.Context, slog.Level) bool { return true }
func (d *droppedIDs) WithAttrs([]slog.Attr) slog.Handler       { return d }
func (d *droppedIDs) WithGroup(string) slog.Handler            { return d }
func (d *droppedIDs) Handle(_ context.Context, r slog.Record) error {
	if r.Message != "response with unknown id dropped" {
		return nil
	}
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "id" {
			d.mu.Lock()
			d.ids = append(d.ids, a.Value.String())
			d.mu.Unlock()
		}
		return true
	})
	return nil
}

func (d *droppedIDs) list() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.ids)
}

// Where the server's CPU time can be read, a server that read nothing for
// the threshold but ran meanwhile (busy, or starved on a loaded machine)
// gets another threshold; one that neither read nor ran for a threshold
// after the first look is not reading.
func TestStdioDrainWatchAsksWhetherTheServerRan(t *testing.T) {
	frame := notificationOut("n", json.RawMessage(`{"pad":"x"}`))
	for _, tc := range []struct {
		name   string
		runs   bool
		report bool
	}{
		{name: "ran", runs: true},
		{name: "idle", runs: false, report: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in := newMemPipe(0)
				c, reports := memStdioConn(t, in)
				var cpu atomic.Int64
				c.serverCPU = func() (int64, bool) {
					if tc.runs {
						return cpu.Add(1), true
					}
					return 7, true
				}
				c.ready()
				if err := c.send(frame); err != nil {
					t.Fatal(err)
				}
				time.Sleep(stallThreshold + time.Millisecond)
				synctest.Wait()
				if len(reports) > 0 {
					t.Fatalf("reported %#v at the first look", <-reports)
				}
				time.Sleep(stallThreshold)
				synctest.Wait()
				if got := len(reports) > 0; got != tc.report {
					t.Fatalf("reported after two thresholds = %v, want %v", got, tc.report)
				}
				if !tc.report {
					time.Sleep(5 * stallThreshold)
					synctest.Wait()
					if len(reports) > 0 {
						t.Fatalf("a server that runs was reported: %#v", <-reports)
					}
				}
			})
		})
	}
}

func TestProcessCPU(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("read from /proc on Linux only")
	}
	before, ok := processCPU(os.Getpid())
	if !ok {
		t.Fatal("no CPU time for this process")
	}
	// Spin until the ticks move (a tick is 10 ms of CPU), for at most 10 s
	// of a loaded machine's wall time.
	after := before
	for end := time.Now().Add(10 * time.Second); after <= before && time.Now().Before(end); {
		if after, ok = processCPU(os.Getpid()); !ok {
			t.Fatal("no CPU time for this process")
		}
	}
	if after <= before {
		t.Fatalf("CPU ticks still %d after 10 s of spinning", after)
	}
	if _, ok := processCPU(1 << 30); ok {
		t.Fatal("CPU time of a process that does not exist")
	}
}
