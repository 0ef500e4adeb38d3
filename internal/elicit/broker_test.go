package elicit

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

func passwordRequest(t *testing.T, server string) *Request {
	t.Helper()
	return mustParse(t, server, formParams(`{"password":{"type":"string","format":"password","minLength":4}}`, "password"))
}

func urlRequest(t *testing.T, server, elicitationID string) *Request {
	t.Helper()
	return mustParse(t, server, json.RawMessage(fmt.Sprintf(
		`{"mode":"url","message":"m","url":"https://example.com/auth","elicitationId":%q}`, elicitationID)))
}

// received returns the answer already on wait, failing if there is none.
func received(t *testing.T, wait <-chan Response) Response {
	t.Helper()
	select {
	case r := <-wait:
		return r
	default:
		t.Fatal("no answer delivered")
		return Response{}
	}
}

func assertNoAnswer(t *testing.T, wait <-chan Response) {
	t.Helper()
	select {
	case r := <-wait:
		t.Fatalf("unexpected answer %v", r)
	default:
	}
}

func TestBrokerOpenListResolve(t *testing.T) {
	clock := time.Date(2025, 11, 25, 12, 0, 0, 0, time.UTC)
	b := NewBroker(BrokerOptions{Deadline: time.Minute, Now: func() time.Time { return clock }})
	defer b.Close()

	first := passwordRequest(t, "ssh")
	id1, wait1 := b.Open(first)
	id2, wait2 := b.Open(passwordRequest(t, "db"))

	if first.ID != id1 || len(id1) != 32 {
		t.Errorf("req.ID = %q, id = %q; want the same 32 hex digits", first.ID, id1)
	}
	if _, err := hex.DecodeString(id1); err != nil || id1 == id2 {
		t.Errorf("ids %q, %q not distinct hex", id1, id2)
	}
	if !first.Created.Equal(clock) || !first.Deadline.Equal(clock.Add(time.Minute)) {
		t.Errorf("Created %v Deadline %v", first.Created, first.Deadline)
	}

	list := b.List()
	if len(list) != 2 || list[0].ID != id1 || list[1].ID != id2 || list[0].Server != "ssh" {
		t.Fatalf("List() = %+v, want ssh then db", list)
	}
	list[0].Fields[0].Name = "changed"
	list[0].Fields[0].Options = append(list[0].Fields[0].Options, Option{"x", "x"})
	*list[0].Fields[0].MinLength = 99
	got, ok := b.Get(id1)
	if !ok || got.Fields[0].Name != "password" || *got.Fields[0].MinLength != 4 || len(got.Fields[0].Options) != 0 {
		t.Errorf("List returned no copy: Get = %+v, %v", got, ok)
	}
	first.Message = "changed too"
	if got, _ := b.Get(id1); got.Message != "m" {
		t.Errorf("Open kept the caller's request, not a copy")
	}

	if err := b.Resolve(id1, ActionAccept, map[string]any{"password": "hunter22"}); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	resp := received(t, wait1)
	if resp.Action != ActionAccept || !reflect.DeepEqual(resp.Content, map[string]any{"password": "hunter22"}) {
		t.Errorf("answer %#v", resp.Content)
	}
	assertNoAnswer(t, wait2)
	if list := b.List(); len(list) != 1 || list[0].ID != id2 {
		t.Errorf("List() after resolve = %+v", list)
	}
	if _, ok := b.Get(id1); ok {
		t.Error("Get of a resolved id succeeded")
	}
	if err := b.Resolve(id1, ActionAccept, map[string]any{"password": "hunter22"}); !errors.Is(err, ErrUnknown) {
		t.Errorf("second Resolve: %v, want ErrUnknown", err)
	}
	assertNoAnswer(t, wait1)
}

