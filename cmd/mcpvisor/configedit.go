package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"github.com/mcpvisor/mcpvisor"
	"github.com/mcpvisor/mcpvisor/config"
)

// add, remove and list edit and read the config file the way claude mcp
// add does: the file is the person's, so only the one entry changes (see
// config.AddServer), and a sidecar running that file applies it at once.

const addDetail = "COMMAND and its ARGs are written as given: flags after COMMAND are its own (add fs npx -y\n" +
	"@modelcontextprotocol/server-filesystem .). A URL (http:// or https://) is a Streamable HTTP server.\n" +
	"The file is --config, else the config found as the other commands find it, else a new .mcp.json\n" +
	"here. It is written in its tool's own field names; comments and everything else in it are kept.\n" +
	"A sidecar (mcpvisor serve) running that file is told to read it again (SIGHUP): the server starts."

// editFlags are add's flags.
func editFlags(fs *flag.FlagSet, f *flags) {
	for _, n := range []string{"e", "env"} {
		fs.Var(&f.envs, n, "an environment variable `KEY=VALUE` of the server's process (repeatable)")
	}
	for _, n := range []string{"H", "header"} {
		fs.Var(&f.headers, n, "an HTTP header `'NAME: VALUE'` sent to a URL server (repeatable)")
	}
	fs.StringVar(&f.transport, "transport", "", "stdio or http; by default http for a URL, stdio for a command")
	fs.BoolVar(&f.force, "force", false, "replace a server of the same name")
}

// repeated is a flag that may be given more than once.
type repeated []string

func (r *repeated) String() string     { return strings.Join(*r, ", ") }
func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }

// editTarget is the file add writes: --config's first, else the one
// found, else .mcp.json in the working directory.
func editTarget(e *env) (string, error) {
	if len(e.f.config) > 0 { // --config, or the file found (discoverConfig sets it)
		return e.f.config[0], nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, ".mcp.json"), nil
}

// cmdAdd writes a server into the config file.
func cmdAdd(ctx context.Context, e *env) error {
	if len(e.args) < 2 {
		return &exitError{code: exitUsage, msg: "add: want NAME COMMAND [ARG...] or NAME URL" + seeHelp("add")}
	}
	name, target := e.args[0], e.args[1]
	if err := config.ValidateServerName(name); err != nil {
		return &exitError{code: exitUsage, msg: "add: " + err.Error()}
	}
	var entry config.Entry
	isURL := strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://")
	if isURL && len(e.args) > 2 {
		// A URL has no arguments of its own: what follows it is add's.
		fs := flag.NewFlagSet("add", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		editFlags(fs, &e.f)
		if err := fs.Parse(e.args[2:]); err != nil {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("add: %v%s", err, seeHelp("add"))}
		}
		e.args = append(e.args[:2], fs.Args()...)
	}
	switch t := e.f.transport; {
	case t == "" && isURL, t == "http":
		if !isURL || len(e.args) > 2 {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("add: server %q: an http server is one URL (http:// or https://), got %q", name, strings.Join(e.args[1:], " "))}
		}
		if len(e.f.envs) > 0 {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("add: server %q: --env is for a command; a URL server takes --header", name)}
		}
		entry.URL = target
	case t == "" || t == "stdio":
		if len(e.f.headers) > 0 {
			return &exitError{code: exitUsage, msg: fmt.Sprintf("add: server %q: --header is for a URL server; a command takes --env", name)}
		}
		entry.Command, entry.Args = target, e.args[2:]
	default:
		return &exitError{code: exitUsage, msg: fmt.Sprintf("add: --transport %q: want stdio or http", t)}
	}
	var err error
	if entry.Env, err = pairs(e.f.envs, "=", "--env", name); err != nil {
		return err
	}
	if entry.Headers, err = pairs(e.f.headers, ":", "--header", name); err != nil {
		return err
	}
	path, err := editTarget(e)
	if err != nil {
		return err
	}
	err = config.AddServer(path, name, entry, e.f.force)
	switch {
	case errors.Is(err, config.ErrServerExists):
		return fmt.Errorf("add: server %q is in %s already: remove it first, or give --force to replace it", name, path)
	case err != nil:
		return fmt.Errorf("add: %w", err)
	}
	what := entry.URL
	if what == "" {
		what = strings.Join(append([]string{entry.Command}, entry.Args...), " ")
	}
	fmt.Fprintf(e.stdout, "added server %q to %s: %s\n", name, displayPath(path), what)
	tellSidecar(ctx, e, path)
	return nil
}

