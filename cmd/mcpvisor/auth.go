package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/term"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/sidecar"
)

// Signing in to remote servers that need OAuth: auth login|status|logout,
// and the browser step the commands that start servers take by themselves.

// interactive reports whether a person can do a sign-in: $BROWSER names a
// browser, or the process runs in a terminal (terminalSession).
func interactive() bool {
	return os.Getenv("BROWSER") != "" || terminalSession(os.Stdin, os.Stderr)
}

// terminalSession reports whether stdin and stderr, where a sign-in's URL
// is written, are both terminals: a person is there to read the URL and
// follow it. A character device is not enough: /dev/null is one, and is
// the stdin of cron, CI and systemd runs, which must not wait for a
// browser no one will open.
func terminalSession(stdin, stderr *os.File) bool {
	return term.IsTerminal(int(stdin.Fd())) && term.IsTerminal(int(stderr.Fd()))
}

// loginCommand is the command line that signs in to server: what a
// command that cannot sign in by itself tells the person to run. It names
// the files and data directory this command was given, so it signs in the
// same server in the same secret store.
func loginCommand(f flags, server string, viaSidecar bool) string {
	words := []string{"mcpvisor", "auth", "login", shellQuote(server)}
	if !viaSidecar {
		for _, c := range f.config {
			words = append(words, "--config", shellQuote(c))
		}
	}
	if f.data != "" && f.data != mcpvisor.DefaultDataDir {
		words = append(words, "--data", shellQuote(f.data))
	}
	return strings.Join(words, " ")
}

// shellQuote quotes s for a POSIX shell when it holds anything but
// characters a shell takes literally.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@%+,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// browserSignIn is the browser step for the CLI: it opens the sign-in URL
// with $BROWSER (the convention xdg-open and others honour: a
// colon-separated list of commands, %s standing for the URL), else
// xdg-open, and always prints it; the redirect comes back to the host's
// loopback listener. That URL is the flow's one-time start URL, never the
// authorization URL: a browser's command line is readable by every local
// user, and the state and PKCE challenge must not be.
func browserSignIn(w io.Writer) mcpvisor.SignInFunc {
	return func(ctx context.Context, p mcpvisor.SignInPrompt) (url.Values, error) {
		fmt.Fprintf(w, "mcpvisor: server %q needs you to sign in. Open this URL in a browser:\n\n  %s\n\nWaiting for the redirect to %s ...\n", p.Server, p.URL, p.RedirectURI)
		if err := openBrowser(ctx, p.URL); err != nil {
			fmt.Fprintf(w, "mcpvisor: could not open a browser (%v): open the URL yourself\n", err)
		}
		return nil, nil
	}
}

// openBrowser starts the browser on u without waiting for it to exit.
func openBrowser(ctx context.Context, u string) error {
	var cmds []string
	if b := os.Getenv("BROWSER"); b != "" {
		cmds = strings.Split(b, ":")
	} else if _, err := exec.LookPath("xdg-open"); err == nil {
		cmds = []string{"xdg-open"}
	} else {
		return fmt.Errorf("neither $BROWSER nor xdg-open")
	}
	var last error
	for _, c := range cmds {
		fields := strings.Fields(c)
		if len(fields) == 0 {
			continue
		}
		replaced := false
		for i, f := range fields {
			if strings.Contains(f, "%s") {
				fields[i] = strings.ReplaceAll(f, "%s", u)
				replaced = true
			}
		}
		if !replaced {
			fields = append(fields, u)
		}
		cmd := exec.Command(fields[0], fields[1:]...)
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if last = cmd.Start(); last == nil {
			go cmd.Wait() // reap it whenever it exits
			return nil
		}
	}
	return last
}

