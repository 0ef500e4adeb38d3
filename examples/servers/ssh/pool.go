package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// keepaliveInterval is how often an idle pooled connection is probed; a
// probe unanswered within keepaliveTimeout closes it.
const (
	keepaliveInterval = 30 * time.Second
	keepaliveTimeout  = 15 * time.Second
)

var errPoolClosed = errors.New("connection pool closed")

// conn is one pooled SSH connection and its SFTP session, opened on first
// use. done is closed when the SSH connection has ended.
type conn struct {
	ssh  *ssh.Client
	done chan struct{}

	sftpMu sync.Mutex
	sftp   *sftp.Client

	closeOnce sync.Once
}

func (c *conn) alive() bool {
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

// sftpClient returns the connection's SFTP client, starting it if needed.
func (c *conn) sftpClient() (*sftp.Client, error) {
	c.sftpMu.Lock()
	defer c.sftpMu.Unlock()
	if c.sftp == nil {
		s, err := sftp.NewClient(c.ssh)
		if err != nil {
			return nil, fmt.Errorf("start sftp: %w", err)
		}
		c.sftp = s
	}
	return c.sftp, nil
}

// close ends the SFTP session and the connection; safe to call twice.
func (c *conn) close() {
	c.closeOnce.Do(func() {
		c.sftpMu.Lock()
		if c.sftp != nil {
			c.sftp.Close()
		}
		c.sftpMu.Unlock()
		c.ssh.Close()
	})
}

// poolEntry is one alias's slot in the pool. lock (a one-slot semaphore
// that a waiting caller can give up on) is held while dialing, so that
// concurrent calls on one alias share one dial and one password prompt;
// the other fields are guarded by pool.mu.
type poolEntry struct {
	lock    chan struct{}
	conn    *conn
	ident   string // the alias settings conn was dialed with
	lastUse time.Time
	inUse   int
}

// pool keeps one connection per alias, closes those idle for ttl (checked
// on the next use and by a ticker), re-dials broken ones, and closes them
// all on Close. A slow or hung host holds only its own alias's entry.
type pool struct {
	ttl  time.Duration
	now  func() time.Time
	dial func(ctx context.Context, a Alias, ask asker) (*ssh.Client, error)

	mu      sync.Mutex
	entries map[string]*poolEntry
	closed  bool

	stop      chan struct{}
	wg        sync.WaitGroup // the janitor and each connection's watchers
	closeOnce sync.Once
}

// newPool starts the pool's janitor; Close stops it.
func newPool(ttl time.Duration, dial func(context.Context, Alias, asker) (*ssh.Client, error)) *pool {
	p := &pool{ttl: ttl, now: time.Now, dial: dial, entries: make(map[string]*poolEntry), stop: make(chan struct{})}
	if ttl > 0 {
		every := min(max(ttl/2, time.Second), 30*time.Second)
		p.wg.Add(1)
		go p.janitor(every)
	}
	return p
}

func aliasIdent(a Alias) string {
	return fmt.Sprintf("%s|%s|%s|%t", a.target(), a.Auth, a.KeyPath, a.AcceptNewHostKey)
}

// acquire returns a live connection for a, dialing one if the pool has
// none (or only a broken, idle-expired or differently configured one).
// The caller must call release once done with it. acquire blocks while
// another call dials the same alias, until ctx ends.
func (p *pool) acquire(ctx context.Context, a Alias, ask asker) (*conn, func(), error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, errPoolClosed
	}
	e := p.entries[a.Name]
	if e == nil {
		e = &poolEntry{lock: make(chan struct{}, 1)}
		p.entries[a.Name] = e
	}
	p.mu.Unlock()

	select {
	case e.lock <- struct{}{}:
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	}
	defer func() { <-e.lock }()

	ident := aliasIdent(a)
	p.mu.Lock()
	var stale *conn
	if c := e.conn; c != nil {
		expired := p.ttl > 0 && e.inUse == 0 && p.now().Sub(e.lastUse) >= p.ttl
		if c.alive() && !expired && e.ident == ident {
			e.inUse++
			e.lastUse = p.now()
			p.mu.Unlock()
			return c, p.releaser(e, c), nil
		}
		stale, e.conn = c, nil
	}
	p.mu.Unlock()
	if stale != nil {
		stale.close()
	}

	client, err := p.dial(ctx, a, ask)
	if err != nil {
		return nil, nil, err
	}
	c := &conn{ssh: client, done: make(chan struct{})}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		client.Close()
		return nil, nil, errPoolClosed
	}
	e.conn, e.ident, e.inUse, e.lastUse = c, ident, e.inUse+1, p.now()
	p.wg.Add(2)
	p.mu.Unlock()
	go p.watch(c)
	go p.keepalive(c)
	return c, p.releaser(e, c), nil
}

func (p *pool) releaser(e *poolEntry, c *conn) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			e.inUse--
			e.lastUse = p.now()
			closeNow := p.ttl <= 0 && e.inUse == 0 && e.conn == c
			if closeNow {
				e.conn = nil
			}
			p.mu.Unlock()
			if closeNow {
				c.close()
			}
		})
	}
}

// size reports how many connections the pool holds, live or not.
func (p *pool) size() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.entries {
		if e.conn != nil {
			n++
		}
	}
	return n
}

// forget closes the alias's connection (it was replaced or removed).
func (p *pool) forget(name string) {
	p.mu.Lock()
	var c *conn
	if e := p.entries[name]; e != nil {
		c, e.conn = e.conn, nil
	}
	p.mu.Unlock()
	if c != nil {
		c.close()
	}
}

// watch marks c dead when its connection ends.
func (p *pool) watch(c *conn) {
	defer p.wg.Done()
	c.ssh.Wait()
	close(c.done)
}

// keepalive probes c so that a vanished host is noticed (and its
// connection closed) without waiting for TCP.
func (p *pool) keepalive(c *conn) {
	defer p.wg.Done()
	t := time.NewTicker(keepaliveInterval)
	defer t.Stop()
	for {
		select {
		case <-c.done:
			return
		case <-t.C:
		}
		answered := make(chan error, 1)
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			_, _, err := c.ssh.SendRequest("keepalive@openssh.com", true, nil)
			answered <- err
		}()
		timer := time.NewTimer(keepaliveTimeout)
		select {
		case err := <-answered:
			if err != nil {
				c.close()
			}
		case <-timer.C:
			c.close()
		case <-c.done:
		}
		timer.Stop()
	}
}

// janitor closes connections idle for the ttl.
func (p *pool) janitor(every time.Duration) {
	defer p.wg.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.evictIdle()
		}
	}
}

// evictIdle closes every connection unused for the ttl.
func (p *pool) evictIdle() {
	var idle []*conn
	p.mu.Lock()
	for _, e := range p.entries {
		if e.conn != nil && e.inUse == 0 && (!e.conn.alive() || p.now().Sub(e.lastUse) >= p.ttl) {
			idle = append(idle, e.conn)
			e.conn = nil
		}
	}
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// Close closes every connection and stops the pool's goroutines, returning
// once they have exited. Calls in flight fail. Safe to call twice.
func (p *pool) Close() {
	p.closeOnce.Do(func() {
		p.mu.Lock()
		p.closed = true
		var all []*conn
		for _, e := range p.entries {
			if e.conn != nil {
				all = append(all, e.conn)
				e.conn = nil
			}
		}
		p.mu.Unlock()
		close(p.stop)
		for _, c := range all {
			c.close()
		}
	})
	p.wg.Wait()
}
