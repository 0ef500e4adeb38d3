package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/modelapi"
)

// command is one entry of the command table (main.go): everything the
// usage text, the flag parser and the dispatcher know of a command.
type command struct {
	// name is the words that select the command: "events", or "events
	// ack" for a subcommand, which comes first among the arguments.
	name string
	// args is the synopsis of the positional arguments, "TOOL [ARGS_JSON]".
	args string
	// summary is one line: what the command does.
	summary string
	// detail, when set, is said after the summary in the command's help.
	detail string
	// setup is what the dispatcher prepares; it registers its flags.
	setup setup
	// sidecar: when a sidecar answers on the data directory, the command
	// asks it (env.sidecar is set) instead of opening the journal or
	// running the servers, as docker asks its daemon; --config is then
	// optional and not loaded.
	sidecar bool
	// findsConfig: the command finds the config file as the host
	// commands do when --config is not given (env.found), but reads or
	// edits it itself.
	findsConfig bool
	// verbatimAfter, when set, is the number of positional arguments
	// after which the rest are taken as given, flags included (add's
	// COMMAND ARG...).
	verbatimAfter int
	// flags are the command's other flag groups.
	flags []flagGroup
	// run is the handler.
	run func(context.Context, *env) error
}

// setup is what the dispatcher prepares before a handler runs. Each level
// includes the ones before it and registers their flags.
type setup int

const (
	setupNone    setup = iota // no shared flags
	setupData                 // --data
	setupLogging              // and --log-level, --log-format: env.logger is set
	setupHost                 // and --config, required and loaded into env.cfg; ctx ends at SIGINT or SIGTERM
)

// env is what a handler gets: its flags and positional arguments, what its
// setup prepared, and the process's streams.
type env struct {
	f      flags
	args   []string
	logger *slog.Logger
	cfg    *mcpvisor.Config
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer

	// sidecar is the sidecar to ask, for a command that asks one, when
	// one answers on the data directory; nil otherwise.
	sidecar *remote
	// found is where the config came from when no --config named it: nil
	// when --config was given, no files when none was found (an error
	// unless a sidecar answers).
	found *discovered
}

// flags holds the values of every flag of every command; a command's flag
// set binds only the fields it takes, the others keep their zero value.
type flags struct {
	config    configFiles
	data      string
	logLevel  string
	logFormat string
	json      bool
	wait      time.Duration

	// events, history
	pending, follow, calls bool
	all                    bool   // events: every page
	templates              bool   // resources
	detach, raw            bool   // call
	approveHostTools       bool   // stdio, serve
	activate               string // stdio, serve: groups on for every session
	reason                 string // approvals deny
	server, method         string
	after                  uint64
	limit                  int

	reset bool // doctor

	// top
	sort     string
	interval time.Duration
	once     bool

	// serve
	listen, tokenFile, adminTokenFile, tlsCert, tlsKey string
	allowedHosts, allowedOrigins                       string // serve: --allowed-hosts, --allowed-origins
	publicURL                                          string // serve: --public-url
	device, noBrowser                                  bool   // auth login: --device, --no-browser
	// serve --cluster
	cluster, clusterProvider, etcd, clusterListen, advertise, clusterLabels, peers, memberListen    string
	k8sNamespace, k8sAPI, k8sTokenFile, k8sCAFile, clusterTLSCert, clusterTLSKey, clusterCA, consul string
	clusterMember                                                                                   string
	clusterInsecureLoopback                                                                         bool
	clusterTTL                                                                                      time.Duration

	diskReserve byteSize // run, serve, stdio: --disk-reserve
	admin, url  bool     // token: --admin, --url
	lazy        bool     // serve, stdio: --lazy

	envs, headers repeated // add: --env, --header
	transport     string   // add
	force, names  bool     // add: --force; list: --names
	http, print   bool     // connect
	remove        bool     // connect

	embeddingsURL, embeddingsModel string // serve, stdio
	embeddingsWeight               weight
	// envErr: an environment variable a flag defaults to is malformed;
	// parse reports it as a usage error.
	envErr error
}

// flagGroup registers one or more flags, written once for every command
// that takes them.
type flagGroup func(*flag.FlagSet, *flags)

func dataFlag(fs *flag.FlagSet, f *flags) {
	fs.StringVar(&f.data, "data", mcpvisor.DefaultDataDir, "the data directory `DIR`: the journal in DIR/journal, logs in DIR/logs")
}

