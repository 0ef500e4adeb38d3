package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/mcpvisor/mcpvisor"
)

// commands is the command table: the usage text, the flag parser and the
// dispatcher all read it, and doc.go lists it.
func commands() []command {
	return []command{
		{name: "run", summary: "start every server and supervise them until interrupted", setup: setupHost,
			detail: "The servers' table is printed once each is ready or its start has failed (at most --wait),\n" +
				"then every state change and notification as it happens.",
			flags: []flagGroup{settleFlag, diskReserveFlag},
			run:   func(ctx context.Context, e *env) error { return cmdRun(ctx, e.f, e.cfg, e.logger, e.stdout) }},
		{name: "serve", summary: "supervise the servers behind the HTTP API (the sidecar), on loopback unless given TLS",
			detail: "MCP clients get the gateway token, in DIR/token unless --token-file names one; the admin token,\n" +
				"in DIR/admin-token unless --admin-token-file names one, is the CLI's and the inbox page's\n" +
				"(servers, sign-in, approvals). /mcp is every server as one MCP server\n" +
				"(Streamable HTTP); a model's register_mcp, delete_mcp and toggle_item wait for approval\n" +
				"unless --approve-host-tools. SIGHUP reads --config again and applies it: servers added start,\n" +
				"changed ones restart, removed ones stop.",
			setup: setupData, flags: []flagGroup{configFlag, logFlags, serveFlags, activateFlag, embeddingsFlags, diskReserveFlag,
				approveFlag("each waits in the approval inbox (GET /v1/approvals, the inbox page, mcpvisor approvals)")},
			run: func(ctx context.Context, e *env) error {
				if err := e.found.use("serve", e.stderr); err != nil {
					return err
				}
				return cmdServe(ctx, e.f, e.args, e.stderr)
			}},
		{name: "stdio", summary: "the MCP gateway on stdin/stdout, for MCP clients", setup: setupHost,
			detail: "With a sidecar (mcpvisor serve) running on --data, the client is relayed to the sidecar's /mcp\n" +
				"(its servers, its journal, its token), so that every client of a project shares one set of servers.",
			flags: []flagGroup{activateFlag, embeddingsFlags, approveFlag("each is put to the client's user (elicitation)"), diskReserveFlag},
			run:   func(ctx context.Context, e *env) error { return cmdStdio(ctx, e.f, e.cfg, e.logger, e.stdin, e.stdout) }},
		{name: "tools", summary: "start the servers, list every namespaced tool, exit", setup: setupHost, sidecar: true,
			detail: "Each enabled server is waited for until it is ready or its start has failed, at most --wait, or\n" +
				"longer while one still starting keeps writing to stderr (npx downloading it); after 2 s, stderr\n" +
				"says which are still starting and the last line each wrote.\n" +
				viaSidecar + "\n\n" +
				"Exit status: 0 every enabled server is ready; 1 some enabled server is not (the tools of the\n" +
				"others are listed, the reasons go to stderr) or the command failed; 2 a usage or config error.",
			flags: []flagGroup{settleFlag, jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdTools(ctx, e) }},
		{name: "tools review", summary: "the tool definitions awaiting a person's approval under a tool policy",
			detail: "A tool policy (" + mcpvisor.ToolPolicyEnv + "=warn|hold, or a server's \"toolPolicy\" in the config) pins\n" +
				"each tool's definition; under hold a definition no person approved is withheld from every\n" +
				"session until one does. Each is shown with its hash, what the description checks found, and\n" +
				"its diff from the approved definition, or the definition of a tool never approved.\n" +
				reviewsVia + "\n\n" +
				"Exit status: 0 listed; 1 some server is not ready (what it lists is not known) or the command\n" +
				"failed; 2 a usage or config error.",
			setup: setupHost, sidecar: true,
			flags: []flagGroup{settleFlag, serverFlag("only the definitions of server `NAME` (and start only it)"), jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdToolReviews(ctx, e) }},
		{name: "tools approve", args: "SERVER [TOOL...]", summary: "approve the definitions of a server's tools, as it lists them now",
			detail: "Without TOOL, every definition of SERVER awaiting review that was not rejected. Each decision\n" +
				"names the hash of the definition listed now (printed with it), and is journaled as made by\n" +
				"cli:$USER; the tool is exposed at once. TOOL@sha256:… (the hash tools review printed) decides\n" +
				"exactly the definition reviewed: it fails if the server lists another by now.\n" +
				reviewsVia + "\n\n" + decisionExit,
			setup: setupHost, sidecar: true, flags: []flagGroup{settleFlag},
			run: cmdToolDecide(true)},
		{name: "tools reject", args: "SERVER TOOL...", summary: "reject the definitions of a server's tools: withheld until it lists others",
			detail: "Each decision names the hash of the definition listed now (printed with it), or the one given\n" +
				"as TOOL@sha256:…, and is journaled as made by cli:$USER. A rejected definition stays withheld,\n" +
				"whatever the policy.\n" +
				reviewsVia + "\n\n" + decisionExit,
			setup: setupHost, sidecar: true, flags: []flagGroup{settleFlag},
			run: cmdToolDecide(false)},
		{name: "call", args: "TOOL [ARGS_JSON|-|@FILE]", summary: "start the one server TOOL needs, call it, print the result",
			detail: "The arguments are a JSON object: ARGS_JSON itself, - to read it from stdin, or @FILE to read it\n" +
				"from FILE (a command-line argument holds at most 128 KiB); none is {}.\n" +
				"The result prints as the model is given it (Result.Wire), but JSON, from structuredContent or a\n" +
				"text that is JSON, is indented; --raw prints it exactly as the model is given it, --json the\n" +
				"whole result (type, text, structuredContent, isError, content, media, task, wire).\n" +
				"Progress and task ids go to stderr, and so does an elicitation the call waits on: what it asks and\n" +
				"where to answer it (through a sidecar, its inbox page or mcpvisor elicitations resolve; standalone,\n" +
				"this terminal, or nobody: without a terminal the server is told cancel). Standalone, stderr also\n" +
				"says how long the server took to start: the call's own duration leaves it out.\n\n" +
				viaSidecar + "\n" +
				"A task started with --detach then runs on in the sidecar: 'mcpvisor tasks ID' shows its outcome.\n\n" +
				"Exit status: 0 the tool succeeded; 1 it returned an error (isError, said on stderr) or the call\n" +
				"failed; 2 a usage or config error, such as arguments that are not JSON (said with the line and\n" +
				"column).",
			setup: setupHost, sidecar: true,
			flags: []flagGroup{jsonFlag, func(fs *flag.FlagSet, f *flags) {
				fs.BoolVar(&f.raw, "raw", false, "print the result as the model is given it, JSON not indented")
				fs.BoolVar(&f.detach, "detach", false, "return once a task-running tool has started its task")
			}},
			run: func(ctx context.Context, e *env) error { return cmdCall(ctx, e) }},
		{name: "status", summary: "start the servers, wait for them, print their states", setup: setupHost, sidecar: true,
			detail: "Each enabled server is waited for until it is ready or its start has failed, at most --wait, or\n" +
				"longer while one still starting keeps writing to stderr (npx downloading it); after 2 s, stderr\n" +
				"says which are still starting and the last line each wrote.\n" +
				viaSidecar + "\n\n" +
				"Exit status: 0 every enabled server is ready; 1 some enabled server is not (the table is\n" +
				"printed all the same, the names go to stderr) or the command failed; 2 a usage or config error.",
			flags: []flagGroup{settleFlag, jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdStatus(ctx, e) }},
		{name: "events", summary: "list the events servers pushed (oldest first), or follow them with --follow",
			detail: viaSidecar + "\nWithout one, --follow runs the servers of --config, and needs it.",
			setup:  setupLogging, sidecar: true,
			flags: []flagGroup{eventsFlags, jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdEvents(ctx, e) }},
		{name: "events ack", args: "ID...", summary: "mark events processed",
			detail: viaSidecarJournal, setup: setupLogging, sidecar: true,
			run: func(ctx context.Context, e *env) error { return cmdAck(ctx, e) }},
		{name: "history", summary: "server transitions, or tool calls with --calls (newest first)",
			detail: viaSidecarJournal, setup: setupLogging, sidecar: true,
			flags: []flagGroup{serverFlag("only the records of server `NAME`"), historyFlags, jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdHistory(ctx, e) }},
		{name: "tasks", args: "[ID]", summary: "list the journal's tasks, or show one with its outcome",
			detail: viaSidecarJournal, setup: setupLogging, sidecar: true,
			flags: []flagGroup{pendingFlag("only the unfinished tasks"), tasksFlags, jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdTasks(ctx, e) }},
		{name: "resources", summary: "list the resources (or resource templates) of every server, or of one", setup: setupHost,
			flags: []flagGroup{waitFlag, serverFlag("start only server `NAME` and list its resources"), jsonFlag,
				func(fs *flag.FlagSet, f *flags) {
					fs.BoolVar(&f.templates, "templates", false, "list the resource templates instead")
				}},
			run: func(ctx context.Context, e *env) error {
				return cmdResources(ctx, e.f, e.cfg, e.logger, e.args, e.stdout)
			}},
		{name: "resources read", args: "URI", summary: "print a resource's text; binary contents are described, not printed",
			setup: setupHost, flags: []flagGroup{waitFlag, serverFlag("the server `NAME` to read from (required)"), jsonFlag},
			run: func(ctx context.Context, e *env) error {
				return cmdReadResource(ctx, e.f, e.cfg, e.logger, e.args, e.stdout)
			}},
		{name: "prompts", summary: "list the prompts of every server, or of one", setup: setupHost,
			flags: []flagGroup{waitFlag, serverFlag("start only server `NAME` and list its prompts"), jsonFlag},
			run: func(ctx context.Context, e *env) error {
				return cmdPrompts(ctx, e.f, e.cfg, e.logger, e.args, e.stdout)
			}},
		{name: "prompts get", args: "PROMPT [key=value ...]", summary: `render a prompt with its arguments, one "role: text" line per message`,
			setup: setupHost, flags: []flagGroup{waitFlag, serverFlag("the server `NAME` of the prompt (required)"), jsonFlag},
			run: func(ctx context.Context, e *env) error {
				return cmdGetPrompt(ctx, e.f, e.cfg, e.logger, e.args, e.stdout)
			}},
		{name: "elicitations", summary: "the running sidecar's pending requests for input", setup: setupData,
			flags: []flagGroup{jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdElicitations(ctx, e.f, e.args, e.stdout) }},
		{name: "elicitations resolve", args: "ID accept|decline|cancel [CONTENT_JSON]", summary: "answer one (through the sidecar's API)",
			setup: setupData, run: sidecarVerb(cmdElicitations, "resolve")},
		{name: "approvals", summary: "the running sidecar's host-tool calls waiting for approval",
			detail: "Each stdio registration is shown with its full command line.", setup: setupData,
			flags: []flagGroup{jsonFlag},
			run:   func(ctx context.Context, e *env) error { return cmdApprovals(ctx, e.f, e.args, e.stdout) }},
		{name: "approvals allow", args: "ID", summary: "let a host-tool call run", setup: setupData,
			run: sidecarVerb(cmdApprovals, "allow")},
		{name: "approvals deny", args: "ID", summary: "refuse a host-tool call; the reason is shown to the model", setup: setupData,
			flags: []flagGroup{func(fs *flag.FlagSet, f *flags) {
				fs.StringVar(&f.reason, "reason", "", "why, in a `REASON` the model is shown")
			}},
			run: sidecarVerb(cmdApprovals, "deny")},
		{name: "token", summary: "print the sidecar's token for MCP clients, its admin token, or the inbox page's address",
			detail: tokenDetail, setup: setupData,
			flags: []flagGroup{func(fs *flag.FlagSet, f *flags) {
				fs.BoolVar(&f.admin, "admin", false, "the admin token (the CLI's and the inbox page's) instead")
				fs.BoolVar(&f.url, "url", false, "the inbox page's address, signed in with the admin token (a running sidecar's)")
			}},
			run: cmdToken},
		{name: "top", summary: "the running sidecar's servers live: calls/s, errors, p50/p99 latency, pending, restarts",
			detail: topDetail, setup: setupData, flags: []flagGroup{topFlags, jsonFlag},
			run: cmdTop},
		{name: "add", args: "NAME COMMAND [ARG...] | NAME URL", summary: "add a server to the config file, as claude mcp add does",
			detail: addDetail + "\n\nExit status: 0 added; 1 the file could not be written or has the name already; 2 a usage error.",
			setup:  setupData, findsConfig: true, verbatimAfter: 2, flags: []flagGroup{configFlag, editFlags},
			run: cmdAdd},
		{name: "remove", args: "NAME", summary: "remove a server from the config file that names it",
			detail: "Only that entry changes; a sidecar running the file is told to read it again (the server stops).",
			setup:  setupData, findsConfig: true, flags: []flagGroup{configFlag},
			run: cmdRemove},
		{name: "list", summary: "the config's servers, without starting them; their states when a sidecar runs them",
			setup: setupData, findsConfig: true, flags: []flagGroup{configFlag, jsonFlag, func(fs *flag.FlagSet, f *flags) {
				fs.BoolVar(&f.names, "names", false, "print only the servers' names, one a line")
			}},
			run: cmdList},
		{name: "connect", args: "CLIENT", summary: "write mcpvisor into an agent tool's MCP settings (Claude Code, VS Code, Cursor, ...)",
			detail: connectDetail, setup: setupData, findsConfig: true,
			flags: []flagGroup{configFlag, func(fs *flag.FlagSet, f *flags) {
				fs.BoolVar(&f.http, "http", false, "the running sidecar's /mcp and its token instead of mcpvisor stdio")
				fs.BoolVar(&f.print, "print", false, "print the entry and the file it goes in; write nothing")
				fs.BoolVar(&f.remove, "remove", false, "take the entry out of the client's file")
			}},
			run: cmdConnect},
		{name: "servers", args: "enable|disable|delete NAME", summary: "change a server of the running sidecar, at once",
			setup: setupData, run: func(ctx context.Context, e *env) error { return cmdServers(ctx, e.f, e.args, e.stdout) }},
		{name: "auth", args: "[status]", summary: "each remote server's sign-in: issuer, scopes, expiry (never a token)", setup: setupHost,
			detail: viaSidecar, sidecar: true, flags: []flagGroup{jsonFlag},
			run: func(ctx context.Context, e *env) error {
				if len(e.args) > 1 || len(e.args) == 1 && e.args[0] != "status" {
					return &exitError{code: 2, msg: "auth: want auth [status], auth login NAME or auth logout NAME"}
				}
				return cmdAuthStatus(ctx, e)
			}},
		{name: "auth login", args: "NAME", summary: "sign in to a remote server that needs OAuth, in a browser",
			detail: "Opens a one-time sign-in URL with $BROWSER, else xdg-open, and prints it: it is on the loopback\n" +
				"listener (the server's oauth.callbackPort, else a free port), sends the browser on to the\n" +
				"authorization server once, and takes the redirect back from that browser only. The token is kept in\n" +
				"DIR/secrets.json (encrypted with MCPVISOR_SECRET_KEY when set) and reused by every later command.\n" +
				"With a sidecar (mcpvisor serve) running on --data, the sidecar's server is signed in: the sidecar\n" +
				"starts the sign-in and takes the redirect, and keeps the token in its own store; --config and\n" +
				"MCPVISOR_SECRET_KEY are then not needed.\n" +
				"Where no browser can be opened here (no $BROWSER, and no DISPLAY or WAYLAND_DISPLAY on Linux), or with\n" +
				"--no-browser, it signs in with a code (the device authorization grant) where the authorization server\n" +
				"offers it, else prints the authorization URL to open on any machine and reads back the address the\n" +
				"browser ends on (it fails to load there: copy it from the address bar). --device asks for a code.",
			setup: setupHost, sidecar: true, flags: []flagGroup{waitFlag, signInFlags},
			run: func(ctx context.Context, e *env) error {
				if m := loginModeOf(e.f); m != loginBrowser {
					return cmdAuthLoginAway(ctx, e, m)
				}
				return cmdAuthLogin(ctx, e)
			}},
		{name: "auth logout", args: "NAME", summary: "forget a server's token and client registration; the server needs a sign-in at once",
			detail: viaSidecar, setup: setupHost, sidecar: true,
			run: func(ctx context.Context, e *env) error { return cmdAuthLogout(ctx, e) }},
		{name: "doctor", summary: "check the journal of --data (its MANIFEST, every table's checksums, its WALs) and print what is wrong",
			detail: "Reads the whole journal and changes nothing; a running mcpvisor holds the journal, so stop it\n" +
				"first (its status says what it found when it opened the journal). With --reset, a damaged journal\n" +
				"is set aside: its files move into DATA/journal/quarantine-<time>-set-aside and the next start\n" +
				"begins an empty journal; nothing is deleted.\n" +
				"Exit status: 0 the journal is whole; 1 it is damaged, or the check failed; 2 a usage error.",
			setup: setupData, flags: []flagGroup{jsonFlag, func(fs *flag.FlagSet, f *flags) {
				fs.BoolVar(&f.reset, "reset", false, "set a damaged journal aside so that the next start begins an empty one")
			}},
			run: func(ctx context.Context, e *env) error { return cmdDoctor(e) }},
		{name: "logs", args: "NAME", summary: "print a server's log (its stderr and lifecycle), or follow it with -f",
			detail: logsDetail, setup: setupHost, sidecar: true, flags: []flagGroup{logsFlags},
			run: cmdLogs},
		{name: "completion", args: "bash|zsh|fish", summary: "print the shell's completion script for mcpvisor",
			detail: completionDetail, run: cmdCompletion},
		{name: "help", args: "[COMMAND]", summary: "print the usage of mcpvisor, or of one command",
			run: func(ctx context.Context, e *env) error { return cmdHelp(commands(), e.args, e.stdout) }},
		{name: "version", summary: "print the version of this binary and what it was built from",
			run: func(ctx context.Context, e *env) error { return cmdVersion(e.stdout) }},
	}
}