func TestBrokerResolveActions(t *testing.T) {
	tests := []struct {
		action  Action
		content map[string]any
	}{
		{ActionDecline, map[string]any{"password": "ignored"}},
		{ActionCancel, map[string]any{"not": "a field"}},
		{ActionDecline, nil},
	}
	for _, tt := range tests {
		t.Run(string(tt.action), func(t *testing.T) {
			b := NewBroker(BrokerOptions{})
			defer b.Close()
			id, wait := b.Open(passwordRequest(t, "s"))
			if err := b.Resolve(id, tt.action, tt.content); err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			resp := received(t, wait)
			if resp.Action != tt.action || resp.Content != nil {
				t.Errorf("answer %v with content %v, want %s without", resp, resp.Content != nil, tt.action)
			}
		})
	}
}

func TestBrokerInvalidAcceptStaysPending(t *testing.T) {
	b := NewBroker(BrokerOptions{})
	defer b.Close()
	id, wait := b.Open(passwordRequest(t, "s"))

	// Not hex, so that it cannot turn up inside the random id.
	err := b.Resolve(id, ActionAccept, map[string]any{"password": "xyz"})
	var ie *InvalidError
	if !errors.As(err, &ie) || ie.Field != "password" {
		t.Fatalf("Resolve of a short password: %v, want an *InvalidError for password", err)
	}
	if strings.Contains(err.Error(), "xyz") {
		t.Errorf("error %q quotes the value", err)
	}
	if _, ok := b.Get(id); !ok {
		t.Fatal("request no longer pending after a failed accept")
	}
	assertNoAnswer(t, wait)

	if err := b.Resolve(id, ActionAccept, map[string]any{"password": "abcd"}); err != nil {
		t.Fatalf("corrected Resolve: %v", err)
	}
	if resp := received(t, wait); resp.Action != ActionAccept {
		t.Errorf("answer %v", resp)
	}
}

func TestBrokerErrors(t *testing.T) {
	b := NewBroker(BrokerOptions{})
	defer b.Close()
	id, wait := b.Open(passwordRequest(t, "s"))

	if err := b.Resolve(id, Action("maybe"), nil); !errors.Is(err, ErrInvalidAction) {
		t.Errorf("Resolve with a bad action: %v, want ErrInvalidAction", err)
	}
	if err := b.Resolve("nope", ActionDecline, nil); !errors.Is(err, ErrUnknown) {
		t.Errorf("Resolve of an unknown id: %v, want ErrUnknown", err)
	}
	if err := b.Cancel("nope", "why"); !errors.Is(err, ErrUnknown) {
		t.Errorf("Cancel of an unknown id: %v, want ErrUnknown", err)
	}
	assertNoAnswer(t, wait)

	if err := b.Cancel(id, "user closed the tab"); err != nil {
		t.Fatalf("Cancel: %v", err)
	}
	if resp := received(t, wait); resp.Action != ActionCancel {
		t.Errorf("answer %v, want cancel", resp)
	}
	if err := b.Cancel(id, "again"); !errors.Is(err, ErrUnknown) {
		t.Errorf("second Cancel: %v, want ErrUnknown", err)
	}

	defer func() {
		if recover() == nil {
			t.Error("Open(nil) did not panic")
		}
	}()
	b.Open(nil)
}

func TestBrokerDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker(BrokerOptions{}) // the default deadline
		defer b.Close()
		start := time.Now()
		req := passwordRequest(t, "s")
		_, wait := b.Open(req)
		if !req.Deadline.Equal(start.Add(5 * time.Minute)) {
			t.Errorf("Deadline %v, want Created + 5m", req.Deadline.Sub(start))
		}

		time.Sleep(5*time.Minute - time.Nanosecond)
		synctest.Wait()
		assertNoAnswer(t, wait)
		if len(b.List()) != 1 {
			t.Fatal("request gone before its deadline")
		}

		changed := b.Changed()
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if resp := received(t, wait); resp.Action != ActionCancel {
			t.Errorf("answer at deadline %v, want cancel", resp)
		}
		if len(b.List()) != 0 {
			t.Error("request still pending after its deadline")
		}
		select {
		case <-changed:
		default:
			t.Error("Changed did not fire on expiry")
		}
	})
}