func logFlags(fs *flag.FlagSet, f *flags) {
	fs.StringVar(&f.logLevel, "log-level", "warn", "log `LEVEL`: debug, info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", "text", "log `FORMAT`: text, or json (slog records, one JSON object per line)")
}

func configFlag(fs *flag.FlagSet, f *flags) {
	fs.Var(&f.config, "config", "the `FILE` of MCP servers, as any agent tool writes it (Claude Code, VS Code, Cursor, Gemini CLI, Codex, Zed, ...); repeat it to merge several files, a later one's server replacing an earlier one's of the same name; without it, MCPVISOR_CONFIG, else the project's .mcp.json, .cursor/mcp.json, .vscode/mcp.json, ... found here or in a directory above")
}

// configFiles is --config, which may be given more than once.
type configFiles []string

func (c configFiles) String() string { return strings.Join(c, ", ") }

func (c *configFiles) Set(v string) error {
	if v == "" {
		return errors.New("empty file name")
	}
	*c = append(*c, v)
	return nil
}

// loadConfig loads and merges the --config files. Their warnings are
// said, one line each, also when loading fails (an unknown field may be
// why): as plain lines on stderr, or as log records with --log-format
// json. A failure is a usage error (exit 2).
func loadConfig(f flags, logger *slog.Logger, stderr io.Writer) (*mcpvisor.Config, error) {
	cfg, err := mcpvisor.LoadConfigs(f.config...)
	if cfg != nil {
		cfg.Servers = slices.DeleteFunc(cfg.Servers, func(s mcpvisor.ServerConfig) bool {
			if !isSelfEntry(s.Command, s.Args) {
				return false
			}
			cfg.Warnings = append(cfg.Warnings, fmt.Sprintf("server %q runs mcpvisor stdio (as mcpvisor connect writes it for an agent tool): skipped, mcpvisor does not serve itself", s.Name))
			return true
		})
		for _, w := range cfg.Warnings {
			if f.logFormat == "json" {
				logger.Warn(w)
			} else {
				fmt.Fprintf(stderr, "mcpvisor: warning: %s\n", w)
			}
		}
	}
	if err != nil {
		return nil, usageError(err)
	}
	return cfg, nil
}

// settleFlag is the --wait of the commands that report every server: each
// is waited for until it is ready or its start has failed.
func settleFlag(fs *flag.FlagSet, f *flags) {
	fs.DurationVar(&f.wait, "wait", 30*time.Second,
		"the longest wait for the servers to start (a `DURATION`): each is waited for until it is ready or its start has failed; one still starting that wrote to stderr in the last 10 s (npx downloading it) is waited for on, up to its startupTimeout")
}

func waitFlag(fs *flag.FlagSet, f *flags) {
	fs.DurationVar(&f.wait, "wait", 30*time.Second, "how long to wait for the servers to be ready (a `DURATION`)")
}

func jsonFlag(fs *flag.FlagSet, f *flags) {
	fs.BoolVar(&f.json, "json", false, "print JSON instead of text")
}

// serverFlag is --server with the meaning it has for the command.
func serverFlag(usage string) flagGroup {
	return func(fs *flag.FlagSet, f *flags) { fs.StringVar(&f.server, "server", "", usage) }
}

// pendingFlag is --pending with the meaning it has for the command.
func pendingFlag(usage string) flagGroup {
	return func(fs *flag.FlagSet, f *flags) { fs.BoolVar(&f.pending, "pending", false, usage) }
}

// approveFlag is --approve-host-tools; by default the host tools wait for
// the person whom where says.
func approveFlag(where string) flagGroup {
	return func(fs *flag.FlagSet, f *flags) {
		fs.BoolVar(&f.approveHostTools, "approve-host-tools", false,
			"run the host tools that change the servers (register_mcp, delete_mcp, toggle_item) without asking; by default "+where)
	}
}

// Environment variables of the embeddings endpoint search_tools may use
// (--embeddings-url, --embeddings-model), and its key.
const (
	embeddingsURLEnv    = "MCPVISOR_EMBEDDINGS_URL"
	embeddingsModelEnv  = "MCPVISOR_EMBEDDINGS_MODEL"
	embeddingsKeyEnv    = "MCPVISOR_EMBEDDINGS_KEY"
	embeddingsWeightEnv = "MCPVISOR_EMBEDDINGS_WEIGHT"
)

