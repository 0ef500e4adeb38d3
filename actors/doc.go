// Package actors is the runtime that supervises MCP servers: one protoactor
// actor per server, a registry actor, the transports, and the journal
// (the store and its writer).
//
// A Runtime (New) holds an actor system. Its registry actor (registry.go)
// spawns and stops server actors and publishes an immutable routing
// snapshot through an atomic pointer; server actors are spawned from the
// system's root, not as the registry's children, because each stops itself
// once its process is gone. Register, Unregister and Close ask the registry
// and wait on reply channels; the registry never waits for a server.
//
// One server actor per server (server*.go) owns its connection, the calls
// queued while it starts, its timers, its restart history
// (supervision.Restarter) and its tool catalog. Its states are starting →
// initializing → ready, then (backoff → starting)* on failures, and from
// any of them stopped, disabled or failed. Everything that happens to the
// server is a message in its mailbox: frames its actor must handle,
// process exits, timer ticks, enable/disable, stop. Receive never blocks:
// dialling and the stop ladder run on goroutines the Runtime joins, and
// report back as messages tagged with the connection's generation, so news
// from a dead incarnation is ignored.
//
// A connection (conn.go) is one incarnation of a server over a transport:
// stdio (conn_stdio.go: a process, its stdout read by the reader goroutine
// or by a caller waiting alone for its response (conn_stdio_read.go), a
// non-blocking write path with a writer goroutine behind it) or Streamable
// HTTP with the
// legacy HTTP+SSE fallback (conn_http*.go). Senders hand it typed outMsg
// values, the frame already encoded with the request id, method and kind
// beside it, so no transport parses its own frames again. What a
// connection reads goes through its router (pending.go): a response to a
// call goes straight to the caller waiting for it, the server's events to
// the journal and the event stream on the reader's goroutine, and
// everything else to the actor, under a byte budget (flow).
//
// Calls take a fast path (calls.go). Runtime.Call looks the server up in
// the snapshot; when the server is ready its actor has published a
// fastPath (the live connection and its catalog), and the caller adds the
// call to the connection's pendingTable, encodes it and sends it from its
// own goroutine, with no actor hop either way. Only while the server
// starts does a call go through the actor, which queues it until the
// handshake ends; when the server is restarting, disabled or failed the
// actor answers at once with an UnavailableError. The caller waits on its
// reply channel, its context, the call timeout and the server's end, and
// decodes the result on its own goroutine; an abandoned call is handed to
// the actor (cancelMsg), which sends notifications/cancelled.
//
// Each server also publishes its status and catalog atomically, so Status,
// Tools and WaitReady (views.go) never queue behind a server, however it
// misbehaves.
//
// The Journal (journal.go) is the host's journal: a persistence.Store and
// its single writer, one goroutine that groups every write arriving during
// a commit into the next one. Server actors only Ingest into its bounded
// queue; readers use IngestPaced, which may wait for room. Its reads and
// OpenJournal, which opens the store as well, are in journal_read.go.
package actors
