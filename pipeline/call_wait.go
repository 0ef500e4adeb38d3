package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// A call may wait for a person: an elicitation its server sent, an
// approval of a host tool. That time is the person's, not the server's:
// Latency leaves it out, so a password typed in two minutes is no
// two-minute p99, and Waited keeps it apart. So is the time a call made
// while its server starts waits for it (ServerStart): the spawn is the
// server's, not the call's.

// personWait sums the time a call spent waiting for a person. Waits may
// overlap (two questions at once): time is counted once while any runs.
type personWait struct {
	mu    sync.Mutex
	n     int
	since time.Time
	total time.Duration
}

// Waiting notes that the call waits for a person's answer (an
// elicitation, an approval) from now until done is called; done may be
// called more than once. Safe for concurrent use, from any goroutine.
func (c *Call) Waiting() (done func()) {
	w := &c.wait
	w.mu.Lock()
	if w.n == 0 {
		w.since = time.Now()
	}
	w.n++
	w.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.n--; w.n == 0 {
				w.total += time.Since(w.since)
			}
		})
	}
}

// Waited is how long the call has waited for a person so far (Waiting).
// Safe for concurrent use.
func (c *Call) Waited() time.Duration {
	w := &c.wait
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n > 0 {
		return w.total + time.Since(w.since)
	}
	return w.total
}

// Latency is the call's time since Start less the time it waited for a
// person (Waited) and for its server to start (ServerStart): what the
// history, the metrics and the operations page count as its duration.
// The one place those waits are taken out.
func (c *Call) Latency() time.Duration {
	return max(time.Since(c.Start)-c.Waited()-c.ServerStart, 0)
}

type callKey struct{}

// CallOf is the call whose stages ctx runs in (Pipeline.Run put it
// there), or nil.
func CallOf(ctx context.Context) *Call {
	c, _ := ctx.Value(callKey{}).(*Call)
	return c
}

// callPrefix makes this process's call ids unlike another's (a restart,
// another member of a cluster); callSeq numbers them.
var (
	callPrefix = func() string {
		var b [4]byte
		_, _ = rand.Read(b[:])
		return strconv.FormatUint(uint64(binary.BigEndian.Uint32(b[:])), 36)
	}()
	callSeq atomic.Uint64
)

// newCallID returns a new Call.ID: short enough to read out, unique
// within the process and unlikely to repeat across processes.
func newCallID() string {
	return callPrefix + "-" + strconv.FormatUint(callSeq.Add(1), 10)
}

// inflight keeps the requests in flight past the flows stage, by server,
// so a question a server sends can be told whose it is. Its slices keep
// their capacity: a request adds no allocation once its server has had
// as many in flight.
type inflight struct {
	mu       sync.Mutex
	byServer map[string]*[]*Call
}

func (f *inflight) add(c *Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byServer == nil {
		f.byServer = map[string]*[]*Call{}
	}
	list := f.byServer[c.Server]
	if list == nil {
		list = new([]*Call)
		f.byServer[c.Server] = list
	}
	*list = append(*list, c)
}

func (f *inflight) remove(c *Call) {
	f.mu.Lock()
	defer f.mu.Unlock()
	list := f.byServer[c.Server]
	for i, x := range *list {
		if x == c {
			last := len(*list) - 1
			(*list)[i] = (*list)[last]
			(*list)[last] = nil
			*list = (*list)[:last]
			return
		}
	}
}

// InFlight is the request in flight to server through the pipeline when
// there is exactly one, else nil: a question the server sends meanwhile
// is that request's. Safe for concurrent use.
func (p *Pipeline) InFlight(server string) *Call {
	f := &p.inflight
	f.mu.Lock()
	defer f.mu.Unlock()
	if list := f.byServer[server]; list != nil && len(*list) == 1 {
		return (*list)[0]
	}
	return nil
}
