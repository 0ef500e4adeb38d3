package main

import (
	"debug/buildinfo"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"os/exec"
	"runtime/debug"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// commandFlags is what each command takes: its behaviour, written out
// here, not read from the table.
var commandFlags = map[string][]string{
	"run":                  {"config", "data", "disk-reserve", "log-format", "log-level", "wait"},
	"serve":                {"activate", "admin-token-file", "advertise", "allowed-hosts", "allowed-origins", "approve-host-tools", "cluster", "cluster-ca", "cluster-insecure-loopback", "cluster-labels", "cluster-listen", "cluster-member", "cluster-tls-cert", "cluster-tls-key", "cluster-ttl", "config", "consul", "data", "disk-reserve", "embeddings-model", "embeddings-url", "embeddings-weight", "etcd", "k8s-api", "k8s-ca-file", "k8s-namespace", "k8s-token-file", "lazy", "listen", "log-format", "log-level", "member-listen", "peers", "provider", "public-url", "tls-cert", "tls-key", "token-file"},
	"stdio":                {"activate", "approve-host-tools", "config", "data", "disk-reserve", "embeddings-model", "embeddings-url", "embeddings-weight", "lazy", "log-format", "log-level"},
	"tools":                {"config", "data", "json", "log-format", "log-level", "wait"},
	"tools review":         {"config", "data", "json", "log-format", "log-level", "server", "wait"},
	"tools approve":        {"config", "data", "log-format", "log-level", "wait"},
	"tools reject":         {"config", "data", "log-format", "log-level", "wait"},
	"call":                 {"config", "data", "detach", "json", "log-format", "log-level", "raw"},
	"status":               {"config", "data", "json", "log-format", "log-level", "wait"},
	"events":               {"after", "all", "config", "data", "follow", "json", "limit", "log-format", "log-level", "method", "pending", "server"},
	"events ack":           {"data", "log-format", "log-level"},
	"history":              {"calls", "data", "json", "limit", "log-format", "log-level", "server"},
	"tasks":                {"all", "data", "json", "limit", "log-format", "log-level", "pending"},
	"resources":            {"config", "data", "json", "log-format", "log-level", "server", "templates", "wait"},
	"resources read":       {"config", "data", "json", "log-format", "log-level", "server", "wait"},
	"prompts":              {"config", "data", "json", "log-format", "log-level", "server", "wait"},
	"prompts get":          {"config", "data", "json", "log-format", "log-level", "server", "wait"},
	"elicitations":         {"data", "json"},
	"elicitations resolve": {"data"},
	"approvals":            {"data", "json"},
	"approvals allow":      {"data"},
	"approvals deny":       {"data", "reason"},
	"servers":              {"data"},
	"top":                  {"data", "interval", "json", "once", "sort"},
	"token":                {"admin", "data", "url"},
	"auth login":           {"config", "data", "device", "log-format", "log-level", "no-browser", "wait"},
	"auth":                 {"config", "data", "json", "log-format", "log-level"},
	"auth logout":          {"config", "data", "log-format", "log-level"},
	"help":                 nil,
	"version":              nil,
	"doctor":               {"data", "json", "reset"},
	"add":                  {"H", "config", "data", "e", "env", "force", "header", "transport"},
	"remove":               {"config", "data"},
	"list":                 {"config", "data", "json", "names"},
	"connect":              {"config", "data", "http", "print", "remove"},
	"logs":                 {"config", "data", "f", "follow", "log-format", "log-level", "n", "tail"},
	"completion":           nil,
}

// flagDefaults are the flags whose default is not the zero value, by name
// or, for one command's, by "command --name".
var flagDefaults = map[string]string{
	"data": ".mcpvisor", "disk-reserve": "256MiB", "log-level": "warn", "log-format": "text", "wait": "30s", "listen": "127.0.0.1:7071",
	"history --limit": "50", "serve --embeddings-model": "text-embedding-3-small", "stdio --embeddings-model": "text-embedding-3-small", "events --limit": "100", "tasks --limit": "100", "top --interval": "2s", "top --sort": "p99",
	"serve --cluster-listen": "127.0.0.1:0", "serve --etcd": "http://127.0.0.1:2379", "serve --consul": "http://127.0.0.1:8500", "serve --cluster-ttl": "0s", "serve --provider": "etcd",
}

// helpFlags returns the flags a command's help lists, and their defaults.
func helpFlags(t *testing.T, help string) (names []string, defaults map[string]string) {
	t.Helper()
	defaults = map[string]string{}
	_, section, ok := strings.Cut(help, "\nflags:\n")
	if !ok {
		return nil, defaults
	}
	section, _, _ = strings.Cut(section, "\n\n")
	section = strings.TrimSuffix(section, "\n")
	for _, line := range strings.Split(section, "\n") {
		name, ok := strings.CutPrefix(line, "  --")
		if !ok {
			// A one-letter flag is shown as -f.
			if name, ok = strings.CutPrefix(line, "  -"); !ok || len(name) < 1 || name[1:] != "" && name[1] != ' ' {
				t.Fatalf("flag line %q does not start with '  --', nor is it a one-letter '  -f'", line)
			}
		}
		name, _, _ = strings.Cut(name, " ")
		names = append(names, name)
		if _, def, ok := strings.Cut(line, "(default "); ok {
			defaults[name] = strings.TrimSuffix(def, ")")
		}
	}
	return names, defaults
}

func TestCommandHelp(t *testing.T) {
	var names []string
	for _, c := range commands() {
		names = append(names, c.name)
	}
	if want := slices.Sorted(maps.Keys(commandFlags)); !slices.Equal(slices.Sorted(slices.Values(names)), want) {
		t.Fatalf("the table's commands %q, want %q", names, want)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			words := strings.Fields(name)
			out, errOut, code := runArgs(append(words, "--help")...)
			if code != 0 || errOut != "" {
				t.Fatalf("%s --help: exit %d, stderr %q", name, code, errOut)
			}
			if !strings.HasPrefix(out, "usage: mcpvisor "+name) {
				t.Errorf("%s --help does not start with its synopsis:\n%s", name, out)
			}
			flagNames, defaults := helpFlags(t, out)
			if diff := cmp.Diff(commandFlags[name], flagNames); diff != "" {
				t.Errorf("%s --help lists other flags (-want +got):\n%s", name, diff)
			}
			for _, fl := range flagNames {
				want, ok := flagDefaults[name+" --"+fl]
				if !ok {
					want = flagDefaults[fl]
				}
				if defaults[fl] != want {
					t.Errorf("%s --%s: default %q, want %q", name, fl, defaults[fl], want)
				}
			}
			for _, args := range [][]string{append(words, "-h"), append([]string{"help"}, words...)} {
				if got, _, code := runArgs(args...); code != 0 || got != out {
					t.Errorf("%q: exit %d, output differs from %s --help:\n%s", args, code, name, got)
				}
			}
		})
	}
}