func TestBrokerDeadlineStoppedOnResolve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker(BrokerOptions{Deadline: time.Minute})
		defer b.Close()
		id, wait := b.Open(passwordRequest(t, "s"))
		time.Sleep(30 * time.Second)
		if err := b.Resolve(id, ActionDecline, nil); err != nil {
			t.Fatal(err)
		}
		if resp := received(t, wait); resp.Action != ActionDecline {
			t.Fatalf("answer %v", resp)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		assertNoAnswer(t, wait)
	})
}

func TestBrokerExpire(t *testing.T) {
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	b := NewBroker(BrokerOptions{Deadline: time.Hour, Now: clock})
	defer b.Close()

	_, early := b.Open(passwordRequest(t, "s"))
	mu.Lock()
	now = now.Add(30 * time.Minute)
	mu.Unlock()
	_, late := b.Open(passwordRequest(t, "s"))

	if n := b.Expire(clock().Add(29 * time.Minute)); n != 0 {
		t.Errorf("Expire before any deadline cancelled %d", n)
	}
	if n := b.Expire(clock().Add(30 * time.Minute)); n != 1 {
		t.Errorf("Expire at the first deadline cancelled %d, want 1", n)
	}
	if resp := received(t, early); resp.Action != ActionCancel {
		t.Errorf("early answer %v", resp)
	}
	assertNoAnswer(t, late)
	if len(b.List()) != 1 {
		t.Errorf("List() = %v, want the later request", b.List())
	}
}

func TestBrokerCompleteByElicitationID(t *testing.T) {
	b := NewBroker(BrokerOptions{})
	defer b.Close()
	_, waitA := b.Open(urlRequest(t, "a", "e1"))
	_, waitB := b.Open(urlRequest(t, "b", "e1"))
	formID, waitForm := b.Open(passwordRequest(t, "a"))

	if b.Complete("e2", "a") {
		t.Error("Complete matched an unknown elicitationId")
	}
	if b.Complete("", "a") {
		t.Error("Complete matched a form request by its empty elicitationId")
	}
	if !b.Complete("e1", "a") {
		t.Fatal("Complete did not match server a's e1")
	}
	if resp := received(t, waitA); resp.Action != ActionAccept || resp.Content != nil {
		t.Errorf("answer %v", resp)
	}
	if b.Complete("e1", "a") {
		t.Error("Complete matched an already completed id")
	}
	assertNoAnswer(t, waitB)
	assertNoAnswer(t, waitForm)
	if list := b.List(); len(list) != 2 || list[0].Server != "b" || list[1].ID != formID {
		t.Errorf("List() = %+v", list)
	}
}

func TestBrokerURLAccept(t *testing.T) {
	b := NewBroker(BrokerOptions{})
	defer b.Close()
	id, wait := b.Open(urlRequest(t, "a", "e1"))
	if err := b.Resolve(id, ActionAccept, map[string]any{"x": "y"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("url accept with content: %v, want ErrInvalid", err)
	}
	if err := b.Resolve(id, ActionAccept, nil); err != nil {
		t.Fatal(err)
	}
	if resp := received(t, wait); resp.Action != ActionAccept || resp.Content != nil {
		t.Errorf("answer %v", resp)
	}
	if b.Complete("e1", "a") {
		t.Error("complete notification after consent matched")
	}
}

func TestBrokerChanged(t *testing.T) {
	b := NewBroker(BrokerOptions{})
	defer b.Close()
	fired := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
	ch := b.Changed()
	if fired(ch) {
		t.Fatal("Changed fired with no change")
	}
	id, _ := b.Open(passwordRequest(t, "s"))
	if !fired(ch) {
		t.Fatal("Changed did not fire on Open")
	}
	ch = b.Changed()
	if fired(ch) {
		t.Fatal("the new Changed channel is already closed")
	}
	if err := b.Resolve(id, ActionAccept, map[string]any{"password": "x"}); err == nil {
		t.Fatal("short password accepted")
	}
	if fired(ch) {
		t.Error("Changed fired on a failed Resolve")
	}
	if err := b.Resolve(id, ActionDecline, nil); err != nil {
		t.Fatal(err)
	}
	if !fired(ch) {
		t.Error("Changed did not fire on Resolve")
	}
}

func TestBrokerClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker(BrokerOptions{})
		_, wait1 := b.Open(passwordRequest(t, "s"))
		_, wait2 := b.Open(urlRequest(t, "s", "e"))
		b.Close()
		for _, w := range []<-chan Response{wait1, wait2} {
			if resp := received(t, w); resp.Action != ActionCancel {
				t.Errorf("answer on Close %v", resp)
			}
		}
		if len(b.List()) != 0 {
			t.Error("pending after Close")
		}
		req := passwordRequest(t, "s")
		id, wait := b.Open(req)
		if resp := received(t, wait); resp.Action != ActionCancel || req.ID != id {
			t.Errorf("Open after Close: %v", resp)
		}
		if len(b.List()) != 0 {
			t.Error("Open after Close registered")
		}
		b.Close()
		// synctest.Test fails if a deadline timer's goroutine outlives this.
	})
}

