package oauth_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
)

// tokenHold holds the authorization server's answers to refreshes back,
// after it has rotated the refresh token: reached gets one value per held
// answer, and each waits until release is closed.
type tokenHold struct {
	reached chan struct{}
	release chan struct{}
	once    sync.Once
}

func holdRefreshes(t *testing.T, as *oauthtest.AuthServer) *tokenHold {
	h := &tokenHold{reached: make(chan struct{}, 16), release: make(chan struct{})}
	as.Configure(func(o *oauthtest.ServerOptions) {
		o.HoldToken = func(grant string) {
			if grant != "refresh_token" {
				return
			}
			h.reached <- struct{}{}
			<-h.release
		}
	})
	// The server's Close waits for its handlers: never leave one held.
	t.Cleanup(h.free)
	return h
}

func (h *tokenHold) free() { h.once.Do(func() { close(h.release) }) }

func (h *tokenHold) wait(t *testing.T) {
	t.Helper()
	select {
	case <-h.reached:
	case <-time.After(10 * time.Second):
		t.Fatal("no refresh reached the authorization server")
	}
}

// getWith requests the MCP endpoint through hc with ctx.
func getWith(ctx context.Context, hc *http.Client, url string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A token is refreshed once less than a third of its lifetime remains, and
// not before: a 60 s token is not refreshed on every request, as a fixed
// 60 s margin did, nor a one-hour token 20 minutes before that.
func TestRefreshMarginIsAFractionOfTheLifetime(t *testing.T) {
	for _, tc := range []struct {
		life        int // seconds
		early, late time.Duration
	}{
		{life: 60, early: 35 * time.Second, late: 45 * time.Second},
		{life: 3600, early: 2300 * time.Second, late: 2500 * time.Second},
		{life: 6, early: 2 * time.Second, late: 4 * time.Second}, // the floor: half the life
	} {
		t.Run(time.Duration(tc.life*int(time.Second)).String(), func(t *testing.T) {
			h := newHarness(t, oauthtest.ServerOptions{ExpiresIn: tc.life})
			h.authorizer(oauth.Config{}, oauth.Options{})
			h.signIn()
			h.mustGet()
			h.clock.Advance(tc.early)
			h.mustGet()
			if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code"}) {
				t.Fatalf("after %v of a %d s token: grants %q, want no refresh yet", tc.early, tc.life, g)
			}
			h.clock.Advance(tc.late - tc.early)
			h.mustGet()
			if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code", "refresh_token"}) {
				t.Fatalf("after %v of a %d s token: grants %q, want one refresh", tc.late, tc.life, g)
			}
		})
	}
}

// logSignal is a slog handler that closes seen when a record's message
// contains want.
type logSignal struct {
	want string
	seen chan struct{}
	once *sync.Once
}

func newLogSignal(want string) logSignal {
	return logSignal{want: want, seen: make(chan struct{}), once: &sync.Once{}}
}

func (l logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (l logSignal) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l logSignal) WithGroup(string) slog.Handler            { return l }
func (l logSignal) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, l.want) {
		l.once.Do(func() { close(l.seen) })
	}
	return nil
}

// The request that needed a refresh gives up after the authorization
// server rotated the refresh token: the refresh goes on, Close waits for
// it, and the rotated token is stored, so the next run refreshes with it
// instead of presenting the spent one (which revokes the grant).
func TestRefreshOutlivesItsRequestAndClose(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{ExpiresIn: 60})
	store := &mapStore{}
	closing := newLogSignal("waiting for the token refresh in flight")
	a := h.authorizer(oauth.Config{}, oauth.Options{Store: store, Key: "k", Log: slog.New(closing)})
	h.signIn()
	h.mustGet()
	hold := holdRefreshes(t, h.as)
	h.clock.Advance(50 * time.Second)

	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := getWith(ctx, h.hc, h.rs.MCPURL())
		got <- err
	}()
	hold.wait(t)
	cancel() // the command is told to stop
	if err := <-got; !errors.Is(err, context.Canceled) {
		t.Fatalf("the abandoned request = %v, want context.Canceled", err)
	}
	closed := make(chan struct{})
	go func() {
		a.Close()
		close(closed)
	}()
	select {
	case <-closing.seen:
	case <-closed:
		t.Fatal("Close returned while the refresh was held at the authorization server")
	}
	hold.free()
	<-closed

	rotated := h.as.Tokens("refresh")
	if st := store.state(t, "k"); st.Token == nil || st.Token.Refresh != rotated[len(rotated)-1] {
		t.Fatal("the store does not hold the refresh token the abandoned refresh received")
	}
	// The next run: a new Authorizer on the store.
	h.authorizer(oauth.Config{}, oauth.Options{Store: store, Key: "k"})
	h.clock.Advance(50 * time.Second)
	h.mustGet()
	if n := h.as.Reuses(); n != 0 {
		t.Errorf("%d reuses of a spent refresh token", n)
	}
	if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code", "refresh_token", "refresh_token"}) {
		t.Errorf("token grants = %q, want the sign-in and two refreshes", g)
	}
}

