// Command mcpvisor supervises MCP servers and calls their tools. It is a
// thin shell over the package mcpvisor API that Go platforms embed.
//
//	mcpvisor run --config FILE [--wait D] [--disk-reserve SIZE]
//	                                            supervise in the foreground until interrupted
//	mcpvisor serve --config FILE [--listen ADDR] [--token-file F] [--admin-token-file F] [--tls-cert F --tls-key F] [--activate G,...|all] [--lazy] [--approve-host-tools] [--disk-reserve SIZE]
//	               [--cluster NAME (--etcd URLS | --provider consul [--consul URL] | --provider kubernetes [--k8s-namespace NS --k8s-api URL --k8s-token-file F --k8s-ca-file F]
//	                | --provider automanaged --peers ADDRS --member-listen ADDR) [--cluster-ttl D]
//	                [--cluster-listen ADDR] [--advertise ADDR] [--cluster-labels L,...]
//	                [--cluster-tls-cert F --cluster-tls-key F --cluster-ca F]]
//	                                            the HTTP API (the sidecar) and /mcp, the MCP gateway
//	mcpvisor stdio --config FILE [--activate G,...|all] [--lazy] [--approve-host-tools] [--embeddings-url URL [--embeddings-model M] [--embeddings-weight W]] [--disk-reserve SIZE]
//	                                            the MCP gateway on stdin/stdout; beside a running sidecar, a relay to its /mcp
//	mcpvisor connect CLIENT [--http] [--print] [--remove]
//	                                            write mcpvisor into an agent tool's settings (claude-code, vscode, cursor, ...)
//	mcpvisor add [-e K=V]... [-H 'K: V']... [--force] NAME COMMAND [ARG...] | NAME URL
//	                                            add a server to the config file, as claude mcp add does
//	mcpvisor remove NAME                        remove a server from the config file
//	mcpvisor list [--json|--names]              the config's servers, without starting them
//	mcpvisor tools [--config FILE] [--wait D] [--json]
//	                                            list every namespaced tool
//	mcpvisor tools review [--config FILE] [--server S] [--json]
//	                                            the tool definitions awaiting approval under a tool policy
//	mcpvisor tools approve [--config FILE] SERVER [TOOL...]
//	                                            approve them (without TOOL, every one of SERVER not rejected)
//	mcpvisor tools reject [--config FILE] SERVER TOOL...
//	                                            reject them: withheld until the server lists others
//	mcpvisor call [--config FILE] TOOL [ARGS_JSON|-|@FILE] [--json|--raw] [--detach]
//	                                            call a tool; - reads the arguments from stdin, @FILE from a file
//	mcpvisor status [--config FILE] [--wait D] [--json]
//	                                            the servers' states
//	mcpvisor events [--pending] [--server S] [--method M] [--after ID] [--limit N] [--json]
//	mcpvisor events --follow [--config FILE] [filters]
//	mcpvisor events ack ID...                   mark events processed
//	mcpvisor history [--server S] [--calls] [--limit N] [--json]
//	mcpvisor tasks [ID] [--pending] [--limit N | --all] [--json]    the journal's tasks, or one with its outcome
//	mcpvisor doctor [--reset] [--json]          check the journal; --reset sets a damaged one aside
//	mcpvisor logs [--config FILE] NAME [-f|--follow] [-n N]
//	                                            a server's log (DIR/logs/NAME.log), or follow it, across rotations
//	mcpvisor completion bash|zsh|fish           the shell's completion script, from the command table
//	mcpvisor resources --config FILE [--server S] [--templates] [--json]
//	mcpvisor resources read --config FILE --server S URI
//	mcpvisor prompts --config FILE [--server S] [--json]
//	mcpvisor prompts get --config FILE --server S PROMPT [key=value ...]
//	mcpvisor elicitations [--json]              the running sidecar's pending requests for input
//	mcpvisor elicitations resolve ID accept|decline|cancel [CONTENT_JSON]
//	mcpvisor approvals [--json]                 the running sidecar's host-tool calls waiting for approval
//	mcpvisor approvals allow ID
//	mcpvisor approvals deny ID [--reason R]
//	mcpvisor servers enable|disable|delete NAME change a server of the running sidecar
//	mcpvisor token [--admin | --url]
//	mcpvisor top [--sort p99|errors|rate|restarts|name] [--interval D] [--once|--json]
//	                                            the running sidecar's servers live: calls/s, errors, latency
//	mcpvisor auth login [--config FILE] NAME    sign in to a remote server that needs OAuth, in a browser
//	mcpvisor auth [status] [--config FILE] [--json]
//	                                            each remote server's sign-in: issuer, scopes, expiry
//	mcpvisor auth logout [--config FILE] NAME   forget a server's token and client registration
//	mcpvisor help [COMMAND]                     the usage of mcpvisor, or of one command (also COMMAND --help)
//	mcpvisor version                            the version and what it was built from (also --version)
//
// Every command but help and version takes --data DIR, the data directory
// (default ./.mcpvisor). Each takes only its own flags, which mcpvisor
// help COMMAND lists, and refuses any other. The command table in main.go
// declares each command's name, synopsis, flags and handler; this list
// follows it, and a test checks that it names every command (another that
// the README's CLI section does).
//
// A data directory's journal is held by one process. When that process is
// a sidecar (mcpvisor serve), tools (review, approve and reject too),
// status, call, events, history, tasks and auth (login and logout too)
// ask it through its API, as docker asks its daemon, so that any number
// of them may run at once;
// --config is then optional and not read. Without one they run the
// servers, or open the journal, themselves.
//
// Exit status: 0 success; 1 a failure, and for tools, tools review and
// status some enabled server that is not ready (each is waited for only
// until it is ready or its start has failed), for call a tool that
// returned an error, for tools approve and reject a decision not made (a
// definition that changed since it was listed); 2 a usage or config error
// (a flag, an argument, the config file, arguments that are not JSON).
package main
