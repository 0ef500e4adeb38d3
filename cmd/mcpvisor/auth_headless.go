package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// Signing in for a person who is not at the machine: with a code (the
// device authorization grant) where the authorization server offers it,
// else by pasting back the address the browser ends on; and serve's
// --public-url, which has the redirect land on the sidecar itself.

func signInFlags(fs *flag.FlagSet, f *flags) {
	fs.BoolVar(&f.device, "device", false, "sign in with a code: enter the code shown here at the authorization server's page, on any device (the device authorization grant; fails where the server does not offer it)")
	fs.BoolVar(&f.noBrowser, "no-browser", false, "open no browser: sign in with a code where the authorization server offers it, else print the authorization URL to open on any machine and read back the address the browser ends on (the default when no browser can be opened here)")
}

// A loginMode is how auth login signs in.
type loginMode int

const (
	loginBrowser loginMode = iota // a browser on this machine, the redirect to its loopback listener
	loginDevice                   // with a code, or fail
	loginAway                     // with a code where offered, else pasting the redirect back
)

func loginModeOf(f flags) loginMode {
	switch {
	case f.device:
		return loginDevice
	case f.noBrowser, headless():
		return loginAway
	}
	return loginBrowser
}

// headless reports whether no browser can be opened here: no $BROWSER
// and, on Linux and the BSDs, no display to open one on (a server, a
// container, an SSH session). macOS and Windows always have one.
func headless() bool {
	if os.Getenv("BROWSER") != "" {
		return false
	}
	switch runtime.GOOS {
	case "darwin", "windows", "ios", "android":
		return false
	}
	return os.Getenv("DISPLAY") == "" && os.Getenv("WAYLAND_DISPLAY") == ""
}

// cmdAuthLoginAway is auth login for a person not at the machine.
func cmdAuthLoginAway(ctx context.Context, e *env, mode loginMode) error {
	if len(e.args) != 1 {
		return &exitError{code: 2, msg: "auth login: want auth login NAME"}
	}
	name, f := e.args[0], e.f
	if e.sidecar != nil {
		return remoteLoginAway(ctx, e.sidecar, name, mode, f.wait, e.stdin, e.stdout, e.stderr)
	}
	h, err := openForLogin(ctx, e, name)
	if err != nil {
		return err
	}
	defer h.Close()
	device := mode == loginDevice
	if mode == loginAway {
		if device, err = h.OffersDeviceSignIn(ctx, name); err != nil {
			return fmt.Errorf("sign-in to %s failed: %w", name, err)
		}
	}
	if device {
		si, err := h.BeginDeviceSignIn(ctx, name)
		if errors.Is(err, mcpvisor.ErrNoDeviceSignIn) {
			return fmt.Errorf("sign-in to %s: %w; use --no-browser to sign in on another machine's browser", name, err)
		}
		if err != nil {
			return fmt.Errorf("sign-in to %s failed: %w", name, err)
		}
		printDeviceCode(e.stderr, name, si.Device)
		select {
		case <-si.Done():
		case <-ctx.Done():
			return fmt.Errorf("sign-in to %s: %w", name, ctx.Err())
		}
		if err := si.Err(); err != nil {
			return fmt.Errorf("sign-in to %s failed: %w", name, err)
		}
	} else if err := h.SignInWith(ctx, name, pasteBackSignIn(e.stdin, e.stderr)); err != nil {
		return fmt.Errorf("sign-in to %s failed: %w", name, err)
	}
	ready, cancel := context.WithTimeout(ctx, f.wait)
	defer cancel()
	if err := h.WaitReady(ready, name); err != nil {
		return fmt.Errorf("signed in, but server %s is not ready: %w", name, err)
	}
	for _, st := range h.AuthStatuses() {
		if st.Server == name {
			fmt.Fprintf(e.stdout, "signed in to %s%s\n", name, authSummary(st))
		}
	}
	return nil
}

func printDeviceCode(w io.Writer, server string, d *mcpvisor.DeviceCode) {
	fmt.Fprintf(w, "mcpvisor: server %q needs you to sign in. On any device, open\n\n  %s\n\nand enter the code\n\n  %s\n\n", server, d.VerificationURI, d.UserCode)
	if d.VerificationURIComplete != "" {
		fmt.Fprintf(w, "(or open %s, which holds the code)\n\n", d.VerificationURIComplete)
	}
	fmt.Fprintf(w, "Waiting for the sign-in (the code expires at %s) ...\n", d.Expires.Local().Format(time.TimeOnly))
}

// pasteBackSignIn is the browser step for a person on another machine: it
// prints the authorization URL (to the terminal, never on a command line)
// and reads back the address the browser ended on, whose query it
// returns; the sign-in checks its state and redeems its code.
func pasteBackSignIn(stdin io.Reader, w io.Writer) mcpvisor.SignInFunc {
	return func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		printPasteBack(w, p.Server, p.AuthorizationURL, p.RedirectURI)
		line, err := readLine(ctx, stdin)
		if err != nil {
			return nil, err
		}
		return pastedQuery(line, p.RedirectURI)
	}
}

func printPasteBack(w io.Writer, server, authorizationURL, redirectURI string) {
	fmt.Fprintf(w, "mcpvisor: server %q needs you to sign in. Open this URL in a browser on any machine:\n\n  %s\n\n"+
		"After you sign in, the browser is sent to %s, which it cannot load there.\n"+
		"Copy the whole address from its address bar and paste it here, then press Enter:\n", server, authorizationURL, redirectURI)
}

