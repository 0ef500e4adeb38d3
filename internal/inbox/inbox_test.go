package inbox

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type answer struct {
	ok  bool
	why string
}

var (
	onDeadline = answer{why: "deadline"}
	onClose    = answer{why: "closed"}
)

// leaving records Options.Left's calls.
type leaving struct {
	mu   sync.Mutex
	whys map[string]error
}

func (l *leaving) left(e Entry[string], why error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, twice := l.whys[e.ID]; twice {
		panic("Left called twice for " + e.ID)
	}
	l.whys[e.ID] = why
}

func (l *leaving) why(id string) (error, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	why, ok := l.whys[id]
	return why, ok
}

func newInbox(deadline time.Duration) (*Inbox[string, answer], *leaving) {
	l := &leaving{whys: map[string]error{}}
	in := New(Options[string, answer]{Deadline: deadline, OnDeadline: onDeadline, OnClose: onClose, Left: l.left})
	return in, l
}

func open(t *testing.T, in *Inbox[string, answer], req string) *Ticket[string, answer] {
	t.Helper()
	tk, err := in.Open(req)
	if err != nil {
		t.Fatalf("Open(%q): %v", req, err)
	}
	return tk
}

// answered returns the answer already on c, if there is one.
func answered(c <-chan answer) (answer, bool) {
	select {
	case a := <-c:
		return a, true
	default:
		return answer{}, false
	}
}

// received returns the answer already on c, failing if there is none.
func received(t *testing.T, c <-chan answer) answer {
	t.Helper()
	a, ok := answered(c)
	if !ok {
		t.Fatal("no answer delivered")
	}
	return a
}

func assertNoAnswer(t *testing.T, c <-chan answer) {
	t.Helper()
	if a, ok := answered(c); ok {
		t.Fatalf("unexpected answer %+v", a)
	}
}

func fired(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func ids(es []Entry[string]) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.ID)
	}
	return out
}

func TestOpenPendingResolve(t *testing.T) {
	clock := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	in := New(Options[string, answer]{Deadline: time.Minute, Now: func() time.Time { return clock }})
	defer in.Close()

	first, second := open(t, in, "first"), open(t, in, "second")
	if len(first.ID) != 32 || first.ID == second.ID {
		t.Errorf("ids %q, %q: want two distinct 32-digit ids", first.ID, second.ID)
	}
	if _, err := hex.DecodeString(first.ID); err != nil {
		t.Errorf("id %q is not hex", first.ID)
	}
	if !first.Created.Equal(clock) || !first.Deadline.Equal(clock.Add(time.Minute)) || first.Req != "first" {
		t.Errorf("ticket %+v", first.Entry)
	}
	if got := in.Pending(); len(got) != 2 || got[0] != first.Entry || got[1] != second.Entry {
		t.Fatalf("Pending() = %+v, want first then second", got)
	}
	if e, ok := in.Get(second.ID); !ok || e != second.Entry {
		t.Errorf("Get = %+v, %v", e, ok)
	}

	e, err := in.Resolve(first.ID, answer{ok: true})
	if err != nil || e != first.Entry {
		t.Fatalf("Resolve = %+v, %v", e, err)
	}
	if a := received(t, first.C); !a.ok {
		t.Errorf("answer %+v, want the resolved one", a)
	}
	assertNoAnswer(t, second.C)
	if got := ids(in.Pending()); len(got) != 1 || got[0] != second.ID {
		t.Errorf("Pending() after Resolve = %v", got)
	}
	if _, ok := in.Get(first.ID); ok {
		t.Error("Get of a resolved id succeeded")
	}
}

func TestResolveNotPending(t *testing.T) {
	in, _ := newInbox(0)
	defer in.Close()
	tk := open(t, in, "r")
	if _, err := in.Resolve(tk.ID, answer{ok: true}); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{tk.ID, "nope", ""} {
		if _, err := in.Resolve(id, answer{}); !errors.Is(err, ErrUnknown) {
			t.Errorf("Resolve(%q): %v, want ErrUnknown", id, err)
		}
	}
	if a := received(t, tk.C); !a.ok {
		t.Errorf("answer %+v: a later Resolve replaced the first", a)
	}
	assertNoAnswer(t, tk.C)
}

func TestChanged(t *testing.T) {
	in, _ := newInbox(0)
	defer in.Close()
	ch := in.Changed()
	if fired(ch) {
		t.Fatal("Changed fired with no change")
	}
	tk := open(t, in, "r")
	if !fired(ch) {
		t.Fatal("Changed did not fire on Open")
	}
	ch = in.Changed()
	if _, err := in.Resolve("nope", answer{}); err == nil || fired(ch) {
		t.Fatalf("Resolve of an unknown id: %v, fired %v", err, fired(ch))
	}
	if _, err := in.Resolve(tk.ID, answer{}); err != nil || !fired(ch) {
		t.Errorf("Resolve: %v, fired %v", err, fired(ch))
	}
}

func TestDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, l := newInbox(5 * time.Minute)
		defer in.Close()
		start := time.Now()
		tk := open(t, in, "r")
		if !tk.Deadline.Equal(start.Add(5 * time.Minute)) {
			t.Errorf("Deadline = Created + %v, want 5m", tk.Deadline.Sub(start))
		}

		time.Sleep(5*time.Minute - time.Nanosecond)
		synctest.Wait()
		assertNoAnswer(t, tk.C)
		if len(in.Pending()) != 1 {
			t.Fatal("entry gone before its deadline")
		}

		changed := in.Changed()
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if a := received(t, tk.C); a != onDeadline {
			t.Errorf("answer at the deadline %+v, want OnDeadline", a)
		}
		if len(in.Pending()) != 0 || !fired(changed) {
			t.Errorf("after the deadline: pending %v, Changed fired %v", in.Pending(), fired(changed))
		}
		if why, _ := l.why(tk.ID); !errors.Is(why, ErrExpired) {
			t.Errorf("Left got %v, want ErrExpired", why)
		}
		if _, err := in.Resolve(tk.ID, answer{ok: true}); !errors.Is(err, ErrUnknown) {
			t.Errorf("Resolve after the deadline: %v, want ErrUnknown", err)
		}
	})
}

func TestDeadlineStoppedByResolve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, l := newInbox(time.Minute)
		defer in.Close()
		tk := open(t, in, "r")
		time.Sleep(30 * time.Second)
		if _, err := in.Resolve(tk.ID, answer{ok: true}); err != nil {
			t.Fatal(err)
		}
		received(t, tk.C)
		time.Sleep(time.Hour)
		synctest.Wait()
		assertNoAnswer(t, tk.C)
		if why, ok := l.why(tk.ID); ok {
			t.Errorf("Left called for a resolved entry: %v", why)
		}
	})
}

func TestNoDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, _ := newInbox(0)
		defer in.Close()
		tk := open(t, in, "r")
		if !tk.Deadline.IsZero() {
			t.Errorf("Deadline %v without Options.Deadline", tk.Deadline)
		}
		time.Sleep(24 * time.Hour)
		synctest.Wait()
		if n := in.Expire(time.Now().Add(24 * time.Hour)); n != 0 {
			t.Errorf("Expire answered %d entries without a deadline", n)
		}
		assertNoAnswer(t, tk.C)
		if len(in.Pending()) != 1 {
			t.Error("entry without a deadline left the inbox")
		}
	})
}

func TestExpire(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	l := &leaving{whys: map[string]error{}}
	in := New(Options[string, answer]{Deadline: time.Hour, OnDeadline: onDeadline, Now: clock, Left: l.left})
	defer in.Close()

	early := open(t, in, "early")
	mu.Lock()
	now = now.Add(30 * time.Minute)
	mu.Unlock()
	late := open(t, in, "late")

	changed := in.Changed()
	if n := in.Expire(clock().Add(29 * time.Minute)); n != 0 || fired(changed) {
		t.Errorf("Expire before any deadline answered %d, fired %v", n, fired(changed))
	}
	if n := in.Expire(clock().Add(30 * time.Minute)); n != 1 || !fired(changed) {
		t.Errorf("Expire at the first deadline answered %d, fired %v; want 1", n, fired(changed))
	}
	if a := received(t, early.C); a != onDeadline {
		t.Errorf("early answer %+v", a)
	}
	if why, _ := l.why(early.ID); !errors.Is(why, ErrExpired) {
		t.Errorf("Left got %v, want ErrExpired", why)
	}
	assertNoAnswer(t, late.C)
	if got := ids(in.Pending()); len(got) != 1 || got[0] != late.ID {
		t.Errorf("Pending() = %v, want the later entry", got)
	}
}

