package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/sidecar"
)

// A running sidecar holds its data directory's journal. It leaves a note
// there, <data>/sidecar.json, saying where it listens, where its token is
// and which config file it runs, so the CLI's commands that need the
// journal or a live host can go through its API instead.

const sidecarNote = "sidecar.json"

type sidecarInfo struct {
	URL       string `json:"url"`
	PID       int    `json:"pid"`
	TokenFile string `json:"token_file"`
	// AdminTokenFile holds the admin token, which the CLI sends for all
	// but its tool calls; empty when the token of TokenFile is both.
	AdminTokenFile string `json:"admin_token_file,omitempty"`
	// CertFile is the certificate an HTTPS sidecar serves (absolute
	// path), which the CLI pins; empty for plain HTTP.
	CertFile string `json:"cert_file,omitempty"`
	// Config is the config file the sidecar runs (absolute path).
	Config string `json:"config,omitempty"`
}

func writeSidecarNote(data string, info sidecarInfo) error {
	b, err := json.Marshal(info)
	if err != nil {
		return err
	}
	tmp := filepath.Join(data, sidecarNote+".tmp")
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(data, sidecarNote))
}

func removeSidecarNote(data string) { _ = os.Remove(filepath.Join(data, sidecarNote)) }

// remote is a client of the sidecar running on a data directory.
type remote struct {
	// token is the gateway token; adminToken the admin token, "" when
	// token is both.
	base, token, adminToken string
	client                  *http.Client
	info                    sidecarInfo
	data                    string
}

// requestTimeout bounds an API request whose context has no deadline of
// its own, except the streams: a call, followed events.
const requestTimeout = 2 * time.Minute

// errNoSidecar says that a command needs a sidecar and none answers.
var errNoSidecar = errors.New("no sidecar is running on this data directory")

// findSidecar returns a client of the sidecar on f.data, or errNoSidecar
// (wrapped with the reason) when none is running.
func findSidecar(ctx context.Context, f flags) (*remote, error) {
	b, err := os.ReadFile(filepath.Join(f.data, sidecarNote))
	if err != nil {
		return nil, fmt.Errorf("%w (%s): start one with mcpvisor serve --data %s", errNoSidecar, f.data, f.data)
	}
	var info sidecarInfo
	if err := json.Unmarshal(b, &info); err != nil || info.URL == "" {
		return nil, fmt.Errorf("%w: %s is unreadable", errNoSidecar, filepath.Join(f.data, sidecarNote))
	}
	client := &http.Client{}
	if info.CertFile != "" {
		tc, err := pinnedTLS(info.CertFile)
		if err != nil {
			return nil, fmt.Errorf("sidecar at %s: %w", info.URL, err)
		}
		client.Transport = &http.Transport{TLSClientConfig: tc}
	}
	r := &remote{base: strings.TrimSuffix(info.URL, "/"), client: client, info: info, data: f.data}
	hctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(hctx, http.MethodGet, r.base+"/healthz", nil)
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: the sidecar noted at %s (pid %d) does not answer: %v", errNoSidecar, info.URL, info.PID, err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK { // another program took the port
		return nil, fmt.Errorf("%w: %s, noted by the sidecar (pid %d), answers HTTP %d", errNoSidecar, info.URL, info.PID, resp.StatusCode)
	}
	// Read once the sidecar answers: a note left by one that is gone
	// may name a token file that went with it.
	tok, err := os.ReadFile(info.TokenFile)
	if err != nil {
		return nil, fmt.Errorf("sidecar at %s: token: %w", info.URL, err)
	}
	r.token = strings.TrimSpace(string(tok))
	if info.AdminTokenFile != "" {
		tok, err := os.ReadFile(info.AdminTokenFile)
		if err != nil {
			return nil, fmt.Errorf("sidecar at %s: admin token: %w", info.URL, err)
		}
		r.adminToken = strings.TrimSpace(string(tok))
	}
	return r, nil
}

// sidecarOn returns a client of the sidecar answering on f.data; nil when
// none does (no note, or a note left by one that is gone); or the error
// that keeps the CLI from asking one that answers (its token unreadable).
func sidecarOn(ctx context.Context, f flags) (*remote, error) {
	r, err := findSidecar(ctx, f)
	if errors.Is(err, errNoSidecar) {
		return nil, nil
	}
	return r, err
}

// noteConfig says on w, when --config names a file other than the one the
// sidecar runs, that the sidecar's servers answer and the file is not read.
func (r *remote) noteConfig(files configFiles, data string, w io.Writer) {
	config := files.String()
	if len(files) == 0 || len(files) == 1 && r.info.Config != "" && sameFile(files[0], r.info.Config) {
		return
	}
	theirs := "its own servers"
	if r.info.Config != "" {
		theirs = "the servers of " + r.info.Config
	}
	fmt.Fprintf(w, "mcpvisor: --config %s is not read: the sidecar running on %s (pid %d) answers, with %s\n",
		config, data, r.info.PID, theirs)
}