// pastedQuery is the query of the address the person pasted, which must
// be on the redirect URI's path and carry a state, and a code or an error.
func pastedQuery(line, redirectURI string) (url.Values, error) {
	u, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		return nil, fmt.Errorf("the pasted address is not a URL: %v", err)
	}
	if want, err := url.Parse(redirectURI); err == nil && want.Path != "" && u.Path != want.Path {
		return nil, fmt.Errorf("the pasted address is not the redirect to %s: paste the address the browser ended on after signing in", redirectURI)
	}
	q := u.Query()
	if q.Get("state") == "" || q.Get("code") == "" && q.Get("error") == "" {
		return nil, errors.New("the pasted address carries no state and code: paste the whole address the browser ended on after signing in")
	}
	return q, nil
}

// readLine reads one line of stdin, or gives up when ctx ends. The read
// itself cannot be interrupted: it is left to the process's exit.
func readLine(ctx context.Context, stdin io.Reader) (string, error) {
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err == io.EOF && strings.TrimSpace(line) != "" {
			err = nil
		}
		got <- result{line, err}
	}()
	select {
	case r := <-got:
		if r.err == io.EOF {
			return "", errors.New("no address was pasted (stdin ended)")
		}
		return r.line, r.err
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// remoteLoginAway is auth login for a person not at the machine, through
// the sidecar r that holds the data directory; then, at most wait, until
// the server is ready.
func remoteLoginAway(ctx context.Context, r *remote, name string, mode loginMode, wait time.Duration, stdin io.Reader, stdout, stderr io.Writer) error {
	path := "/v1/servers/" + url.PathEscape(name) + "/auth"
	var view sidecar.SignInView
	err := r.do(ctx, http.MethodPost, path+"?method=device", nil, &view)
	switch {
	case err == nil:
		printDeviceCode(stderr, name, view.Device)
		return waitRemoteSignIn(ctx, r, name, view.Device.Expires, wait, stdout, "the code was not entered in time")
	case apiCode(err) != sidecar.CodeNoDeviceSignIn:
		return err
	case mode == loginDevice:
		return fmt.Errorf("sign-in to %s: %s; use --no-browser to sign in on another machine's browser", name, strings.TrimPrefix(err.Error(), "sidecar: "))
	}
	if err := r.do(ctx, http.MethodPost, path+"?method=paste", nil, &view); err != nil {
		return err
	}
	if view.AuthorizationURL == "" {
		return fmt.Errorf("sign-in to %s: the sidecar gave no authorization URL", name)
	}
	if !loopbackRedirect(view.RedirectURI) {
		// The sidecar's own callback (--public-url): the browser comes
		// back to it, wherever the browser is.
		fmt.Fprintf(stderr, "mcpvisor: server %q needs you to sign in. Open this URL in a browser on any machine:\n\n  %s\n\nWaiting for the browser to come back to %s ...\n", name, view.AuthorizationURL, view.RedirectURI)
		return waitRemoteSignIn(ctx, r, name, time.Now().Add(10*time.Minute), wait, stdout, "no redirect arrived")
	}
	printPasteBack(stderr, name, view.AuthorizationURL, view.RedirectURI)
	line, err := readLine(ctx, stdin)
	if err != nil {
		return fmt.Errorf("sign-in to %s: %w", name, err)
	}
	if _, err := pastedQuery(line, view.RedirectURI); err != nil {
		return fmt.Errorf("sign-in to %s: %w", name, err)
	}
	var st mcpvisor.AuthStatus
	if err := r.do(ctx, http.MethodPost, path+"/redirect", sidecar.RedirectPaste{URL: strings.TrimSpace(line)}, &st); err != nil {
		return fmt.Errorf("sign-in to %s failed: %w", name, err)
	}
	fmt.Fprintf(stdout, "signed in to %s%s\n", name, authSummary(st))
	return remoteReady(ctx, r, name, wait)
}

// waitRemoteSignIn waits, until deadline, for the sidecar r to report name
// signed in with no sign-in pending; then, at most wait, until the server
// is ready. late says what did not happen by the deadline.
func waitRemoteSignIn(ctx context.Context, r *remote, name string, deadline time.Time, wait time.Duration, stdout io.Writer, late string) error {
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		st, err := remoteAuthOf(ctx, r, name)
		if err != nil {
			return err
		}
		if st.SignedIn && !st.Pending {
			fmt.Fprintf(stdout, "signed in to %s%s\n", name, authSummary(st))
			return remoteReady(ctx, r, name, wait)
		}
		if !st.Pending && st.Error != "" {
			return fmt.Errorf("sign-in to %s failed: %s", name, st.Error)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("sign-in to %s: %s: %w", name, late, ctx.Err())
		}
	}
}

// loopbackRedirect reports whether uri is a loopback redirect URI, which
// a browser on another machine cannot load.
func loopbackRedirect(uri string) bool {
	u, err := url.Parse(uri)
	if err != nil {
		return false
	}
	h := u.Hostname()
	return h == "localhost" || h == "127.0.0.1" || h == "::1"
}

// checkPublicURL checks serve's --public-url: "" or an absolute http(s)
// URL with no query or fragment.
func checkPublicURL(raw string) error {
	if raw == "" {
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("want an absolute http(s) URL with no query, got %q", raw)
	}
	return nil
}

// signInCallback is the host's sign-in redirect URI for --public-url.
func signInCallback(publicURL string) string {
	if publicURL == "" {
		return ""
	}
	return sidecar.SignInCallback(publicURL)
}