func TestAsk(t *testing.T) {
	tests := []struct {
		name    string
		act     func(in *Inbox[string, answer], id string, cancel context.CancelFunc)
		want    answer
		wantErr error
		left    error // what Options.Left gets; nil: not called
	}{
		{"resolved", func(in *Inbox[string, answer], id string, _ context.CancelFunc) {
			_, _ = in.Resolve(id, answer{ok: true})
		}, answer{ok: true}, nil, nil},
		{"deadline", func(*Inbox[string, answer], string, context.CancelFunc) {
			time.Sleep(time.Minute)
		}, onDeadline, nil, ErrExpired},
		{"closed", func(in *Inbox[string, answer], _ string, _ context.CancelFunc) {
			in.Close()
		}, onClose, nil, ErrClosed},
		{"abandoned", func(_ *Inbox[string, answer], _ string, cancel context.CancelFunc) {
			cancel()
		}, answer{}, context.Canceled, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				in, l := newInbox(time.Minute)
				defer in.Close()
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				type result struct {
					a   answer
					err error
				}
				done := make(chan result, 1)
				go func() {
					a, err := in.Ask(ctx, "r")
					done <- result{a, err}
				}()
				synctest.Wait()
				pending := in.Pending()
				if len(pending) != 1 || pending[0].Req != "r" {
					t.Fatalf("Pending() while Ask waits = %+v", pending)
				}
				select {
				case r := <-done:
					t.Fatalf("Ask returned %+v before an answer", r)
				default:
				}
				changed := in.Changed()
				tt.act(in, pending[0].ID, cancel)
				r := <-done
				// Left runs after the answer is delivered, on the goroutine
				// that answered (a deadline timer's): let it finish.
				synctest.Wait()
				if r.a != tt.want || !errors.Is(r.err, tt.wantErr) || (tt.wantErr == nil) != (r.err == nil) {
					t.Errorf("Ask = %+v, %v; want %+v, %v", r.a, r.err, tt.want, tt.wantErr)
				}
				if len(in.Pending()) != 0 || !fired(changed) {
					t.Errorf("after Ask: pending %v, Changed fired %v", in.Pending(), fired(changed))
				}
				why, called := l.why(pending[0].ID)
				if called != (tt.left != nil) || !errors.Is(why, tt.left) {
					t.Errorf("Left got %v (called %v), want %v", why, called, tt.left)
				}
				if _, err := in.Resolve(pending[0].ID, answer{ok: true}); !errors.Is(err, ErrUnknown) {
					t.Errorf("Resolve after Ask returned: %v, want ErrUnknown", err)
				}
			})
		})
	}
}

// An answer that arrives as the waiter's context ends stands, whichever of
// the two Wait sees first.
func TestWaitAnsweredAsContextEnds(t *testing.T) {
	in, l := newInbox(0)
	defer in.Close()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	for range 100 {
		tk := open(t, in, "r")
		if _, err := in.Resolve(tk.ID, answer{ok: true}); err != nil {
			t.Fatal(err)
		}
		if a, err := tk.Wait(ctx); err != nil || !a.ok {
			t.Fatalf("Wait = %+v, %v; want the answer", a, err)
		}
		if why, ok := l.why(tk.ID); ok {
			t.Fatalf("Left called for an answered entry: %v", why)
		}
	}
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		in, l := newInbox(time.Minute)
		a, b := open(t, in, "a"), open(t, in, "b")
		changed := in.Changed()
		in.Close()
		for _, tk := range []*Ticket[string, answer]{a, b} {
			if got := received(t, tk.C); got != onClose {
				t.Errorf("answer on Close %+v, want OnClose", got)
			}
			if why, _ := l.why(tk.ID); !errors.Is(why, ErrClosed) {
				t.Errorf("Left got %v, want ErrClosed", why)
			}
		}
		if len(in.Pending()) != 0 || !fired(changed) {
			t.Errorf("after Close: pending %v, Changed fired %v", in.Pending(), fired(changed))
		}

		tk, err := in.Open("late")
		if !errors.Is(err, ErrClosed) || tk.ID == "" {
			t.Errorf("Open after Close: %v, id %q", err, tk.ID)
		}
		if got := received(t, tk.C); got != onClose {
			t.Errorf("answer to Open after Close %+v", got)
		}
		if got, err := in.Ask(t.Context(), "later"); got != onClose || !errors.Is(err, ErrClosed) {
			t.Errorf("Ask after Close = %+v, %v", got, err)
		}
		if len(in.Pending()) != 0 {
			t.Error("Open after Close registered")
		}
		if _, ok := l.why(tk.ID); ok {
			t.Error("Left called for an entry never pending")
		}
		in.Close()
		// synctest.Test fails if a deadline timer's goroutine outlives this.
	})
}

// Run with -race: every method at once, and every entry answered once.
func TestConcurrent(t *testing.T) {
	in, l := newInbox(time.Hour)
	const n = 60
	var wg sync.WaitGroup
	answered := make(chan answer, n)
	for i := range n {
		ctx, cancel := context.WithCancel(t.Context())
		wg.Go(func() {
			defer cancel()
			a, err := in.Ask(ctx, "r")
			if err != nil && !errors.Is(err, context.Canceled) {
				t.Errorf("Ask: %v", err)
			}
			answered <- a
		})
		wg.Go(func() {
			for {
				changed := in.Changed()
				for _, e := range in.Pending() {
					if i%3 == 0 {
						cancel()
					}
					_, _ = in.Resolve(e.ID, answer{ok: true})
				}
				in.Expire(time.Time{})
				select {
				case <-changed:
				case <-ctx.Done():
					return
				}
			}
		})
	}
	wg.Wait()
	in.Close()
	close(answered)
	count := 0
	for a := range answered {
		count++
		if a != (answer{ok: true}) && a != (answer{}) {
			t.Errorf("answer %+v", a)
		}
	}
	if count != n || len(in.Pending()) != 0 {
		t.Errorf("%d answers, %d pending; want %d, 0", count, len(in.Pending()), n)
	}
	for id, why := range l.whys {
		if !errors.Is(why, context.Canceled) {
			t.Errorf("entry %s left with %v", id, why)
		}
	}
}