// viaSidecar is what the help of a command that asks a running sidecar
// says about it.
const viaSidecar = "With a sidecar (mcpvisor serve) running on --data, the command asks it, as docker asks its\n" +
	"daemon: its servers answer, and --config is optional and not read (a note on stderr says so when\n" +
	"it names another file than the sidecar's)."

// reviewsVia is what the help of tools review, approve and reject says of
// where they look.
const reviewsVia = "With a sidecar (mcpvisor serve) running on --data, the command asks it; without one, it starts\n" +
	"the servers of --config (with SERVER or --server, only that one) and waits for each until it is\n" +
	"ready or its start has failed, at most --wait."

// decisionExit is the exit status of tools approve and reject.
const decisionExit = "Exit status: 0 every decision was made; 1 some was not (a tool with no definition awaiting\n" +
	"review, or one whose definition changed since it was listed: review again), SERVER is not ready,\n" +
	"or the command failed; 2 a usage or config error."

// viaSidecarJournal is what the help of a journal command says of it.
const viaSidecarJournal = "With a sidecar (mcpvisor serve) running on --data, the command asks it: it holds the journal."

// sidecarVerb runs a sidecar command whose first argument is verb, which
// the table gives as a subcommand of its own with its own flags.
func sidecarVerb(cmd func(context.Context, flags, []string, io.Writer) error, verb string) func(context.Context, *env) error {
	return func(ctx context.Context, e *env) error {
		return cmd(ctx, e.f, append([]string{verb}, e.args...), e.stdout)
	}
}

