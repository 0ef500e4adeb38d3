// Package broadcast tells any number of waiters that something changed,
// without holding a list of them or queueing values.
//
//	var s broadcast.Signal
//	ch := s.C()   // take the channel before reading the state
//	read()
//	<-ch          // closed at the next Notify; then take C() again
package broadcast

import "sync"

// Signal is a channel closed and replaced at every Notify. The zero value
// is ready to use; a Signal must not be copied after first use. All
// methods are safe for concurrent use and never block.
type Signal struct {
	mu sync.Mutex
	ch chan struct{}
}

// C returns the channel that the next Notify closes. Take it before
// reading the state it guards, so that no change is missed between the two.
func (s *Signal) C() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// Notify wakes every holder of the current channel.
func (s *Signal) Notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
