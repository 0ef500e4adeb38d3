package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestSecretRedacts(t *testing.T) {
	const pw = "correct horse battery staple"
	s := newSecret(pw)
	holder := struct {
		Name string
		Pass secret
	}{"x", s}
	var outs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T %v"} {
		outs = append(outs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, holder), fmt.Sprintf(verb, &holder))
	}
	outs = append(outs, fmt.Sprint(s), fmt.Sprintln(s), s.String())
	b, err := json.Marshal(holder)
	if err != nil {
		t.Fatal(err)
	}
	outs = append(outs, string(b))
	var logged strings.Builder
	for _, h := range []slog.Handler{slog.NewTextHandler(&logged, nil), slog.NewJSONHandler(&logged, nil)} {
		l := slog.New(h)
		l.Info("login", "password", s, "holder", holder)
		l.Info("login", slog.Any("p", s))
	}
	outs = append(outs, logged.String())
	hex := fmt.Sprintf("%x", pw)
	for _, out := range outs {
		if strings.Contains(out, pw) || strings.Contains(out, "horse") || strings.Contains(out, hex) {
			t.Errorf("secret leaked: %s", out)
		}
	}
	if !strings.Contains(logged.String(), redacted) || !strings.Contains(string(b), redacted) {
		t.Errorf("redaction marker missing: %s / %s", logged.String(), b)
	}
	if s.reveal() != pw {
		t.Errorf("reveal = %q", s.reveal())
	}
}

// fakeClock is a settable time source.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestSecretCacheTTL(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1000, 0)}
	c := newSecretCache(300 * time.Second)
	c.now = clock.Now
	var asked atomic.Int32
	ask := func(context.Context) (secret, error) {
		asked.Add(1)
		return newSecret(fmt.Sprintf("pw%d", asked.Load())), nil
	}
	ctx := context.Background()
	got := func() string {
		s, err := c.getOrAsk(ctx, "sudo:web", ask)
		if err != nil {
			t.Fatal(err)
		}
		return s.reveal()
	}
	if v := got(); v != "pw1" {
		t.Fatalf("first = %q", v)
	}
	clock.advance(299 * time.Second)
	if v := got(); v != "pw1" || asked.Load() != 1 {
		t.Fatalf("within ttl = %q after %d asks", v, asked.Load())
	}
	clock.advance(time.Second)
	if v := got(); v != "pw2" || asked.Load() != 2 {
		t.Fatalf("after ttl = %q after %d asks", v, asked.Load())
	}
	// An authentication failure drops the secret: the next use asks again.
	c.drop("sudo:web")
	if v := got(); v != "pw3" {
		t.Fatalf("after drop = %q", v)
	}
	// Other keys are untouched by a drop.
	c.put("login:db", newSecret("db"))
	c.drop("sudo:web")
	if s, ok := c.get("login:db"); !ok || s.reveal() != "db" {
		t.Errorf("drop of one key lost another")
	}
	c.dropPrefix("login:")
	if _, ok := c.get("login:db"); ok {
		t.Errorf("dropPrefix kept the secret")
	}
}

func TestSecretCacheFailedAskNotCached(t *testing.T) {
	c := newSecretCache(time.Minute)
	if _, err := c.getOrAsk(context.Background(), "k", func(context.Context) (secret, error) {
		return secret{}, errSignInCancelled
	}); !errors.Is(err, errSignInCancelled) {
		t.Fatalf("err = %v", err)
	}
	if _, ok := c.get("k"); ok {
		t.Fatal("a failed ask was cached")
	}
}

func TestSecretCacheZeroTTL(t *testing.T) {
	c := newSecretCache(0)
	n := 0
	for range 2 {
		if _, err := c.getOrAsk(context.Background(), "k", func(context.Context) (secret, error) { n++; return newSecret("x"), nil }); err != nil {
			t.Fatal(err)
		}
	}
	if n != 2 {
		t.Errorf("ttl 0 asked %d times, want every time (2)", n)
	}
}

// Concurrent callers share one prompt: while the first asks, the others
// wait for its answer rather than asking too.
func TestSecretCacheOneAskAtATime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newSecretCache(time.Minute)
		release := make(chan struct{})
		var asked atomic.Int32
		ask := func(context.Context) (secret, error) {
			asked.Add(1)
			<-release
			return newSecret("pw"), nil
		}
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				s, err := c.getOrAsk(context.Background(), "k", ask)
				if err != nil || s.reveal() != "pw" {
					t.Errorf("getOrAsk = %q, %v", s.reveal(), err)
				}
			})
		}
		synctest.Wait() // every caller blocked: one in ask, four behind it
		if n := asked.Load(); n != 1 {
			t.Errorf("%d asks under way at once, want 1", n)
		}
		close(release)
		wg.Wait()
		if n := asked.Load(); n != 1 {
			t.Errorf("asked %d times, want 1", n)
		}
	})
}
