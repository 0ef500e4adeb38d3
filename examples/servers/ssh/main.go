// Command ssh is an MCP stdio server that operates on remote hosts over SSH:
// thirteen tools to manage host aliases, read, search and edit remote files
// over SFTP, run commands (with sudo), copy files both ways and inspect the
// system and its systemd units. Logins use keys, the ssh-agent or passwords;
// passwords and passphrases are asked for through elicitation and kept in
// memory only. See README.md.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

const version = "1.0.0"

func main() {
	cfg, err := configFromEnv(os.Getenv)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ssh:", err)
		os.Exit(2)
	}
	s := newSSHServer(cfg)
	defer s.Close()
	srv := mcpserve.New(mcpserve.Options{
		Name:    "ssh",
		Title:   "SSH",
		Version: version,
		Instructions: "Operate on remote hosts over SSH. Hosts are aliases (list_aliases, add_alias, remove_alias). " +
			"read_file, list_files, grep_files, edit_file and replace_lines work like local filesystem tools with a leading alias, over SFTP as the login user; " +
			"for privileged writes use exec with sudo=true (tee, install). exec, upload, download, sysinfo and systemd complete the set. " +
			"Passwords are asked from the user directly, never from you.",
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
		// With a client that speaks MCP 2026-07-28, passwords are asked
		// through input_required results (MRTR).
		Modern: true,
	})
	for _, t := range s.tools() {
		srv.AddTool(t)
	}
	fmt.Fprintf(os.Stderr, "ssh %s: MCP stdio server ready, aliases in %s, known hosts in %s\n", version, cfg.AliasesPath, cfg.KnownHostsPath)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := srv.Serve(ctx, os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "ssh:", err)
		s.Close()
		os.Exit(1)
	}
}

// expandLocal resolves a leading ~ in a local path against the home
// directory and makes it absolute.
func (s *sshServer) expandLocal(p string) (string, error) {
	if p == "" {
		return "", nil
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		p = filepath.Join(s.cfg.Home, p[1:])
	}
	return filepath.Abs(p)
}
