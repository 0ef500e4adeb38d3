package gateway

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
)

// Resumable streams (2025-11-25, SEP-1699). A legacy session's SSE streams
// carry event ids: a tools/call answered as a stream starts with a priming
// event (an id and no data) and a retry hint, and the GET stream's events
// have ids too. Each stream keeps its recent events, so a client whose
// connection broke sends GET with Last-Event-ID and gets what it missed,
// then the rest of that stream as it comes. The call goes on meanwhile: it
// belongs to the session, not to the connection. Modern clients have no
// resumption (a broken stream means a new request), so their streams
// carry no ids.

// Bounds of what a session keeps for resumption.
const (
	// streamEvents is how many recent events a stream keeps.
	streamEvents = 256
	// streamBytes bounds the bytes of those events.
	streamBytes = 4 << 20
	// endedStreams is how many finished streams a session keeps for a
	// client that resumes late.
	endedStreams = 16
	// retryMillis is the reconnection delay the streams advise.
	retryMillis = 1000
)

// standaloneStream is the id of a session's GET stream.
const standaloneStream = 0

// eventLog is one stream's recent events.
type eventLog struct {
	id int64

	mu     sync.Mutex
	events [][]byte // the frames of seq first … first+len-1
	first  int64
	bytes  int
	ended  bool          // the stream's last event (its response) is in
	wake   chan struct{} // closed at the next append or end
}

func newEventLog(id int64) *eventLog {
	return &eventLog{id: id, first: 1, wake: make(chan struct{})}
}

// eventID is the SSE id of a stream's event seq: "<stream>-<seq>".
func eventID(stream, seq int64) string {
	return strconv.FormatInt(stream, 10) + "-" + strconv.FormatInt(seq, 10)
}

// parseEventID splits an id eventID made.
func parseEventID(id string) (stream, seq int64, ok bool) {
	a, b, found := strings.Cut(id, "-")
	if !found {
		return 0, 0, false
	}
	stream, err1 := strconv.ParseInt(a, 10, 64)
	seq, err2 := strconv.ParseInt(b, 10, 64)
	return stream, seq, err1 == nil && err2 == nil && stream >= 0 && seq >= 0
}

// append records a frame and returns its seq. The oldest events go when
// the log is over its bounds.
func (l *eventLog) append(frame []byte) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, frame)
	l.bytes += len(frame)
	for len(l.events) > 1 && (len(l.events) > streamEvents || l.bytes > streamBytes) {
		l.bytes -= len(l.events[0])
		l.events[0] = nil
		l.events = l.events[1:]
		l.first++
	}
	close(l.wake)
	l.wake = make(chan struct{})
	return l.first + int64(len(l.events)) - 1
}

// end marks the stream finished: no event follows.
func (l *eventLog) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.ended {
		l.ended = true
		close(l.wake)
		l.wake = make(chan struct{})
	}
}

// since returns the events after seq (with the seq of the first), whether
// the stream ended, and a channel closed at the next change. ok is false
// when events after seq were dropped already.
func (l *eventLog) since(seq int64) (events [][]byte, from int64, ended, ok bool, wake <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq+1 < l.first {
		return nil, 0, l.ended, false, l.wake
	}
	i := seq + 1 - l.first
	if i > int64(len(l.events)) {
		i = int64(len(l.events))
	}
	return append([][]byte(nil), l.events[i:]...), seq + 1, l.ended, true, l.wake
}

// openStream starts a resumable stream of the session. It costs a map
// insert under the session's lock, whatever the session's age.
func (s *session) openStream() *eventLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastStream++
	l := newEventLog(s.lastStream)
	if s.streams == nil {
		s.streams = map[int64]*eventLog{}
	}
	s.streams[l.id] = l
	return l
}

// endStream marks a stream of the session finished. The session keeps its
// last endedStreams finished streams for a client that resumes late: the
// oldest beyond them is forgotten, in constant time (a ring of their ids).
func (s *session) endStream(l *eventLog) {
	l.end()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.endedRing
	if r.n == endedStreams {
		delete(s.streams, r.ids[r.next])
	} else {
		r.n++
	}
	r.ids[r.next] = l.id
	r.next = (r.next + 1) % endedStreams
}

// endedRing holds the ids of a session's last finished streams, oldest at
// next once it is full.
type endedRing struct {
	ids  [endedStreams]int64
	n    int
	next int
}

// stream returns the session's stream id (the GET stream's log is made on
// first use).
func (s *session) stream(id int64) *eventLog {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id == standaloneStream {
		if s.standalone == nil {
			s.standalone = newEventLog(standaloneStream)
		}
		return s.standalone
	}
	return s.streams[id]
}

// startResumable answers with an SSE stream for log, beginning with the
// priming event (an id, no data) and the retry hint. Nothing is flushed
// yet: the priming event goes out with the stream's first event.
func startResumable(w http.ResponseWriter, log *eventLog) *sseWriter {
	sse := openSSE(w)
	sse.buffer(fmt.Sprintf("id: %s\nretry: %d\ndata: \n\n", eventID(log.id, 0), retryMillis))
	return sse
}

// resume serves GET with Last-Event-ID: the events of that stream after
// the id, then its new ones as they come, until it ends (a call's stream,
// once its response is sent) or the client goes away. The GET stream
// resumes into the live GET stream.
func (g *Gateway) resume(w http.ResponseWriter, r *http.Request, s *session, last string) {
	stream, seq, ok := parseEventID(last)
	var log *eventLog
	if ok {
		log = s.stream(stream)
	}
	if log == nil {
		httpError(w, http.StatusNotFound, "unknown Last-Event-ID: no such stream in this session (it ended long ago, or the id is not ours)")
		return
	}
	events, from, _, kept, _ := log.since(seq)
	if !kept {
		httpError(w, http.StatusNotFound, "Last-Event-ID "+last+": the events after it are no longer kept")
		return
	}
	if stream == standaloneStream {
		sse := newSSEWriter(w)
		for i, e := range events {
			if !sse.eventWithID(eventID(stream, from+int64(i)), e) {
				return
			}
		}
		g.standalone(r, s, sse, log)
		return
	}
	sse := newSSEWriter(w)
	for {
		for i, e := range events {
			if !sse.eventWithID(eventID(stream, from+int64(i)), e) {
				return
			}
		}
		seq = from + int64(len(events)) - 1
		var ended bool
		var wake <-chan struct{}
		events, from, ended, kept, wake = log.since(seq)
		if !kept {
			return // the client fell too far behind: it starts over
		}
		if len(events) > 0 {
			continue
		}
		if ended {
			return
		}
		select {
		case <-wake:
			events, from, _, kept, _ = log.since(seq)
			if !kept {
				return
			}
		case <-s.ctx.Done():
			return
		case <-r.Context().Done():
			return
		}
	}
}
