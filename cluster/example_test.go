package cluster_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/cluster"
)

// Two hosts of one process make one cluster: Options.Cluster is what
// turns cluster mode on. Across machines, Members is a store's
// membership (etcd.Members, consul.Members, kubernetes.Members) or
// Automanaged, and Listen/Advertise an address the others reach.
func Example() {
	members := cluster.InProcess()
	var hosts []*mcpvisor.Host
	for range 2 {
		dir, err := os.MkdirTemp("", "mcpvisor-example")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(dir)
		h, err := mcpvisor.Open(context.Background(), mcpvisor.Options{
			DataDir: dir,
			// Two members in one process talk on loopback: across
			// machines, each member has TLS (a certificate of the
			// cluster's CA, named for it).
			Cluster: cluster.Options{Name: "agents", Members: members, InsecureLoopback: true},
		})
		if err != nil {
			log.Fatal(err)
		}
		defer h.Close()
		hosts = append(hosts, h)
	}

	// Members find each other within a round of the membership.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if cs, _ := hosts[0].Cluster(); len(cs.Members) == 2 {
			break
		}
	}
	cs, ok := hosts[0].Cluster()
	fmt.Println(ok, cs.Name, len(cs.Members))
	// Output: true agents 2
}
