// Package etcdtest starts a real etcd server (Debian's etcd-server) on
// loopback ports for a test, in a temporary data directory, and stops it
// when the test ends.
package etcdtest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"testing"
	"time"

	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// Start runs etcd and returns its client URL. Without an etcd binary the
// test is skipped, or failed in CI, which installs it (.ci/run;
// testenv.Unavailable).
func Start(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("etcd")
	if err != nil {
		testenv.Unavailable(t, "no etcd in PATH: the cluster's etcd tests need one (Debian: apt-get install etcd-server)")
	}
	client, peer := freePort(t), freePort(t)
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin,
		"--name", "test", "--data-dir", t.TempDir(),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "test="+peerURL, "--initial-cluster-state", "new",
		"--log-level", "error")
	cmd.Env = append(cmd.Environ(), "ETCD_UNSUPPORTED_ARCH=") // its default on amd64
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(clientURL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return clientURL
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd at %s never became healthy: %v", clientURL, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