// Two Authorizers of one process sharing a Store key (a server's
// Authorizer replaced while the old one still serves): one refresh, and
// the other takes its result from the store instead of spending the same
// refresh token again.
func TestAuthorizersSharingAKeyRefreshOnce(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{ExpiresIn: 60})
	store := &mapStore{}
	a1 := h.authorizer(oauth.Config{}, oauth.Options{Store: store, Key: "k"})
	h.signIn()
	hc1 := h.hc
	a2 := h.authorizer(oauth.Config{}, oauth.Options{Store: store, Key: "k"})
	hc2 := h.hc
	if !a2.Ready() {
		t.Fatal("the second Authorizer did not load the stored token")
	}
	hold := holdRefreshes(t, h.as)
	h.clock.Advance(50 * time.Second)

	codes := make(chan int, 2)
	errs := make(chan error, 2)
	get := func(hc *http.Client) {
		code, err := getWith(context.Background(), hc, h.rs.MCPURL())
		codes <- code
		errs <- err
	}
	go get(hc1)
	hold.wait(t)
	go get(hc2)
	hold.free()
	for range 2 {
		if code, err := <-codes, <-errs; err != nil || code != http.StatusOK {
			t.Fatalf("GET = %d, %v; want 200", code, err)
		}
	}
	if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code", "refresh_token"}) {
		t.Errorf("token grants = %q, want one refresh", g)
	}
	if n := h.as.Reuses(); n != 0 {
		t.Errorf("%d reuses of a spent refresh token", n)
	}
	a1.Close()
	a2.Close()
}

// Concurrent requests that find the token due share one refresh.
func TestConcurrentRequestsShareOneRefresh(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{ExpiresIn: 60})
	h.authorizer(oauth.Config{}, oauth.Options{})
	h.signIn()
	h.clock.Advance(50 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for range 8 {
		wg.Go(func() {
			if code, err := getWith(context.Background(), h.hc, h.rs.MCPURL()); err != nil || code != http.StatusOK {
				errs <- errors.Join(err, errors.New(http.StatusText(code)))
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("GET: %v", err)
	}
	if g := grants(h.as.Requests("token")); !slices.Equal(g, []string{"authorization_code", "refresh_token"}) {
		t.Errorf("token grants = %q, want one refresh", g)
	}
}

// failingStore is a mapStore whose Save fails while fail is set.
type failingStore struct {
	mapStore
	fail atomic.Bool
}

func (s *failingStore) Save(key string, b []byte) error {
	if s.fail.Load() {
		return errors.New("disk full")
	}
	return s.mapStore.Save(key, b)
}

// A refreshed token that could not be stored is kept in memory, and the
// stored (older) token is not taken for another Authorizer's newer one:
// its refresh token is spent, and presenting it would revoke the grant.
func TestRefreshAfterAFailedSaveKeepsTheNewerToken(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{ExpiresIn: 60})
	store := &failingStore{}
	h.authorizer(oauth.Config{}, oauth.Options{Store: store, Key: "k"})
	h.signIn()
	h.clock.Advance(50 * time.Second)
	store.fail.Store(true)
	h.mustGet() // refreshed; the store keeps the first token
	store.fail.Store(false)
	for range 2 {
		h.clock.Advance(50 * time.Second)
		h.mustGet()
	}
	if n := h.as.Reuses(); n != 0 {
		t.Errorf("%d reuses of a spent refresh token", n)
	}
	rotated := h.as.Tokens("refresh")
	if st := store.state(t, "k"); st.Token == nil || st.Token.Refresh != rotated[len(rotated)-1] {
		t.Error("the store does not hold the last refresh token")
	}
	if g := grants(h.as.Requests("token")); len(g) != 4 {
		t.Errorf("token grants = %q, want the sign-in and three refreshes", g)
	}
}
