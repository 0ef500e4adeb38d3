package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/cluster"
	"github.com/mcpvisor/mcpvisor/internal/testenv"
)

// BenchmarkClusterCall is a call on a cluster member to a server that runs
// there (local) and to one that runs on the other member (hop: the
// request and its answer cross protoactor's remote, gRPC on loopback).
// Both members are in this process, on the same cores.
func BenchmarkClusterCall(b *testing.B) {
	hosts := openClusterOf(b, cluster.InProcess(), 2, mcptest("s0"), mcptest("s1"), mcptest("s2"), mcptest("s3"))
	on := placed(b, hosts)
	var here, there string
	for name, i := range on {
		if i == 0 {
			here = name
		} else {
			there = name
		}
	}
	if here == "" || there == "" {
		b.Skipf("every server placed on one member: %v", on)
	}
	args := json.RawMessage(`{"n":1}`)
	for _, tc := range []struct{ name, server string }{{"local", here}, {"hop", there}} {
		b.Run(tc.name, func(b *testing.B) {
			tool := "mcp__" + tc.server + "__echo"
			b.ReportAllocs()
			done := testenv.ReportCPU(b)
			for b.Loop() {
				if _, err := hosts[0].Call(context.Background(), tool, args); err != nil {
					b.Fatal(err)
				}
			}
			done()
		})
	}
}

// BenchmarkClusterReplace is the time from a member's Close until the
// servers it ran (a third of 99) are ready on the other two.
func BenchmarkClusterReplace(b *testing.B) {
	var servers []mcpvisor.ServerConfig
	for i := range 99 {
		servers = append(servers, mcptest(fmt.Sprintf("s%02d", i)))
	}
	b.StopTimer()
	for range b.N {
		hosts := openClusterOf(b, cluster.InProcess(), 3, servers...)
		moved := 0
		for _, i := range placed(b, hosts) {
			if i == 2 {
				moved++
			}
		}
		b.StartTimer()
		if err := hosts[2].Close(); err != nil {
			b.Fatal(err)
		}
		waitAllReady(b, hosts[0], len(servers))
		waitAllReady(b, hosts[1], len(servers))
		b.StopTimer()
		b.ReportMetric(float64(moved), "servers-moved")
		for _, h := range hosts[:2] {
			h.Close()
		}
	}
}

// BenchmarkClusterThroughput is calls from 64 callers spread over six
// servers: on one host (one), and on a cluster of three members with the
// callers spread over the members (three: two calls in three cross to
// another member). All in this process, on this machine's cores: it
// measures what a hop costs in throughput, not what three machines give.
func BenchmarkClusterThroughput(b *testing.B) {
	servers := mcptests(6)
	for _, tc := range []struct {
		name  string
		hosts func(b *testing.B) []*mcpvisor.Host
	}{
		{"one", func(b *testing.B) []*mcpvisor.Host {
			h := openHost(b, mcpvisor.Options{}, servers...)
			waitAllReady(b, h, len(servers))
			return []*mcpvisor.Host{h}
		}},
		{"three", func(b *testing.B) []*mcpvisor.Host {
			return openClusterOf(b, cluster.InProcess(), 3, servers...)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			hosts := tc.hosts(b)
			args := json.RawMessage(`{"n":1}`)
			var next atomic.Int64
			b.SetParallelism(32) // 64 callers on 2 cores
			b.ResetTimer()
			defer testenv.ReportCPU(b)()
			b.RunParallel(func(pb *testing.PB) {
				i := int(next.Add(1))
				h := hosts[i%len(hosts)]
				for pb.Next() {
					i++
					if _, err := h.Call(context.Background(), fmt.Sprintf("mcp__s%d__echo", i%len(servers)), args); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