// embeddingsFlags are serve's and stdio's embeddings endpoint.
func embeddingsFlags(fs *flag.FlagSet, f *flags) {
	fs.StringVar(&f.embeddingsURL, "embeddings-url", os.Getenv(embeddingsURLEnv),
		"an OpenAI-compatible embeddings API `URL` (…/v1) that search_tools also ranks by meaning with, $"+embeddingsURLEnv+" when not given; its key in $"+embeddingsKeyEnv)
	model := os.Getenv(embeddingsModelEnv)
	if model == "" {
		model = "text-embedding-3-small"
	}
	fs.StringVar(&f.embeddingsModel, "embeddings-model", model, "the embeddings `MODEL` of --embeddings-url, $"+embeddingsModelEnv+" when set")
	if env := os.Getenv(embeddingsWeightEnv); env != "" {
		if err := f.embeddingsWeight.Set(env); err != nil {
			f.envErr = fmt.Errorf("$%s: %w", embeddingsWeightEnv, err)
		}
	}
	fs.Var(&f.embeddingsWeight, "embeddings-weight",
		"what the embeddings' ranking counts against the words' in search_tools, `W` from 0 to 1; 0 means 1, alike; $"+embeddingsWeightEnv+" when set")
}

// weight is --embeddings-weight: a number from 0 to 1.
type weight float64

func (w *weight) String() string { return strconv.FormatFloat(float64(*w), 'g', -1, 64) }

func (w *weight) Set(s string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || v < 0 || v > 1 {
		return fmt.Errorf("%q is not a weight from 0 to 1", s)
	}
	*w = weight(v)
	return nil
}

// embedder is the Options.Embedder of --embeddings-url, nil without one.
func (f flags) embedder() mcpvisor.Embedder {
	if f.embeddingsURL == "" {
		return nil
	}
	return &modelapi.OpenAIEmbedder{URL: f.embeddingsURL, Model: f.embeddingsModel, APIKey: os.Getenv(embeddingsKeyEnv)}
}

// activateFlag is serve's and stdio's --activate.
func activateFlag(fs *flag.FlagSet, f *flags) {
	fs.StringVar(&f.activate, "activate", "",
		"tool groups every client session has from the start, without activate_tools: server names, comma-separated, or `all` (every server, not config)")
	fs.BoolVar(&f.lazy, "lazy", false,
		"sessions see only the tools they activate (activate_tools, search_tools) and --activate's; by default they see every server's while the enabled servers list at most 40 tools")
}

// splitList splits a comma-separated flag, dropping empty items.
func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// alwaysOn is --activate as Options.AlwaysOn.
func (f flags) alwaysOn() []string {
	var groups []string
	for _, g := range strings.Split(f.activate, ",") {
		switch g = strings.TrimSpace(g); g {
		case "":
		case "all":
			groups = append(groups, mcpvisor.AllGroups)
		default:
			groups = append(groups, g)
		}
	}
	return groups
}

// flagSet is the command's flag set, bound to f.
func (c *command) flagSet(f *flags) *flag.FlagSet {
	fs := flag.NewFlagSet(c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if c.setup >= setupData {
		dataFlag(fs, f)
	}
	if c.setup >= setupLogging {
		logFlags(fs, f)
	}
	if c.setup >= setupHost {
		configFlag(fs, f)
	}
	for _, g := range c.flags {
		g(fs, f)
	}
	return fs
}

// lookup returns the command args select and the arguments left for it:
// args[0] names a command, or, when the first positional argument after it
// names one of its subcommands, that subcommand.
func lookup(cmds []command, args []string) (*command, []string, bool) {
	var parent *command
	var subs []*command
	for i := range cmds {
		switch c := &cmds[i]; {
		case c.name == args[0]:
			parent = c
		case strings.HasPrefix(c.name, args[0]+" "):
			subs = append(subs, c)
		}
	}
	if parent == nil {
		return nil, nil, false
	}
	rest := args[1:]
	if i := firstPositional(rest, parent, subs); i >= 0 {
		for _, s := range subs {
			if s.name == parent.name+" "+rest[i] {
				return s, append(rest[:i:i], rest[i+1:]...), true
			}
		}
	}
	return parent, rest, true
}

// firstPositional returns the index in args of the first argument that is
// not a flag or a flag's value, or -1. Whether a flag takes a value is
// what the parent or any subcommand says; a flag none has takes none.
func firstPositional(args []string, parent *command, subs []*command) int {
	var sets []*flag.FlagSet
	for _, c := range append([]*command{parent}, subs...) {
		sets = append(sets, c.flagSet(&flags{}))
	}
	takesValue := func(name string) bool {
		for _, fs := range sets {
			if fl := fs.Lookup(name); fl != nil {
				b, ok := fl.Value.(interface{ IsBoolFlag() bool })
				return !ok || !b.IsBoolFlag()
			}
		}
		return false
	}
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		case len(a) < 2 || a[0] != '-':
			return i
		}
		name := strings.TrimPrefix(a[1:], "-")
		if !strings.Contains(name, "=") && takesValue(name) {
			i++
		}
	}
	return -1
}

