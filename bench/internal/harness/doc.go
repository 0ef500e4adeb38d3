// Package harness runs the bench scenarios: the same echo server
// (bench/cmd/echoserver) called through a raw pipe (the floor), an embedded
// mcpvisor Host, the official Go SDK client and the mark3labs client, in one
// run, interleaved, so that machine noise falls on every contender alike
// (and, for call latency and throughput, the Host run as a sidecar: its
// HTTP API and its MCP gateway on loopback, and the same four contenders in
// the modern era, protocol revision 2026-07-28, against the echo server run
// with -era modern, side by side with their legacy selves);
// and the same again over Streamable HTTP (echoserver -http as a child
// process, net/http POSTs for the floor), with a scale scenario of
// thousands of HTTP servers in one Host; and a notification flood into the
// host's journal (durable events/s, drops, memory), against the same flood
// read off a raw pipe; and the latency the MCP gateway adds to a call over
// a direct connection, for clients and servers of both eras.
//
// The call latency, throughput and isolation scenarios, over stdio and
// HTTP, run each contender Sizes.Repeats times, interleaved, a fresh client
// each time, and report the medians of the repeats, with the spread of
// their p50s; every load record also has the CPU per call of this process
// (the client, and the host in it) and of the echo server children, taken
// across the measured calls only.
//
// Each scenario is a function from an Env (the echo server binary, the sizes)
// to Records; Report turns the records of a run into a markdown report with
// ratios and the issues' targets, and Chart into a PNG.
//
//	env := harness.Env{Server: bin, Sizes: harness.QuickSizes(), Log: os.Stderr}
//	recs, err := harness.Latency(ctx, &env)
package harness