// sameFile reports whether the paths name one file.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	absA, _ := filepath.Abs(a)
	absB, _ := filepath.Abs(b)
	return absA == absB
}

// pinnedTLS trusts exactly the certificate the sidecar serves, read from
// the file it noted: the CLI runs on the sidecar's machine, and dials a
// loopback address that the certificate need not name, so the leaf is
// compared byte for byte instead of verifying a chain and host name.
func pinnedTLS(certFile string) (*tls.Config, error) {
	raw, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	leaf := firstCertificate(raw)
	if leaf == nil {
		return nil, fmt.Errorf("certificate %s holds no PEM certificate", certFile)
	}
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// Verification is VerifyConnection's pin, not the default chain check.
		InsecureSkipVerify: true,
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 || !bytes.Equal(cs.PeerCertificates[0].Raw, leaf) {
				return fmt.Errorf("the sidecar's certificate is not the one in %s", certFile)
			}
			return nil
		},
	}, nil
}

// firstCertificate returns the DER bytes of the first CERTIFICATE block
// in a PEM file, the leaf that tls.X509KeyPair serves, or nil.
func firstCertificate(pemBytes []byte) []byte {
	for {
		var block *pem.Block
		if block, pemBytes = pem.Decode(pemBytes); block == nil {
			return nil
		}
		if block.Type == "CERTIFICATE" {
			return block.Bytes
		}
	}
}

// do sends one API request and decodes the JSON answer into out (nil:
// discard), within requestTimeout unless ctx has a deadline. An API error
// comes back as its message and code.
func (r *remote) do(ctx context.Context, method, path string, body, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, requestTimeout)
		defer cancel()
	}
	resp, err := r.open(ctx, method, path, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return fmt.Errorf("sidecar: %w", err)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(raw, out)
}

// open sends one API request and returns the response of a success, its
// body for the caller to read and close; an API error comes back as its
// message and code. It is bounded by ctx alone.
func (r *remote) open(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, r.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+r.tokenFor(method, path))
	req.Header.Set("Accept", accept)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("sidecar: %w", err)
	}
	if resp.StatusCode < 300 {
		return resp, nil
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e sidecar.ErrorBody
	if json.Unmarshal(raw, &e) == nil && e.Error.Message != "" {
		return nil, &apiError{status: resp.StatusCode, code: e.Error.Code, message: e.Error.Message}
	}
	return nil, fmt.Errorf("sidecar: HTTP %d", resp.StatusCode)
}

// tokenFor is the token a request sends: the gateway token for a tool
// call, as any MCP client makes it, so that the person may answer with
// the CLI (admin token) an approval the call raises; the admin token for
// everything else, the changes of state included.
func (r *remote) tokenFor(method, path string) string {
	if r.adminToken == "" || method == http.MethodPost && path == "/v1/call" {
		return r.token
	}
	return r.adminToken
}

// apiError is an error the sidecar's API answered: its HTTP status, its
// stable code (sidecar.Code*) and its message.
type apiError struct {
	status        int
	code, message string
}

func (e *apiError) Error() string { return fmt.Sprintf("sidecar: %s (%s)", e.message, e.code) }

// apiCode is the code of the API error err carries; "" for any other.
func apiCode(err error) string {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.code
	}
	return ""
}

// cmdElicitations lists the sidecar's pending elicitations, or answers one:
// elicitations resolve ID accept|decline|cancel [CONTENT_JSON].
func cmdElicitations(ctx context.Context, f flags, pos []string, stdout io.Writer) error {
	r, err := findSidecar(ctx, f)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		if pos[0] != "resolve" || len(pos) < 3 || len(pos) > 4 {
			return &exitError{code: 2, msg: "elicitations: want elicitations [--json] or elicitations resolve ID accept|decline|cancel [CONTENT_JSON]"}
		}
		body := map[string]any{"action": pos[2]}
		if len(pos) == 4 {
			var content map[string]any
			if err := json.Unmarshal([]byte(pos[3]), &content); err != nil {
				return &exitError{code: 2, msg: "elicitations resolve: CONTENT_JSON must be a JSON object"}
			}
			body["content"] = content
		}
		if err := r.do(ctx, http.MethodPost, "/v1/elicitations/"+url.PathEscape(pos[1]), body, nil); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "elicitation %s answered %s\n", pos[1], pos[2])
		return nil
	}
	var out struct {
		Elicitations []json.RawMessage `json:"elicitations"`
	}
	if err := r.do(ctx, http.MethodGet, "/v1/elicitations", nil, &out); err != nil {
		return err
	}
	if f.json {
		for _, e := range out.Elicitations {
			fmt.Fprintln(stdout, string(e))
		}
		return nil
	}
	for _, raw := range out.Elicitations {
		var e sidecar.ElicitationView
		_ = json.Unmarshal(raw, &e)
		// A server wrote the message and the field names: escaped, so a
		// terminal sequence in them cannot rewrite the screen.
		fmt.Fprintf(stdout, "%s  %s asks (%s): %s\n", printable(e.ID), printable(e.Server), printable(e.Mode), printable(e.Message))
		if e.URL != "" {
			fmt.Fprintf(stdout, "    url: %s\n", printable(e.URL))
		}
		for _, fl := range e.Fields {
			var marks []string
			if fl.Required {
				marks = append(marks, "required")
			}
			if fl.Sensitive {
				marks = append(marks, "sensitive")
			}
			fmt.Fprintf(stdout, "    %s: %s %s\n", printable(fl.Name), printable(fl.Type), strings.Join(marks, ", "))
		}
	}
	return nil
}

