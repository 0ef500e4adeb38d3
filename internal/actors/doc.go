// Package actors is the actor system that supervises MCP servers.
//
// One server actor per server owns its connection (process, reader and
// writer goroutines), its pending-request table, its timers, its restart
// history and its tool catalog. Its mailbox serialises everything that
// happens to the server: calls, frames read from stdout, process exits,
// timer ticks, enable/disable. Receive never blocks: spawning a process and
// the stop ladder run on goroutines the Runtime joins, and report back as
// messages tagged with the connection's generation.
//
// A registry actor spawns and stops server actors and publishes an immutable
// routing snapshot through an atomic pointer. The call path reads it without
// locks, sends the server actor a message carrying a reply channel, and
// waits on that channel, the caller's context and the call timeout; the
// result is decoded on the caller's goroutine, never in the actor.
//
// Each server also publishes its status and catalog atomically, so Status
// and Tools never queue behind a server, however it misbehaves.
package actors
