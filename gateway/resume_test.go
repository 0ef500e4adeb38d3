package gateway

import (
	"fmt"
	"testing"
)

// A session keeps every live stream and its last endedStreams finished
// ones, however many it has opened.
func TestStreamRetention(t *testing.T) {
	s := &session{}
	live := s.openStream()
	var ended []*eventLog
	for range 3 * endedStreams {
		l := s.openStream()
		s.endStream(l)
		ended = append(ended, l)
	}
	if s.stream(live.id) != live {
		t.Fatalf("the live stream %d was forgotten", live.id)
	}
	for i, l := range ended {
		kept := s.stream(l.id) != nil
		if want := i >= len(ended)-endedStreams; kept != want {
			t.Errorf("finished stream %d of %d: kept %v, want %v", i+1, len(ended), kept, want)
		}
	}
	if len(s.streams) != endedStreams+1 {
		t.Fatalf("the session holds %d streams, want %d", len(s.streams), endedStreams+1)
	}
}

// BenchmarkGatewayStreamBookkeeping is opening and ending a call's stream
// in a session that has one other stream open, new and after 20,000
// streams: the cost must not grow with the session's age.
func BenchmarkGatewayStreamBookkeeping(b *testing.B) {
	for _, age := range []int{0, 20_000} {
		b.Run(fmt.Sprintf("age=%d", age), func(b *testing.B) {
			s := &session{}
			s.openStream() // a call still running
			for range age {
				s.endStream(s.openStream())
			}
			b.ReportAllocs()
			for b.Loop() {
				s.endStream(s.openStream())
			}
		})
	}
}
