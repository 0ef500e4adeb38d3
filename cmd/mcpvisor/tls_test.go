package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// selfSigned writes a certificate for 127.0.0.1 and localhost, and its key.
func selfSigned(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "mcpvisor test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

func TestServeTLS(t *testing.T) {
	cert, key := selfSigned(t)
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	data := t.TempDir()
	s := startServe(t, "--config", cfg, "--data", data, "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(s.url, "https://") {
		t.Fatalf("serving %s, want https", s.url)
	}
	pemBytes, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemBytes)
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	tok, err := os.ReadFile(s.tokenPath)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodGet, s.url+"/v1/servers", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET over TLS: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET over TLS: %d", resp.StatusCode)
	}
	// Plain HTTP gets no API answer.
	plain := "http://" + strings.TrimPrefix(s.url, "https://")
	if code, _ := get(t, plain+"/healthz", ""); code != http.StatusBadRequest {
		t.Fatalf("plain HTTP to the TLS port: %d, want 400", code)
	}
	// The CLI finds the sidecar through its note, trusting its certificate.
	r, err := findSidecar(context.Background(), flags{data: data})
	if err != nil {
		t.Fatalf("findSidecar over TLS: %v", err)
	}
	if !strings.HasPrefix(r.base, "https://") {
		t.Fatalf("the CLI reaches %s", r.base)
	}
}

func TestServeTLSRefusals(t *testing.T) {
	cert, key := selfSigned(t)
	cfg := writeConfig(t, `{"mcpServers": {}}`)
	bad := filepath.Join(t.TempDir(), "bad.pem")
	if err := os.WriteFile(bad, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"cert alone", []string{"--tls-cert", cert}, "--tls-cert needs --tls-key"},
		{"key alone", []string{"--tls-key", key}, "--tls-key needs --tls-cert"},
		{"bad certificate", []string{"--tls-cert", bad, "--tls-key", key}, bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"serve", "--data", t.TempDir(), "--config", cfg, "--listen", "0.0.0.0:0"}
			err := run(context.Background(), append(args, tc.args...), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}
