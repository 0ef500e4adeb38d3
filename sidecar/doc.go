// Package sidecar serves a Host over HTTP, so that an agent platform written
// in any language can supervise MCP servers through mcpvisor: the /v1 JSON
// API (servers, tools, calls with SSE progress, sessions, events,
// elicitations, host-tool approvals, tool-definition reviews, tasks,
// media, OAuth sign-in of remote servers), the inbox page at /ui/, and the
// open /healthz and /readyz probes.
//
//	h, _ := mcpvisor.Open(ctx, mcpvisor.Options{Config: cfg, DataDir: dir, Inbox: true, ApprovalInbox: true})
//	defer h.Close()
//	ln, _ := net.Listen("tcp", "127.0.0.1:7071")
//	api := sidecar.New(h, sidecar.Options{Token: gatewayToken, AdminToken: adminToken, DataDir: dir})
//	err := api.Serve(ctx, ln) // until ctx ends; then calls in flight are cancelled
//
// Every /v1 route needs "Authorization: Bearer <token>", with one of two
// tokens. The gateway token (Options.Token) is what an MCP client or an
// agent platform is given; the admin token (Options.AdminToken) stays with
// the person, their CLI and the inbox page, and is taken everywhere:
//
//	route                                          gateway token   admin token
//	/mcp, GET /metrics                             yes             yes
//	GET /v1/servers, tools, catalog, auth,         yes             yes
//	  events, events/stream, history, cluster,
//	  ops, ops/stream, elicitations, approvals,
//	  inbox/stream, tools/reviews, tasks, media
//	POST /v1/call (a tool call, as at /mcp)        yes             yes
//	POST /v1/sessions/{s}/activate, end            yes             yes
//	GET /v1/servers/{name}/log (its stderr)        no              yes
//	PUT, DELETE /v1/servers/{name}                 no              yes
//	POST /v1/servers/{name}/enable, disable,       no              yes
//	  restart
//	POST, DELETE /v1/servers/{name}/auth           no              yes
//	POST /v1/servers/{name}/auth/redirect          no              yes
//	POST /v1/approvals/{id}                        no              yes
//	POST /v1/elicitations/{id}                     no              yes
//	POST /v1/tools/reviews/decide                  no              yes
//	POST /v1/events/ack                            no              yes
//
// GET /oauth/callback (with Options.PublicURL) takes no token: it is a
// browser sent back by an authorization server, and the sign-in's
// one-time state is its check.
//
// The gateway token on an admin route is 403 "admin_required". Whoever
// raised an approval cannot answer it: a host-tool call made with a token
// (at /mcp or POST /v1/call) records which (mcpvisor.WithCredential: a
// hash, never the token), and POST /v1/approvals/{id} with that same token
// is 403 "self_approval", even the admin token's. Without AdminToken the
// one token is both, as before there were two, and the rule holds for it
// too: what it raises only the embedder (Host.ResolveApproval) decides.
//
// On a loopback
// listener a /v1 request must name localhost, a loopback address or one of
// Options.AllowedHosts as Host (against DNS rebinding), and one that
// changes state from a browser must come from a loopback origin, the
// sidecar's own or one of Options.AllowedOrigins; others are refused with
// 403. Request bodies are one JSON value each, with no key given twice at
// any depth. /readyz says "ready" or "not_ready" to anyone; with the token
// it also names the servers that are not ready.
//
// Serve bounds connections (Limits): idle and read timeouts, and caps on
// the connections held, overall and, per client address, those that have
// sent a request without the token. At a cap, a waiting connection
// without the token is closed to make room, so idle clients cannot keep
// out a caller with it; with none to close, the newcomer gets 503. Handler
// alone serves the API without these bounds, for an embedder's own server.
//
// Errors are JSON:
//
//	{"error": {"code": "unavailable", "message": "...", "retryAfterMs": 500}}
//
// with a stable code (see the Code* constants). Every key the API sends or
// accepts is camelCase, as MCP spells its own ("_meta" aside). Servers,
// tools, results, tasks and journal events are the root package's types:
// GET /v1/servers, GET /v1/tools and GET /v1/events list what json.Marshal
// gives an embedder of h.Status(), h.Tools() and Journal().Events; POST
// /v1/call answers a ResultView, the Result plus "wire", the string to hand
// a model; GET /v1/tasks lists TaskViews, TaskInfos with such a result;
// GET /v1/history lists HistoryRecords
// (?kind=lifecycle|call|grant|revoke|tool, server, tool, session, after,
// limit, newest=1). These lists and GET /v1/tasks (?pending=1, server,
// limit, after) are pages: ?limit= records, 100 by default and at most
// 1,000, and "next" when there may be more, the ?after= that reads on (for
// tasks an opaque string, as they are listed oldest created first). GET /v1/events/stream without ?after starts at the newest
// event. In a cluster, GET /v1/cluster is this member's view
// of it (a ClusterStatus: members, labels, the servers each runs, whether
// each has caught up with the membership), and ?cluster=1 on /v1/history
// and /v1/events asks every member: a page of ?limit= records in all, and
// "next", an opaque cursor of each member's place, the ?after= that reads on. GET /v1/servers and GET /v1/tools take
// ?wait=DURATION: the answer comes once every enabled server is ready or
// its start has failed (Host.WaitSettled), or the duration has passed. A streamed call (Accept: text/event-stream) sends
// progress events, a task event (a TaskView) when the server runs it as a
// task, then its result or error event.
//
// Under a tool policy (mcpvisor.Options.ToolPolicy), GET
// /v1/tools/reviews lists the tool definitions no person approved as
// {"reviews": [ToolReview...]}, each with its hash, diff and findings.
// POST /v1/tools/reviews/decide with {"server", "tool" (the server's own
// name), "hash" (the review's), "decision": "approve"|"reject", "by"}
// decides one (204), journaled as by "api:<by>" ("api" without one); a
// hash the server no longer lists is 409 "stale_review", so what is
// decided is what was shown. A call of a withheld tool is 409
// "tool_withheld". The inbox stream carries the reviews too
// ("toolReviews").
//
// The command `mcpvisor serve` is this package behind a loopback listener,
// and the CLI's tools, status, call, events, history and tasks ask it when
// it holds their data directory.
package sidecar
