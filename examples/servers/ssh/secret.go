package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// redacted is what a secret shows wherever it is printed, logged or encoded.
const redacted = "[redacted]"

// secret holds a password or passphrase. Every way of printing it (fmt verbs,
// %#v, slog, encoding/json) shows "[redacted]", so a secret cannot reach a
// log, a tool result or a file by accident; reveal is the one way out and is
// called only where the value goes to sshd or sudo.
type secret struct{ value string }

func newSecret(s string) secret { return secret{value: s} }

func (s secret) reveal() string { return s.value }

func (secret) String() string                { return redacted }
func (secret) GoString() string              { return redacted }
func (secret) LogValue() slog.Value          { return slog.StringValue(redacted) }
func (secret) MarshalJSON() ([]byte, error)  { return []byte(`"` + redacted + `"`), nil }
func (secret) MarshalText() ([]byte, error)  { return []byte(redacted), nil }
func (secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(redacted)) }

// secretCache keeps elicited secrets in memory only, each for ttl after it
// was stored. Keys name what the secret unlocks ("login:web", "sudo:web",
// "passphrase:/home/u/.ssh/id_ed25519"). Safe for concurrent use.
type secretCache struct {
	ttl time.Duration
	now func() time.Time // time.Now unless a test fakes it

	mu      sync.Mutex
	entries map[string]cachedSecret
	asking  map[string]chan struct{} // one ask per key at a time
}

type cachedSecret struct {
	value   secret
	expires time.Time
}

func newSecretCache(ttl time.Duration) *secretCache {
	return &secretCache{ttl: ttl, now: time.Now, entries: make(map[string]cachedSecret), asking: make(map[string]chan struct{})}
}

// get returns the secret stored under key if it has not expired; an expired
// one is forgotten.
func (c *secretCache) get(key string) (secret, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return secret{}, false
	}
	if !c.now().Before(e.expires) {
		delete(c.entries, key)
		return secret{}, false
	}
	return e.value, true
}

// put stores s under key for the cache's ttl. A ttl of zero or less stores
// nothing: every use asks again.
func (c *secretCache) put(key string, s secret) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries[key] = cachedSecret{value: s, expires: c.now().Add(c.ttl)}
}

// drop forgets the secret under key, after an authentication failure.
func (c *secretCache) drop(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.entries, key)
}

// dropPrefix forgets every secret whose key starts with prefix (an alias
// replaced or removed).
func (c *secretCache) dropPrefix(prefix string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range c.entries {
		if len(k) >= len(prefix) && k[:len(prefix)] == prefix {
			delete(c.entries, k)
		}
	}
}

// getOrAsk returns the cached secret under key, or calls ask and caches its
// answer. Concurrent callers for the same key wait for one ask rather than
// prompting the user twice. It blocks until ask returns or ctx ends.
func (c *secretCache) getOrAsk(ctx context.Context, key string, ask func(context.Context) (secret, error)) (secret, error) {
	for {
		if s, ok := c.get(key); ok {
			return s, nil
		}
		c.mu.Lock()
		wait, busy := c.asking[key]
		if !busy {
			done := make(chan struct{})
			c.asking[key] = done
			c.mu.Unlock()
			s, err := ask(ctx)
			if err == nil {
				c.put(key, s)
			}
			c.mu.Lock()
			delete(c.asking, key)
			c.mu.Unlock()
			close(done)
			return s, err
		}
		c.mu.Unlock()
		select {
		case <-wait:
			// The other ask finished; use its answer, or ask ourselves if it
			// failed (or the ttl keeps nothing).
			continue
		case <-ctx.Done():
			return secret{}, ctx.Err()
		}
	}
}