func TestBrokerHandle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := NewBroker(BrokerOptions{})
		defer b.Close()
		var handler Handler = b.Handle

		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan Response, 1)
		go func() {
			resp, err := handler(ctx, passwordRequest(t, "s"))
			if err != nil {
				t.Errorf("Handle: %v", err)
			}
			done <- resp
		}()
		synctest.Wait()
		list := b.List()
		if len(list) != 1 {
			t.Fatalf("List() = %v, want the handled request", list)
		}
		if err := b.Resolve(list[0].ID, ActionAccept, map[string]any{"password": "s3cret"}); err != nil {
			t.Fatal(err)
		}
		if resp := <-done; resp.Action != ActionAccept || resp.Content["password"] != "s3cret" {
			t.Errorf("Handle returned %v", resp)
		}

		go func() {
			resp, _ := handler(ctx, passwordRequest(t, "s"))
			done <- resp
		}()
		synctest.Wait()
		cancel()
		if resp := <-done; resp.Action != ActionCancel {
			t.Errorf("Handle after ctx ended returned %v", resp)
		}
		if len(b.List()) != 0 {
			t.Error("request pending after its ctx ended")
		}
	})
}

// Run with -race: every method at once, and every request answered once.
func TestBrokerConcurrent(t *testing.T) {
	b := NewBroker(BrokerOptions{})
	const n = 50
	var wg sync.WaitGroup
	answers := make(chan Response, 2*n)
	for i := range n {
		wg.Go(func() {
			id, wait := b.Open(passwordRequest(t, "s"))
			var err error
			switch i % 3 {
			case 0:
				err = b.Resolve(id, ActionAccept, map[string]any{"password": "long enough"})
			case 1:
				err = b.Cancel(id, "test")
			case 2:
				err = b.Resolve(id, ActionDecline, nil)
			}
			if err != nil {
				t.Error(err)
			}
			answers <- <-wait
		})
		wg.Go(func() {
			b.List()
			b.Changed()
			b.Complete("e", "s")
			b.Expire(time.Time{})
		})
	}
	wg.Wait()
	b.Close()
	close(answers)
	count := 0
	for range answers {
		count++
	}
	if count != n {
		t.Errorf("%d answers, want %d", count, n)
	}
}

func TestBrokerLogsNoValues(t *testing.T) {
	const secret = "correct-horse-battery-staple"
	var buf bytes.Buffer
	b := NewBroker(BrokerOptions{Logger: slog.New(slog.NewTextHandler(&buf, nil))})
	id, _ := b.Open(passwordRequest(t, "ssh"))
	if err := b.Resolve(id, ActionAccept, map[string]any{"password": secret}); err != nil {
		t.Fatal(err)
	}
	id, _ = b.Open(passwordRequest(t, "ssh"))
	if err := b.Cancel(id, "operator left"); err != nil {
		t.Fatal(err)
	}
	b.Close()
	out := buf.String()
	if strings.Contains(out, secret) {
		t.Fatalf("the log holds the secret:\n%s", out)
	}
	for _, want := range []string{"server=ssh", "response.action=accept", "response.fields=[password]", "reason=\"operator left\""} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
}