// cmdApprovals lists the sidecar's host-tool calls waiting for approval,
// or answers one: approvals allow|deny ID [--reason R].
func cmdApprovals(ctx context.Context, f flags, pos []string, stdout io.Writer) error {
	const want = "approvals: want approvals [--json] or approvals allow|deny ID [--reason R]"
	answer := len(pos) > 0
	if answer && (len(pos) != 2 || (pos[0] != "allow" && pos[0] != "deny")) {
		return &exitError{code: 2, msg: want}
	}
	r, err := findSidecar(ctx, f)
	if err != nil {
		return err
	}
	if answer {
		body := map[string]string{"decision": pos[0]}
		if f.reason != "" {
			body["reason"] = f.reason
		}
		if err := r.do(ctx, http.MethodPost, "/v1/approvals/"+url.PathEscape(pos[1]), body, nil); err != nil {
			return err
		}
		past := map[string]string{"allow": "allowed", "deny": "denied"}[pos[0]]
		fmt.Fprintf(stdout, "approval %s %s\n", pos[1], past)
		return nil
	}
	var out struct {
		Approvals []json.RawMessage `json:"approvals"`
	}
	if err := r.do(ctx, http.MethodGet, "/v1/approvals", nil, &out); err != nil {
		return err
	}
	if f.json {
		for _, a := range out.Approvals {
			fmt.Fprintln(stdout, string(a))
		}
		return nil
	}
	for _, raw := range out.Approvals {
		var a sidecar.ApprovalView
		_ = json.Unmarshal(raw, &a)
		who := "a call without a session"
		if a.Session != "" {
			who = "session " + a.Session
			if a.Stack != "" {
				who += " (stack frame " + a.Stack + ")"
			}
		}
		mark := ""
		if a.Destructive {
			mark = " [destructive]"
		}
		fmt.Fprintf(stdout, "%s  %s wants to run %s%s; decide by %s\n", printable(a.ID), printable(who), printable(a.Tool),
			mark, a.Deadline.Local().Format(time.TimeOnly))
		fmt.Fprintf(stdout, "    %s\n", printable(a.Summary))
		if len(a.Command) > 0 {
			// Go-quoted, so every argument's bounds and any invisible
			// character show.
			q := make([]string, len(a.Command))
			for i, arg := range a.Command {
				q[i] = strconv.Quote(arg)
			}
			fmt.Fprintf(stdout, "    command: %s\n", strings.Join(q, " "))
		}
	}
	return nil
}

// printable escapes what a terminal would not print as text (control
// characters such as ESC, bidi overrides, zero-width characters) as Go
// does in a quoted string: a model-chosen argument cannot rewrite the
// line a person reads.
func printable(s string) string { return escape(s, false) }

// printableText is printable for text of many lines: newlines and tabs
// stay as they are.
func printableText(s string) string { return escape(s, true) }

func escape(s string, text bool) string {
	var b strings.Builder
	for _, r := range s {
		if strconv.IsPrint(r) || text && (r == '\n' || r == '\t') {
			b.WriteRune(r)
		} else {
			b.WriteString(strings.Trim(strconv.QuoteRune(r), "'"))
		}
	}
	return b.String()
}

// cmdServers changes a server through the sidecar: servers enable|disable|
// delete NAME.
func cmdServers(ctx context.Context, f flags, pos []string, stdout io.Writer) error {
	if len(pos) != 2 || (pos[0] != "enable" && pos[0] != "disable" && pos[0] != "delete") {
		return &exitError{code: 2, msg: "servers: want servers enable|disable|delete NAME"}
	}
	r, err := findSidecar(ctx, f)
	if err != nil {
		return err
	}
	path, method := "/v1/servers/"+url.PathEscape(pos[1]), http.MethodDelete
	if pos[0] != "delete" {
		path, method = path+"/"+pos[0], http.MethodPost
	}
	if err := r.do(ctx, method, path, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "server %s: %sd\n", pos[1], pos[0])
	return nil
}