// parse parses the command's flags wherever they appear among its
// positional arguments, as users type them (call TOOL ARGS --json).
func (c *command) parse(cmds []command, args []string) (flags, []string, error) {
	var f flags
	fs := c.flagSet(&f)
	if f.envErr != nil {
		return f, nil, usageError(f.envErr)
	}
	var pos []string
	for {
		before := len(args)
		if err := fs.Parse(args); err != nil {
			return f, nil, c.flagError(cmds, err)
		}
		rest := fs.Args()
		if n := before - len(rest); n > 0 && args[n-1] == "--" {
			return f, append(pos, rest...), nil // after --, everything is an argument
		}
		args = rest
		if len(args) == 0 {
			return f, pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
		if c.verbatimAfter > 0 && len(pos) == c.verbatimAfter {
			return f, append(pos, args...), nil
		}
	}
}

// flagError says what is wrong with a flag, and for one the command does
// not take, which commands take it.
func (c *command) flagError(cmds []command, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	// The flag package says so in these words, and has no error type for it.
	name, unknown := strings.CutPrefix(err.Error(), "flag provided but not defined: -")
	if !unknown {
		return &exitError{code: 2, msg: fmt.Sprintf("%s: %v%s", c.name, err, seeHelp(c.name))}
	}
	var others []string
	for i := range cmds {
		if cmds[i].flagSet(&flags{}).Lookup(name) != nil {
			others = append(others, cmds[i].name)
		}
	}
	msg := fmt.Sprintf("%s: unknown flag --%s", c.name, name)
	if len(others) > 0 {
		msg += "; it goes with " + strings.Join(others, ", ")
	}
	return &exitError{code: 2, msg: msg + seeHelp(c.name)}
}

// seeHelp points to the help of the command name.
func seeHelp(name string) string {
	return fmt.Sprintf(" (see 'mcpvisor help %s')", name)
}

// prepare does the command's setup on e.
func (c *command) prepare(ctx context.Context, e *env) (context.Context, context.CancelFunc, error) {
	if c.setup >= setupLogging {
		logger, err := newLogger(e.f.logLevel, e.f.logFormat, e.stderr)
		if err != nil {
			return nil, nil, &exitError{code: 2, msg: err.Error()}
		}
		e.logger = logger
	}
	if c.setup < setupHost || e.sidecar != nil {
		return ctx, func() {}, nil
	}
	if err := e.found.use(c.name, e.stderr); err != nil {
		return nil, nil, err
	}
	cfg, err := loadConfig(e.f, e.logger, e.stderr)
	if err != nil {
		return nil, nil, err
	}
	e.cfg = cfg
	ctx, stop := signalContext(ctx)
	return ctx, stop, nil
}

// readsConfig reports whether the command runs the servers of a config
// file: those are found (discoverConfig) when --config is not given.
func (c *command) readsConfig() bool {
	return c.setup >= setupHost || c.name == "serve" || c.findsConfig
}

// dispatch runs the command args select.
func dispatch(ctx context.Context, cmds []command, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, rest, ok := lookup(cmds, args)
	if !ok {
		return &exitError{code: 2, msg: fmt.Sprintf("unknown command %q\n\n%s", args[0], overview(cmds))}
	}
	f, pos, err := c.parse(cmds, rest)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, commandHelp(cmds, c))
		return nil
	}
	if err != nil {
		return err
	}
	var found *discovered
	if c.readsConfig() && len(f.config) == 0 {
		dir, err := os.Getwd()
		if err != nil {
			return err
		}
		if found, err = discoverConfig(&f, dir); err != nil {
			return err
		}
		if found == nil {
			found = &discovered{from: dir} // none: an error, unless a sidecar answers
		}
	}
	e := &env{f: f, args: pos, stdin: stdin, stdout: stdout, stderr: stderr, found: found}
	if c.sidecar {
		if e.sidecar, err = sidecarOn(ctx, f); err != nil {
			return err
		}
		if e.sidecar != nil && found == nil {
			e.sidecar.noteConfig(f.config, f.data, stderr)
		}
	}
	ctx, stop, err := c.prepare(ctx, e)
	if err != nil {
		return usageError(err) // flags, the config file and its inputs
	}
	defer stop()
	return c.run(ctx, e)
}
