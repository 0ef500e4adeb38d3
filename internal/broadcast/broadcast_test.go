package broadcast

import "testing"

func TestSignal(t *testing.T) {
	var s Signal
	s.Notify() // nobody waits: nothing to close, nothing lost
	ch := s.C()
	if ch != s.C() {
		t.Fatal("C changed without a Notify")
	}
	select {
	case <-ch:
		t.Fatal("closed before Notify")
	default:
	}
	s.Notify()
	select {
	case <-ch:
	default:
		t.Fatal("Notify did not close the channel taken before it")
	}
	next := s.C()
	select {
	case <-next:
		t.Fatal("the channel after Notify is already closed")
	default:
	}
}