func TestOverview(t *testing.T) {
	out, _, code := runArgs()
	if code != 2 {
		t.Errorf("no arguments: exit %d, want 2", code)
	}
	for _, c := range commands() {
		if !strings.Contains(out, "\n  "+c.name) || !strings.Contains(out, c.summary) {
			t.Errorf("the overview lacks %q:\n%s", c.name, out)
		}
	}
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		if got, _, code := runArgs(args...); code != 0 || got != out {
			t.Errorf("%q: exit %d, output differs from the overview:\n%s", args, code, got)
		}
	}
	if _, errOut, code := runArgs("help", "frobnicate"); code != 2 || !strings.Contains(errOut, `unknown command "frobnicate"`) {
		t.Errorf("help of an unknown command: exit %d, %q", code, errOut)
	}
}

func TestFlagRefusals(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		cmd, flag string
		goesWith  string // a command that takes the flag, if any
	}{
		{args: []string{"tools", "--frobnicate"}, cmd: "tools", flag: "frobnicate"},
		{args: []string{"call", "mcp__a__b", "--frob=1"}, cmd: "call", flag: "frob"},
		{args: []string{"history", "--config", "mcp.json"}, cmd: "history", flag: "config", goesWith: "tools"},
		{args: []string{"tools", "--config", "mcp.json", "--reason", "r"}, cmd: "tools", flag: "reason", goesWith: "approvals deny"},
		{args: []string{"approvals", "allow", "ID", "--reason", "r"}, cmd: "approvals allow", flag: "reason", goesWith: "approvals deny"},
		{args: []string{"events", "ack", "1", "--json"}, cmd: "events ack", flag: "json", goesWith: "events"},
		{args: []string{"serve", "--config", "mcp.json", "--wait", "1s"}, cmd: "serve", flag: "wait", goesWith: "status"},
		{args: []string{"stdio", "--listen", "127.0.0.1:0"}, cmd: "stdio", flag: "listen", goesWith: "serve"},
		{args: []string{"elicitations", "--log-level", "debug"}, cmd: "elicitations", flag: "log-level", goesWith: "run"},
		{args: []string{"version", "--data", "x"}, cmd: "version", flag: "data", goesWith: "run"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, errOut, code := runArgs(tc.args...)
			if code != 2 || out != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", code, out)
			}
			for _, want := range []string{tc.cmd + ": unknown flag --" + tc.flag, "mcpvisor help " + tc.cmd + "'"} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr %q does not say %q", errOut, want)
				}
			}
			_, others, _ := strings.Cut(errOut, "goes with ")
			if tc.goesWith == "" && others != "" || !strings.Contains(others, tc.goesWith) {
				t.Errorf("stderr %q: want %q named as taking --%s", errOut, tc.goesWith, tc.flag)
			}
		})
	}
}