// Exit statuses. Commands that report servers say which of theirs mean
// what in their help (tools, status, call).
const (
	exitFailure = 1 // the command failed, or found what it reports on not ready
	exitUsage   = 2 // a usage or config error: flags, arguments, the config file
)

// exitError carries a process exit code with its message; err, when set,
// is the error it reports.
type exitError struct {
	code int
	msg  string
	err  error
}

func (e *exitError) Error() string { return e.msg }
func (e *exitError) Unwrap() error { return e.err }

// usageError makes err exit 2, unless it carries its own code.
func usageError(err error) error {
	var ee *exitError
	if err == nil || errors.As(err, &ee) {
		return err
	}
	return &exitError{code: exitUsage, msg: err.Error(), err: err}
}

// exitCode is the process exit status of a command's error.
func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	return exitFailure
}

func main() {
	err := run(context.Background(), os.Args[1:], os.Stdout, os.Stderr)
	if err == nil {
		return
	}
	if msg := err.Error(); msg != "" {
		fmt.Fprintln(os.Stderr, "mcpvisor: "+strings.TrimSpace(msg))
	}
	os.Exit(exitCode(err))
}

// run runs the command args name, its input os.Stdin; without any it
// prints the overview and exits 2.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runWithInput(ctx, args, os.Stdin, stdout, stderr)
}

// runWithInput is run with stdin as the command's input.
func runWithInput(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	cmds := commands()
	switch {
	case len(args) == 0:
		fmt.Fprint(stdout, overview(cmds))
		return &exitError{code: 2}
	case args[0] == "-h" || args[0] == "--help":
		args = []string{"help"}
	case args[0] == "--version":
		args = []string{"version"}
	}
	return dispatch(ctx, cmds, args, stdin, stdout, stderr)
}
