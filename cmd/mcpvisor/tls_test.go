package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpvisor/mcpvisor/internal/certtest"
)

// selfSigned writes a certificate for 127.0.0.1 and localhost, and its key.
func selfSigned(t *testing.T) (certFile, keyFile string) { return certtest.SelfSigned(t) }

// trusting returns a client that trusts only the certificate in certFile.
func trusting(t *testing.T, certFile string) *http.Client {
	t.Helper()
	raw, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(raw) {
		t.Fatalf("no certificate in %s", certFile)
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

func do(t *testing.T, c *http.Client, method, url, token string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// With --tls-cert and --tls-key the API is HTTPS only, and the CLI's
// commands reach it through the note, trusting its certificate.
func TestServeTLS(t *testing.T) {
	cert, key := selfSigned(t)
	cfg := writeConfig(t, `{"mcpServers": {"t": {"command": "MCPTEST", "args": ["-name", "t"]}}}`)
	data := filepath.Join(t.TempDir(), "data")
	s := startServe(t, "--config", cfg, "--data", data, "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(s.url, "https://127.0.0.1:") {
		t.Fatalf("serving %s, want https on 127.0.0.1", s.url)
	}
	client := trusting(t, cert)
	if code, body := do(t, client, http.MethodGet, s.url+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("healthz over TLS: %d %s", code, body)
	}
	raw, _ := os.ReadFile(s.tokenPath)
	token := strings.TrimSpace(string(raw))
	if code, _ := do(t, client, http.MethodGet, s.url+"/v1/servers", ""); code != http.StatusUnauthorized {
		t.Errorf("no token over TLS: %d", code)
	}
	code, body := do(t, client, http.MethodGet, s.url+"/v1/servers", token)
	var l struct {
		Servers []struct{ Name string } `json:"servers"`
	}
	if code != http.StatusOK || json.Unmarshal(body, &l) != nil || len(l.Servers) != 1 || l.Servers[0].Name != "t" {
		t.Fatalf("servers over TLS: %d %s", code, body)
	}
	// A client that does not trust the certificate is refused at the handshake.
	if _, err := http.Get(s.url + "/healthz"); err == nil {
		t.Error("a client without the certificate completed the handshake")
	}
	// Plain HTTP to the same port gets Go's TLS-port answer, never the API's.
	plain := "http://" + strings.TrimPrefix(s.url, "https://")
	if code, body := get(t, plain+"/v1/servers", token); code != http.StatusBadRequest || strings.Contains(string(body), `"servers"`) {
		t.Errorf("plain HTTP to the TLS port: %d %s", code, body)
	}

	note, err := os.ReadFile(filepath.Join(data, sidecarNote))
	if err != nil {
		t.Fatal(err)
	}
	var info sidecarInfo
	if err := json.Unmarshal(note, &info); err != nil || info.URL != s.url || info.CertFile != cert {
		t.Fatalf("sidecar note %s: %v", note, err)
	}
	// serve holds the journal, so events goes through the API.
	if out, errOut, code := runCLIData(t, data, "events", "--json"); code != 0 {
		t.Fatalf("events over TLS: code %d: %s %s", code, out, errOut)
	}
	if out, errOut, code := runCLIData(t, data, "servers", "disable", "t"); code != 0 || !strings.Contains(out, "server t: disabled") {
		t.Fatalf("servers disable over TLS: code %d: %s %s", code, out, errOut)
	}
	code, body = do(t, client, http.MethodGet, s.url+"/v1/servers", token)
	if code != http.StatusOK || !strings.Contains(string(body), `"state":"disabled"`) {
		t.Errorf("after servers disable: %d %s", code, body)
	}

	// The CLI pins the noted certificate: another one is refused.
	other, _ := selfSigned(t)
	info.CertFile = other
	b, _ := json.Marshal(info)
	if err := os.WriteFile(filepath.Join(data, sidecarNote), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, errOut, code := runCLIData(t, data, "servers", "enable", "t"); code != 1 || !strings.Contains(errOut, "not the one in "+other) {
		t.Fatalf("servers enable with the wrong certificate noted: code %d: %s", code, errOut)
	}
	if err := s.shutdown(t); err != nil {
		t.Fatal(err)
	}
}

// With TLS a non-loopback listen address is allowed, and the note points
// the CLI at loopback.
func TestServeTLSAllInterfaces(t *testing.T) {
	cert, key := selfSigned(t)
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	data := t.TempDir()
	s := startServe(t, "--config", cfg, "--data", data, "--tls-cert", cert, "--tls-key", key, "--listen", "0.0.0.0:0")
	u, err := url.Parse(s.url)
	if err != nil {
		t.Fatal(err)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsUnspecified() {
		t.Fatalf("serving %s, want all interfaces", s.url)
	}
	if code, _ := do(t, trusting(t, cert), http.MethodGet, "https://127.0.0.1:"+u.Port()+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("healthz over TLS: %d", code)
	}
	note, _ := os.ReadFile(filepath.Join(data, sidecarNote))
	var info sidecarInfo
	if err := json.Unmarshal(note, &info); err != nil {
		t.Fatal(err)
	}
	if nu, err := url.Parse(info.URL); err != nil || !net.ParseIP(nu.Hostname()).IsLoopback() || nu.Port() != u.Port() {
		t.Fatalf("sidecar note URL %q, want loopback port %s", info.URL, u.Port())
	}
	if out, errOut, code := runCLIData(t, data, "events"); code != 0 {
		t.Fatalf("events over TLS: code %d: %s %s", code, out, errOut)
	}
}

func TestServeTLSRefusals(t *testing.T) {
	cert, key := selfSigned(t)
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, otherKey := selfSigned(t)
	missing := filepath.Join(t.TempDir(), "missing.pem")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"cert alone", []string{"--tls-cert", cert}, 2, "--tls-cert needs --tls-key"},
		{"key alone", []string{"--tls-key", key}, 2, "--tls-key needs --tls-cert"},
		{"no TLS", nil, 2, "pass --tls-cert and --tls-key"},
		{"bad certificate", []string{"--tls-cert", bad, "--tls-key", key}, 1, "--tls-cert " + bad},
		{"missing certificate", []string{"--tls-cert", missing, "--tls-key", key}, 1, missing},
		{"bad key", []string{"--tls-cert", cert, "--tls-key", bad}, 1, "--tls-key " + bad},
		{"mismatched key", []string{"--tls-cert", cert, "--tls-key", otherKey}, 1, "--tls-key " + otherKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, append([]string{"serve", "--config", cfg, "--listen", "0.0.0.0:0"}, tc.args...)...)
			if code != tc.code || !strings.Contains(errOut, tc.want) {
				t.Fatalf("code %d, err %q; want code %d mentioning %q", code, errOut, tc.code, tc.want)
			}
		})
	}
}