// cmdRemove deletes a server from the config file that names it.
func cmdRemove(ctx context.Context, e *env) error {
	if len(e.args) != 1 {
		return &exitError{code: exitUsage, msg: "remove: want NAME" + seeHelp("remove")}
	}
	name := e.args[0]
	files := []string(e.f.config) // --config, or the file found (discoverConfig sets it)
	if len(files) == 0 {
		return noConfig("remove", e.found.from)
	}
	for _, path := range files {
		err := config.RemoveServer(path, name)
		if errors.Is(err, config.ErrNoSuchServer) {
			continue
		}
		if err != nil {
			return fmt.Errorf("remove: %w", err)
		}
		fmt.Fprintf(e.stdout, "removed server %q from %s\n", name, displayPath(path))
		tellSidecar(ctx, e, path)
		return nil
	}
	return fmt.Errorf("remove: no server %q in %s", name, strings.Join(files, ", "))
}

// listEntry is one server of list.
type listEntry struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	Target    string `json:"target"` // the command line, or the URL
	Enabled   bool   `json:"enabled"`
	File      string `json:"file"`
	// State is the running sidecar's, when one runs the file.
	State string `json:"state,omitempty"`
	Error string `json:"error,omitempty"` // why the entry does not load
}

// cmdList prints the servers of the config files without starting them,
// with their states when a sidecar runs them.
func cmdList(ctx context.Context, e *env) error {
	files := []string(e.f.config) // --config, or the file found (discoverConfig sets it)
	if len(files) == 0 {
		return noConfig("list", e.found.from)
	}
	var states map[string]mcpvisor.ServerStatus
	if r, _ := sidecarOn(ctx, e.f); r != nil {
		if sts, err := r.servers(ctx, 0); err == nil {
			states = map[string]mcpvisor.ServerStatus{}
			for _, st := range sts {
				states[st.Name] = st
			}
		}
	}
	list := []listEntry{}
	for _, path := range files {
		cfg, err := config.Load(path)
		if err != nil && len(cfg.Servers) == 0 {
			names, nerr := config.ServerNames(path)
			if nerr != nil {
				return usageError(err)
			}
			for _, n := range names {
				list = append(list, listEntry{Name: n, File: path, Error: firstLine(strings.TrimPrefix(err.Error(), "config: "))})
			}
			continue
		}
		for _, s := range cfg.Servers {
			tr, _ := s.Transport()
			le := listEntry{Name: s.Name, Transport: string(tr), Enabled: s.Enabled, File: path, Target: s.URL}
			if s.URL == "" {
				le.Target = strings.Join(append([]string{s.Command}, s.Args...), " ")
			}
			if st, ok := states[s.Name]; ok {
				le.State = string(st.State)
			}
			list = append(list, le)
		}
	}
	switch {
	case e.f.names:
		for _, le := range list {
			fmt.Fprintln(e.stdout, le.Name)
		}
	case e.f.json:
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(list)
	default:
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tTRANSPORT\tSTATE\tCOMMAND OR URL\tFILE")
		for _, le := range list {
			state := le.State
			switch {
			case le.Error != "":
				state = "error: " + le.Error
			case !le.Enabled:
				state = "disabled"
			case state == "":
				state = "-"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", printable(le.Name), le.Transport, printable(state), printable(le.Target), displayPath(le.File))
		}
		tw.Flush()
		if states == nil {
			fmt.Fprintln(e.stderr, "mcpvisor: no sidecar runs these servers: STATE is not known (mcpvisor status starts them and says)")
		}
	}
	return nil
}

// pairs splits each of vs at sep into a map, naming flag and server in
// the error of one that has no sep.
func pairs(vs []string, sep, flag, server string) (map[string]string, error) {
	if len(vs) == 0 {
		return nil, nil
	}
	m := map[string]string{}
	for _, v := range vs {
		k, val, ok := strings.Cut(v, sep)
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, &exitError{code: exitUsage, msg: fmt.Sprintf("add: server %q: %s %q: want NAME%sVALUE", server, flag, v, sep)}
		}
		if sep == ":" {
			val = strings.TrimSpace(val)
		}
		m[k] = val
	}
	return m, nil
}

// displayPath is path relative to the working directory when it is under it.
func displayPath(path string) string {
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, path); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return path
}

// tellSidecar has a sidecar that runs the file at path read it again
// (SIGHUP, as serve documents), and says so.
func tellSidecar(ctx context.Context, e *env, path string) {
	r, err := sidecarOn(ctx, e.f)
	if err != nil || r == nil {
		return
	}
	if r.info.Config == "" || !sameFile(r.info.Config, path) {
		fmt.Fprintf(e.stderr, "mcpvisor: the sidecar running on %s (pid %d) runs %s, not this file: it is not changed\n", e.f.data, r.info.PID, r.info.Config)
		return
	}
	if err := syscall.Kill(r.info.PID, syscall.SIGHUP); err != nil {
		fmt.Fprintf(e.stderr, "mcpvisor: could not tell the sidecar (pid %d) to read the file again: %v; send it SIGHUP\n", r.info.PID, err)
		return
	}
	fmt.Fprintf(e.stderr, "mcpvisor: the sidecar running on %s (pid %d) reads the file again now\n", e.f.data, r.info.PID)
}