// hostOptions are the options every command that runs servers opens its
// host with: with a person at hand, a server that needs sign-in gets it.
func hostOptions(f flags, cfg *mcpvisor.Config, logger *slog.Logger) mcpvisor.Options {
	opts := mcpvisor.Options{Config: cfg, DataDir: f.data, Logger: logger, AskInput: terminalInputs(os.Stdin, os.Stderr)}
	// A result's images and files are written to <data>/media; with no
	// sidecar to serve /v1/media, a link to one is its path.
	if media, err := filepath.Abs(filepath.Join(f.data, "media")); err == nil {
		opts.MediaURL = media + string(filepath.Separator)
	}
	if interactive() {
		opts.SignIn = browserSignIn(os.Stderr)
	}
	return opts
}

// cmdAuthLogin signs in to one server: it starts the server, runs the
// browser flow, and waits until the server is ready with its token. With
// a sidecar on the data directory the sidecar's server is signed in
// (remoteLogin): the secret store is the sidecar's, and neither --config
// nor the store's key is needed.
func cmdAuthLogin(ctx context.Context, e *env) error {
	if len(e.args) != 1 {
		return &exitError{code: 2, msg: "auth login: want auth login NAME"}
	}
	name := e.args[0]
	if e.sidecar != nil {
		return remoteLogin(ctx, e.sidecar, name, e.f.wait, e.stdout, e.stderr)
	}
	h, err := openForLogin(ctx, e, name)
	if err != nil {
		return err
	}
	defer h.Close()
	if err := h.SignInWith(ctx, name, browserSignIn(e.stderr)); err != nil {
		return fmt.Errorf("sign-in to %s failed: %w", name, err)
	}
	ready, cancel := context.WithTimeout(ctx, e.f.wait)
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

// cmdAuthStatus lists the servers' authorization: issuer, scopes, expiry;
// never a token. With a sidecar on the data directory, its servers'.
func cmdAuthStatus(ctx context.Context, e *env) error {
	var sts []mcpvisor.AuthStatus
	if e.sidecar != nil {
		var err error
		if sts, err = remoteAuth(ctx, e.sidecar); err != nil {
			return err
		}
	} else {
		h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: e.cfg, DataDir: e.f.data, Logger: e.logger, Only: []string{}})
		if err != nil {
			return lockHint(err)
		}
		sts = h.AuthStatuses()
		h.Close()
	}
	if e.f.json {
		if sts == nil {
			sts = []mcpvisor.AuthStatus{}
		}
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sts)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tUSER\tSIGNED IN\tGRANT\tISSUER\tSCOPES\tEXPIRES\tREFRESH\tERROR")
	for _, st := range sts {
		exp := "-"
		if !st.Expiry.IsZero() {
			exp = st.Expiry.Local().Format(time.DateTime)
		}
		fmt.Fprintf(tw, "%s\t%s\t%v\t%s\t%s\t%s\t%s\t%v\t%s\n", st.Server, dash(st.User), st.SignedIn, st.Grant, dash(st.Issuer), dash(strings.Join(st.Scopes, " ")), exp, st.Refresh, st.Error)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, st := range sts {
		if st.Warning != "" {
			fmt.Fprintf(e.stdout, "%s: %s\n", st.Server, st.Warning)
		}
	}
	return nil
}

// openForLogin opens a host running only server name, and gives the
// server e's wait to answer first: its 401 names where to sign in.
func openForLogin(ctx context.Context, e *env, name string) (*mcpvisor.Host, error) {
	h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: e.cfg, DataDir: e.f.data, Logger: e.logger, Only: []string{name}})
	if err != nil {
		return nil, lockHint(err)
	}
	known := false
	for _, st := range h.Status() {
		known = known || st.Name == name
	}
	if !known {
		h.Close()
		return nil, fmt.Errorf("no server %q in the configuration or the registry", name)
	}
	settle, cancel := context.WithTimeout(ctx, e.f.wait)
	_ = h.WaitReady(settle, name)
	cancel()
	return h, nil
}