// A subcommand is the first positional argument, wherever the flags are.
func TestLookupSubcommand(t *testing.T) {
	cmds := commands()
	for _, tc := range []struct {
		args   []string
		cmd    string
		pos    []string
		server string
	}{
		{[]string{"resources", "read", "--server", "s", "u://1"}, "resources read", []string{"u://1"}, "s"},
		{[]string{"resources", "--server", "s", "read", "u://1"}, "resources read", []string{"u://1"}, "s"},
		{[]string{"resources", "--server=read", "--json"}, "resources", nil, "read"},
		{[]string{"events", "--server", "ack"}, "events", nil, "ack"},
		{[]string{"events", "--json", "ack", "3"}, "events ack", []string{"3"}, ""},
		{[]string{"events", "--", "ack"}, "events ack", nil, ""},
		{[]string{"approvals", "deny", "ID", "--reason", "no"}, "approvals deny", []string{"ID"}, ""},
		{[]string{"tasks", "read"}, "tasks", []string{"read"}, ""},
		{[]string{"tools", "--server", "s", "review"}, "tools review", nil, "s"},
		{[]string{"tools", "approve", "s", "echo", "--wait", "1s"}, "tools approve", []string{"s", "echo"}, ""},
		{[]string{"tools", "--config", "review"}, "tools", nil, ""},
	} {
		c, rest, ok := lookup(cmds, tc.args)
		if !ok || c.name != tc.cmd {
			t.Errorf("%q selects %v, want %q", tc.args, c, tc.cmd)
			continue
		}
		if tc.args[1] == "--json" {
			continue // events ack takes no --json: parsing it fails, as TestFlagRefusals checks
		}
		f, pos, err := c.parse(cmds, rest)
		if err != nil || !slices.Equal(pos, tc.pos) || f.server != tc.server {
			t.Errorf("%q: arguments %q, --server %q (%v); want %q, %q", tc.args, pos, f.server, err, tc.pos, tc.server)
		}
	}
}

