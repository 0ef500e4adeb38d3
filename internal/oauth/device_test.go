package oauth_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/mcpvisor/mcpvisor/internal/oauth"
	"github.com/mcpvisor/mcpvisor/internal/oauth/oauthtest"
)

// waits records the polling waits of sign-ins with a code, spending none.
type waits struct {
	mu sync.Mutex
	d  []time.Duration
}

func (w *waits) wait(done <-chan struct{}, d time.Duration) bool {
	w.mu.Lock()
	w.d = append(w.d, d)
	w.mu.Unlock()
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func (w *waits) all() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.d)
}

func beginDevice(t *testing.T, h *harness, w *waits) *oauth.Flow {
	t.Helper()
	a := h.authorizer(oauth.Config{Scopes: []string{"read"}}, oauth.Options{})
	t.Cleanup(a.Close)
	oauth.SetWaitPoll(a, w.wait)
	f, err := a.BeginDevice(context.Background())
	if err != nil {
		t.Fatalf("BeginDevice: %v", err)
	}
	if f.Device == nil || f.Device.UserCode == "" || !strings.HasPrefix(f.Device.VerificationURI, h.as.Issuer()) || !strings.Contains(f.Device.VerificationURIComplete, f.Device.UserCode) {
		t.Fatalf("device code = %+v", f.Device)
	}
	return f
}

func waitFlow(t *testing.T, f *oauth.Flow) error {
	t.Helper()
	select {
	case <-f.Done():
		return f.Err()
	case <-time.After(30 * time.Second):
		t.Fatal("the sign-in with a code did not end")
		return nil
	}
}

// A sign-in with a code polls at the server's interval, five seconds more
// after each slow_down, keeps polling while the sign-in is pending, and
// ends signed in once the person approves; the token works.
func TestDeviceSignIn(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{Device: true, DeviceInterval: 2,
		DeviceAnswers: []string{"authorization_pending", "slow_down", "authorization_pending"}})
	var w waits
	f := beginDevice(t, h, &w)
	if st := h.a.Status(); !st.Pending || st.SignedIn {
		t.Errorf("status while pending = %+v", st)
	}
	if !h.as.DecideDevice(f.Device.UserCode, oauthtest.DeviceApprove) {
		t.Fatal("the server knows no such user code")
	}
	if err := waitFlow(t, f); err != nil {
		t.Fatalf("sign-in with a code: %v", h.leaks.see(err))
	}
	want := []time.Duration{2 * time.Second, 2 * time.Second, 7 * time.Second, 7 * time.Second}
	if diff := cmp.Diff(want, w.all()); diff != "" {
		t.Errorf("polling waits (-want +got):\n%s", diff)
	}
	if n := h.as.DevicePolls(f.Device.UserCode); n != 4 {
		t.Errorf("%d polls, want 4", n)
	}
	h.mustGet()
	if st := h.a.Status(); !st.SignedIn || st.Pending || !slices.Contains(st.Scopes, "read") {
		t.Errorf("status after = %+v", st)
	}
	regs := h.as.Requests("register")
	if len(regs) != 1 || !slices.Contains(regs[0].Form["grant_types"], oauth.GrantDeviceCode) {
		t.Errorf("registrations %+v: want one asking for the device_code grant", regs)
	}
	da := h.as.Requests("device_authorization")
	if len(da) != 1 || da[0].Form.Get("resource") != h.rs.MCPURL() || !strings.Contains(da[0].Form.Get("scope"), "read") || da[0].Form.Get("code_challenge") != "" {
		t.Errorf("device authorization requests %+v", da)
	}
	if n := len(h.as.Requests("authorize")); n != 0 {
		t.Errorf("%d authorization requests, want none", n)
	}
}

// A refusal and an expired code end the sign-in with an error that says so;
// the Authorizer stays signed out.
func TestDeviceSignInRefusedOrExpired(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []string
		decide  oauthtest.DeviceDecision
		want    string
	}{
		{"denied", nil, oauthtest.DeviceDeny, "refused"},
		{"expired", []string{"authorization_pending", "expired_token"}, "", "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, oauthtest.ServerOptions{Device: true, DeviceAnswers: tc.answers})
			var w waits
			f := beginDevice(t, h, &w)
			if tc.decide != "" {
				h.as.DecideDevice(f.Device.UserCode, tc.decide)
			}
			err := waitFlow(t, f)
			if !errors.Is(err, oauth.ErrAuthorization) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want ErrAuthorization saying %q", err, tc.want)
			}
			if st := h.a.Status(); st.SignedIn || st.Pending || !strings.Contains(st.Error, tc.want) {
				t.Errorf("status = %+v", st)
			}
		})
	}
}

// Without a device authorization endpoint there is no sign-in with a code.
func TestDeviceSignInNotOffered(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{})
	a := h.authorizer(oauth.Config{}, oauth.Options{})
	defer a.Close()
	if ok, err := a.OffersDevice(context.Background()); ok || err != nil {
		t.Errorf("OffersDevice = %v, %v; want false", ok, err)
	}
	if _, err := a.BeginDevice(context.Background()); !errors.Is(err, oauth.ErrNoDeviceGrant) {
		t.Errorf("BeginDevice = %v; want ErrNoDeviceGrant", err)
	}
}

// Close ends a sign-in with a code that is waiting to poll, and returns
// once its poller has.
func TestDeviceSignInClose(t *testing.T) {
	h := newHarness(t, oauthtest.ServerOptions{Device: true, DeviceInterval: 3600})
	a := h.authorizer(oauth.Config{}, oauth.Options{})
	f, err := a.BeginDevice(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	select {
	case <-f.Done():
	default:
		t.Fatal("Close returned with the sign-in with a code still open")
	}
	if !errors.Is(f.Err(), oauth.ErrAuthorization) {
		t.Errorf("Err = %v", f.Err())
	}
	if n := h.as.DevicePolls(f.Device.UserCode); n != 0 {
		t.Errorf("%d polls; want none within the hour's interval", n)
	}
}