// cmdAuthLogout forgets one server's token and registrations: the
// sidecar's, when one runs on the data directory.
func cmdAuthLogout(ctx context.Context, e *env) error {
	if len(e.args) != 1 {
		return &exitError{code: 2, msg: "auth logout: want auth logout NAME"}
	}
	name := e.args[0]
	if e.sidecar != nil {
		if err := e.sidecar.do(ctx, http.MethodDelete, "/v1/servers/"+url.PathEscape(name)+"/auth", nil, nil); err != nil {
			return err
		}
	} else {
		h, err := mcpvisor.Open(ctx, mcpvisor.Options{Config: e.cfg, DataDir: e.f.data, Logger: e.logger, Only: []string{}})
		if err != nil {
			return lockHint(err)
		}
		defer h.Close()
		if err := h.SignOut(ctx, name); err != nil {
			return err
		}
	}
	fmt.Fprintf(e.stdout, "signed out of %s\n", name)
	return nil
}

func authSummary(st mcpvisor.AuthStatus) string {
	var parts []string
	if st.Issuer != "" {
		parts = append(parts, "at "+st.Issuer)
	}
	if len(st.Scopes) > 0 {
		parts = append(parts, "scopes "+strings.Join(st.Scopes, " "))
	}
	if !st.Expiry.IsZero() {
		parts = append(parts, "expires "+st.Expiry.Local().Format(time.DateTime))
	}
	s := ""
	if len(parts) > 0 {
		s = " (" + strings.Join(parts, ", ") + ")"
	}
	if st.Warning != "" {
		s += "\n" + st.Warning
	}
	return s
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// remoteLogin signs in to a server of the sidecar r: the sidecar starts
// the flow and receives the redirect; this command opens the browser on
// the flow's one-time start URL and waits until the sidecar reports the
// server signed in, then, at most wait, ready.
func remoteLogin(ctx context.Context, r *remote, name string, wait time.Duration, stdout, stderr io.Writer) error {
	var view sidecar.SignInView
	if err := r.do(ctx, http.MethodPost, "/v1/servers/"+url.PathEscape(name)+"/auth", nil, &view); err != nil {
		return err
	}
	_, _ = browserSignIn(stderr)(ctx, mcpvisor.SignInPrompt{Server: name, URL: view.URL, RedirectURI: view.RedirectURI})
	return waitRemoteSignIn(ctx, r, name, time.Now().Add(10*time.Minute), wait, stdout, "no redirect arrived")
}

// remoteReady waits, at most wait, until the sidecar's server name is
// ready or its start has failed, and says so when it is not ready. A
// server still in needs_auth has not yet heard of its token: it is asked
// again.
func remoteReady(ctx context.Context, r *remote, name string, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		sts, err := r.servers(ctx, max(time.Until(deadline), 0))
		if err != nil {
			return err
		}
		var st *mcpvisor.ServerStatus
		for i := range sts {
			if sts[i].Name == name {
				st = &sts[i]
			}
		}
		switch {
		case st == nil || st.State == mcpvisor.StateReady:
			return nil
		case st.State != mcpvisor.StateNeedsAuth || !time.Now().Before(deadline):
			return fmt.Errorf("signed in, but server %s is %s: %s", name, st.State, st.LastError)
		}
		select {
		case <-time.After(200 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// remoteAuthOf is the sidecar's authorization status of server name (its
// own identity, not a user's).
func remoteAuthOf(ctx context.Context, r *remote, name string) (mcpvisor.AuthStatus, error) {
	sts, err := remoteAuth(ctx, r)
	if err != nil {
		return mcpvisor.AuthStatus{}, err
	}
	for _, st := range sts {
		if st.Server == name && st.User == "" {
			return st, nil
		}
	}
	return mcpvisor.AuthStatus{}, fmt.Errorf("sidecar: no authorization status for server %q", name)
}

// remoteAuth is the sidecar's GET /v1/auth.
func remoteAuth(ctx context.Context, r *remote) ([]mcpvisor.AuthStatus, error) {
	var out struct {
		Auth []mcpvisor.AuthStatus `json:"auth"`
	}
	if err := r.do(ctx, http.MethodGet, "/v1/auth", nil, &out); err != nil {
		return nil, err
	}
	return out.Auth, nil
}