func TestVersionText(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"none", nil, "mcpvisor: this binary records no build information\n"},
		{"devel", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}},
			"mcpvisor (devel): a development build, not a released version\n  go: go1.26.0\n"},
		{"release from a modified tree", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "-trimpath", Value: "true"}, {Key: "vcs.revision", Value: "abc123"},
				{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}},
			"mcpvisor v1.2.3\n  revision:  abc123\n  committed: 2026-01-02T03:04:05Z\n  modified:  true\n  go:        go1.26.0\n"},
	} {
		if got := versionText(tc.bi); got != tc.want {
			t.Errorf("%s: versionText = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// The built binary says what its build information says.
func TestVersion(t *testing.T) {
	bi, err := buildinfo.ReadFile(cliBin)
	if err != nil {
		t.Fatal(err)
	}
	want := versionText(bi)
	for _, arg := range []string{"--version", "version"} {
		out, err := exec.Command(cliBin, arg).Output()
		if err != nil || string(out) != want {
			t.Errorf("mcpvisor %s = %q (%v), want %q", arg, out, err, want)
		}
	}
	if !strings.Contains(want, bi.GoVersion) || !strings.HasPrefix(want, "mcpvisor ") {
		t.Errorf("version %q lacks the build's Go version %s", want, bi.GoVersion)
	}
}

// The package doc lists every command of the table, and no other.
func TestPackageDocListsCommands(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "doc.go", nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil || f.Doc == nil {
		t.Fatalf("doc.go: %v", err)
	}
	checkListsCommands(t, "doc.go", f.Doc.Text(), "\t")
}

// The README's CLI section lists every command of the table, and no other.
func TestReadmeListsCommands(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, cli, ok := strings.Cut(string(b), "\n## CLI\n")
	if !ok {
		t.Fatal("README.md has no CLI section")
	}
	_, block, _ := strings.Cut(cli, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	checkListsCommands(t, "README.md", block, "")
}

// checkListsCommands checks that the lines of text that start with indent
// and "mcpvisor " name every command of the table, and only those.
func checkListsCommands(t *testing.T, where, text, indent string) {
	t.Helper()
	cmds := commands()
	listed := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		rest, ok := strings.CutPrefix(strings.TrimSpace(line), "mcpvisor ")
		if !ok || !strings.HasPrefix(line, indent+"mcpvisor ") {
			continue
		}
		rest = strings.Join(strings.Fields(rest), " ")
		if rest == "--version" {
			rest = "version"
		}
		var name string
		for _, c := range cmds { // the longest name the line starts with
			if (rest == c.name || strings.HasPrefix(rest, c.name+" ")) && len(c.name) > len(name) {
				name = c.name
			}
		}
		if name == "" {
			t.Errorf("%s lists %q, not a command", where, line)
		}
		listed[name] = true
	}
	for _, c := range cmds {
		if !listed[c.name] {
			t.Errorf("%s does not list mcpvisor %s", where, c.name)
		}
	}
}

// --embeddings-weight takes a number from 0 to 1; a malformed one, on the
// command line or in its environment variable, is a usage error that
// names where it came from.
func TestEmbeddingsWeightChecked(t *testing.T) {
	if _, errOut, code := runArgs("stdio", "--config", "mcp.json", "--embeddings-weight", "2"); code != 2 || !strings.Contains(errOut, `"2" is not a weight from 0 to 1`) {
		t.Errorf("--embeddings-weight 2: exit %d, %q", code, errOut)
	}
	t.Setenv(embeddingsWeightEnv, "lots")
	if _, errOut, code := runArgs("stdio", "--config", "mcp.json"); code != 2 || !strings.Contains(errOut, "$"+embeddingsWeightEnv+`: "lots" is not a weight`) {
		t.Errorf("%s=lots: exit %d, %q", embeddingsWeightEnv, code, errOut)
	}
	var w weight
	if err := w.Set("0.25"); err != nil || float64(w) != 0.25 {
		t.Errorf("Set(0.25) = %v, %v", err, w)
	}
}
