package mcpvisor_test

import (
	"os/exec"
	"strings"
	"testing"
)

// An embedder that does not import package cluster links none of the
// cluster machinery: no membership store's client, no gRPC, no
// protoactor cluster or remote.
func TestRootLinksNoClusterMachinery(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", "github.com/mcpvisor/mcpvisor").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	forbidden := []string{
		"go.etcd.io/", "github.com/hashicorp/consul", "k8s.io/", "google.golang.org/grpc", "go.uber.org/zap",
		"github.com/mcpvisor/mcpvisor/internal/protoactor/cluster", "github.com/mcpvisor/mcpvisor/internal/protoactor/remote",
		"github.com/mcpvisor/mcpvisor/internal/cluster", "github.com/mcpvisor/mcpvisor/cluster",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, f := range forbidden {
			if pkg == strings.TrimSuffix(f, "/") || strings.HasPrefix(pkg, f) {
				t.Errorf("the root package links %s", pkg)
			}
		}
	}
}
