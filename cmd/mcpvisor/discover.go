package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcpvisor/mcpvisor"
)

// projectFiles are the agent tools' project files, in the order the README
// lists the tools: the first one found is the config when no --config is
// given.
var projectFiles = []string{
	".mcp.json",             // Claude Code
	".cursor/mcp.json",      // Cursor
	".vscode/mcp.json",      // VS Code
	".gemini/settings.json", // Gemini CLI
	".roo/mcp.json",         // Roo Code
	".zed/settings.json",    // Zed
	".codex/config.toml",    // Codex
}

// configEnv names the config files when --config is not given, separated
// as PATH's directories are.
const configEnv = "MCPVISOR_CONFIG"

// discovered is where a config came from when --config did not name it.
type discovered struct {
	files []string
	from  string // "MCPVISOR_CONFIG", or the directory searched from
}

// discoverConfig finds the config of a command given no --config:
// MCPVISOR_CONFIG, else the first of projectFiles in dir or the nearest
// directory above it that has one, up to the project's root (the first
// with a .git) and never the home directory itself, whose files are the
// tools' user settings. When it is found in a directory above dir, and the
// data directory is the default, the data directory is that directory's:
// a command run in a subdirectory finds the journal and the sidecar of
// the project.
func discoverConfig(f *flags, dir string) (*discovered, error) {
	if v := os.Getenv(configEnv); v != "" {
		var files []string
		for _, p := range filepath.SplitList(v) {
			if p != "" {
				files = append(files, p)
			}
		}
		if len(files) > 0 {
			f.config = files
			return &discovered{files: files, from: configEnv}, nil
		}
	}
	home, _ := os.UserHomeDir()
	for d := dir; ; {
		if d == home && d != dir {
			break
		}
		for _, name := range projectFiles {
			p := filepath.Join(d, filepath.FromSlash(name))
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				f.config = configFiles{p}
				if d != dir && f.data == mcpvisor.DefaultDataDir {
					f.data = filepath.Join(d, mcpvisor.DefaultDataDir)
				}
				return &discovered{files: []string{p}, from: dir}, nil
			}
		}
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) {
			break
		}
		up := filepath.Dir(d)
		if up == d {
			break
		}
		d = up
	}
	return nil, nil
}

// noConfig is the error of a command that found no config.
func noConfig(cmd, dir string) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf("%s: no config file: give --config FILE, set %s, or run it where one of %s is (searched %s and the directories above it, up to the project's root)",
		cmd, configEnv, strings.Join(projectFiles, ", "), dir)}
}

// use says on w which file command cmd reads, since no flag said so, or
// fails when none was found; a nil d (--config given) does nothing.
func (d *discovered) use(cmd string, w io.Writer) error {
	if d == nil {
		return nil
	}
	if len(d.files) == 0 {
		return noConfig(cmd, d.from)
	}
	d.say(w)
	return nil
}

// say tells w which file the command reads.
func (d *discovered) say(w io.Writer) {
	if d.from == configEnv {
		fmt.Fprintf(w, "mcpvisor: using %s (from %s)\n", strings.Join(d.files, ", "), configEnv)
		return
	}
	p := d.files[0]
	if rel, err := filepath.Rel(d.from, p); err == nil && !strings.HasPrefix(rel, "..") {
		p = rel
	}
	fmt.Fprintf(w, "mcpvisor: using %s (no --config given)\n", p)
}
