package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/pkg/sftp"

	"github.com/mcpvisor/mcpvisor/examples/servers/internal/mcpserve"
)

// Input schemas. Every tool but the alias ones takes "alias" first.
const (
	aliasProp = `"alias":{"type":"string","pattern":"^[A-Za-z0-9._-]+$","description":"the alias of the remote host (see list_aliases)"}`

	listAliasesSchema = `{"type":"object","additionalProperties":false}`
	addAliasSchema    = `{"type":"object","properties":{` + aliasProp + `,
"host":{"type":"string","description":"host name or address"},
"port":{"type":"integer","minimum":1,"maximum":65535,"default":22},
"user":{"type":"string","description":"login user"},
"auth":{"type":"string","enum":["key","password"],"default":"key","description":"key: ssh-agent and/or a key file (an encrypted key's passphrase is asked when needed); password: asked when needed"},
"key_path":{"type":"string","description":"private key file; without it the ssh-agent, then ~/.ssh/id_ed25519, id_ecdsa, id_rsa"},
"sudo":{"type":"string","enum":["prompt","nopasswd","none"],"default":"prompt","description":"prompt: sudo -S with the password asked when needed; nopasswd: sudo -n, only for a NOPASSWD sudoers rule; none: no sudo"},
"accept_new_host_key":{"type":"boolean","default":false,"description":"trust and record the host key on first connect if the host is not in known_hosts (a changed key is always refused)"}},
"required":["alias","host","user"],"additionalProperties":false}`
	removeAliasSchema = `{"type":"object","properties":{` + aliasProp + `},"required":["alias"],"additionalProperties":false}`

	readFileSchema = `{"type":"object","properties":{` + aliasProp + `,
"path":{"type":"string","description":"remote file path (relative paths and ~/ start at the login directory)"},
"offset":{"type":"integer","minimum":1,"description":"first line to show, 1-based"},
"limit":{"type":"integer","minimum":1,"description":"number of lines to show"}},
"required":["alias","path"],"additionalProperties":false}`
	listFilesSchema = `{"type":"object","properties":{` + aliasProp + `,
"path":{"type":"string","description":"remote directory (default: the login directory)"},
"recursive":{"type":"boolean","default":false},
"max_entries":{"type":"integer","minimum":1,"default":1000}},
"required":["alias"],"additionalProperties":false}`
	grepFilesSchema = `{"type":"object","properties":{` + aliasProp + `,
"pattern":{"type":"string","description":"RE2 regular expression matched against each line"},
"path":{"type":"string","description":"file, or directory searched recursively (default: the login directory)"},
"glob":{"type":"string","description":"only files whose base name matches this glob, e.g. *.conf"},
"max_matches":{"type":"integer","minimum":1,"default":200}},
"required":["alias","pattern"],"additionalProperties":false}`
	editFileSchema = `{"type":"object","properties":{` + aliasProp + `,
"path":{"type":"string"},
"old_string":{"type":"string","description":"exact text to replace; must occur once unless replace_all. Empty on a missing file creates it"},
"new_string":{"type":"string"},
"replace_all":{"type":"boolean","default":false}},
"required":["alias","path","old_string","new_string"],"additionalProperties":false}`
	replaceLinesSchema = `{"type":"object","properties":{` + aliasProp + `,
"path":{"type":"string"},
"start_line":{"type":"integer","minimum":1,"description":"first line replaced, 1-based"},
"end_line":{"type":"integer","minimum":0,"description":"last line replaced, inclusive; start_line-1 inserts before start_line"},
"content":{"type":"string","description":"the new lines; empty deletes the range"}},
"required":["alias","path","start_line","end_line","content"],"additionalProperties":false}`
	execSchema = `{"type":"object","properties":{` + aliasProp + `,
"command":{"type":"string","description":"shell command, run by the login user's shell"},
"sudo":{"type":"boolean","default":false,"description":"run as root through sudo (the alias's sudo method)"},
"sudo_user":{"type":"string","description":"run as this user through sudo (implies sudo)"},
"timeout_seconds":{"type":"integer","minimum":1,"maximum":86400,"default":120},
"cwd":{"type":"string","description":"directory to run in"}},
"required":["alias","command"],"additionalProperties":false}`
	uploadSchema = `{"type":"object","properties":{` + aliasProp + `,
"local_path":{"type":"string","description":"local file or directory (directories are copied recursively)"},
"remote_path":{"type":"string","description":"destination; ending in / or naming an existing directory puts the source inside it, otherwise it is the exact destination"}},
"required":["alias","local_path","remote_path"],"additionalProperties":false}`
	downloadSchema = `{"type":"object","properties":{` + aliasProp + `,
"remote_path":{"type":"string","description":"remote file or directory (directories are copied recursively)"},
"local_path":{"type":"string","description":"destination; ending in / or naming an existing directory puts the source inside it, otherwise it is the exact destination"}},
"required":["alias","remote_path","local_path"],"additionalProperties":false}`
	sysinfoSchema = `{"type":"object","properties":{` + aliasProp + `},"required":["alias"],"additionalProperties":false}`
	systemdSchema = `{"type":"object","properties":{` + aliasProp + `,
"action":{"type":"string","enum":["status","start","stop","restart","enable","disable","list","logs"]},
"unit":{"type":"string","description":"unit name; required except for list (where it is a pattern)"},
"lines":{"type":"integer","minimum":1,"default":50,"description":"journal lines for logs"},
"sudo":{"type":"boolean","default":false}},
"required":["alias","action"],"additionalProperties":false}`
)

func hints(readOnly, destructive, idempotent bool) *mcpserve.Annotations {
	a := &mcpserve.Annotations{ReadOnlyHint: mcpserve.Bool(readOnly), IdempotentHint: mcpserve.Bool(idempotent), OpenWorldHint: mcpserve.Bool(true)}
	if !readOnly {
		a.DestructiveHint = mcpserve.Bool(destructive)
	}
	return a
}

// tools returns the thirteen tools.
func (s *sshServer) tools() []mcpserve.Tool {
	local := func(a *mcpserve.Annotations) *mcpserve.Annotations { a.OpenWorldHint = mcpserve.Bool(false); return a }
	return []mcpserve.Tool{
		{Name: "list_aliases", Title: "List SSH aliases", Description: "List the configured remote hosts, one per line: `alias: user@host:port auth=… sudo=…`.",
			InputSchema: json.RawMessage(listAliasesSchema), Annotations: local(hints(true, false, true)), Handler: s.listAliases},
		{Name: "add_alias", Title: "Add an SSH alias", Description: "Add or replace a remote host alias. No secret is stored: passwords and passphrases are asked for when needed and kept in memory only.",
			InputSchema: json.RawMessage(addAliasSchema), Annotations: local(hints(false, false, true)), Handler: s.addAlias},
		{Name: "remove_alias", Title: "Remove an SSH alias", Description: "Remove a remote host alias and close its connection.",
			InputSchema: json.RawMessage(removeAliasSchema), Annotations: local(hints(false, true, true)), Handler: s.removeAlias},
		{Name: "read_file", Title: "Read a remote file", Description: "Read a remote file over SFTP as the login user, `cat -n` style: each line as \"%6d\\t%s\". offset and limit select lines.",
			InputSchema: json.RawMessage(readFileSchema), Annotations: hints(true, false, true), Handler: s.fsTool(s.readFile)},
		{Name: "list_files", Title: "List remote files", Description: "List a remote directory over SFTP: one entry per line, sorted, relative to path, directories with a trailing /.",
			InputSchema: json.RawMessage(listFilesSchema), Annotations: hints(true, false, true), Handler: s.fsTool(s.listFiles)},
		{Name: "grep_files", Title: "Search remote files", Description: "Search remote files over SFTP for an RE2 regular expression: one match per line as path:line:text. Directories are searched recursively; binary files are skipped.",
			InputSchema: json.RawMessage(grepFilesSchema), Annotations: hints(true, false, true), Handler: s.fsTool(s.grepFiles)},
		{Name: "edit_file", Title: "Edit a remote file", Description: "Replace exact text in a remote file over SFTP as the login user. old_string must be unique unless replace_all; an empty old_string on a missing file creates it. For files the login user cannot write, use exec with sudo (tee, install).",
			InputSchema: json.RawMessage(editFileSchema), Annotations: hints(false, true, false), Handler: s.fsTool(s.editFile)},
		{Name: "replace_lines", Title: "Replace lines of a remote file", Description: "Replace lines start_line..end_line (1-based, inclusive) of a remote file with content, over SFTP as the login user.",
			InputSchema: json.RawMessage(replaceLinesSchema), Annotations: hints(false, true, false), Handler: s.fsTool(s.replaceLines)},
		{Name: "exec", Title: "Run a remote command", Description: "Run a shell command on the remote host and return its exit status, stdout and stderr; a non-zero exit is a tool error. sudo/sudo_user run it through sudo as the alias allows (a sudo password is asked for when needed).",
			InputSchema: json.RawMessage(execSchema), Annotations: hints(false, true, false), Handler: s.exec},
		{Name: "upload", Title: "Upload to a remote host", Description: "Copy a local file or directory tree to the remote host over SFTP. A remote_path ending in / or naming an existing directory receives the source inside it; otherwise it is the exact destination. Missing parent directories are created.",
			InputSchema: json.RawMessage(uploadSchema), Annotations: hints(false, true, true), Handler: s.upload},
		{Name: "download", Title: "Download from a remote host", Description: "Copy a remote file or directory tree to a local path over SFTP, with upload's destination rule mirrored locally.",
			InputSchema: json.RawMessage(downloadSchema), Annotations: hints(false, true, true), Handler: s.download},
		{Name: "sysinfo", Title: "Remote system summary", Description: "Hostname, OS, kernel, uptime, load, memory and root disk usage of the remote host.",
			InputSchema: json.RawMessage(sysinfoSchema), Annotations: hints(true, false, true), Handler: s.sysinfo},
		{Name: "systemd", Title: "Manage systemd units", Description: "systemctl status/start/stop/restart/enable/disable of a unit, list of services, or journalctl logs of a unit. sudo runs it through sudo.",
			InputSchema: json.RawMessage(systemdSchema), Annotations: hints(false, true, false), Handler: s.systemd},
	}
}

// fail turns err into a tool error.
func fail(err error) (*mcpserve.CallToolResult, error) {
	return mcpserve.ErrorResult("%s", err.Error()), nil
}

func (s *sshServer) listAliases(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	if err := call.Bind(&struct{}{}); err != nil {
		return fail(err)
	}
	all, err := s.aliases.list()
	if err != nil {
		return fail(err)
	}
	if len(all) == 0 {
		return mcpserve.TextResult("No aliases."), nil
	}
	lines := make([]string, len(all))
	for i, a := range all {
		lines[i] = a.line()
	}
	return mcpserve.TextResult(strings.Join(lines, "\n")), nil
}

func (s *sshServer) addAlias(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Alias            string `json:"alias"`
		Host             string `json:"host"`
		Port             int    `json:"port"`
		User             string `json:"user"`
		Auth             string `json:"auth"`
		KeyPath          string `json:"key_path"`
		Sudo             string `json:"sudo"`
		AcceptNewHostKey bool   `json:"accept_new_host_key"`
	}
	if err := call.Bind(&args); err != nil {
		return fail(err)
	}
	keyPath, err := s.expandLocal(args.KeyPath)
	if err != nil {
		return fail(err)
	}
	if keyPath != "" {
		if _, err := os.Stat(keyPath); err != nil {
			return fail(fmt.Errorf("key_path: %w", err))
		}
	}
	a := Alias{Name: args.Alias, Host: args.Host, Port: args.Port, User: args.User, Auth: args.Auth,
		KeyPath: keyPath, Sudo: args.Sudo, AcceptNewHostKey: args.AcceptNewHostKey}
	replaced, err := s.aliases.put(a)
	if err != nil {
		return fail(err)
	}
	s.forgetAlias(a.Name)
	_ = a.normalize()
	verb := "Added"
	if replaced {
		verb = "Replaced"
	}
	return mcpserve.TextResult(fmt.Sprintf("%s alias %s", verb, a.line())), nil
}

// forgetAlias drops what the server holds for an alias that changed.
func (s *sshServer) forgetAlias(name string) {
	s.pool.forget(name)
	s.login.drop(loginKey(Alias{Name: name}))
	s.sudo.drop(sudoKey(Alias{Name: name}))
}

func (s *sshServer) removeAlias(_ context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Alias string `json:"alias"`
	}
	if err := call.Bind(&args); err != nil {
		return fail(err)
	}
	if err := s.aliases.remove(args.Alias); err != nil {
		return fail(err)
	}
	s.forgetAlias(args.Alias)
	return mcpserve.TextResult(fmt.Sprintf("Removed alias %s", args.Alias)), nil
}

// fsArgs is the union of the filesystem tools' arguments.
type fsArgs struct {
	Alias      string  `json:"alias"`
	Path       string  `json:"path"`
	Offset     int     `json:"offset"`
	Limit      int     `json:"limit"`
	Recursive  bool    `json:"recursive"`
	MaxEntries int     `json:"max_entries"`
	Pattern    *string `json:"pattern"`
	Glob       string  `json:"glob"`
	MaxMatches int     `json:"max_matches"`
	OldString  *string `json:"old_string"`
	NewString  *string `json:"new_string"`
	ReplaceAll bool    `json:"replace_all"`
	StartLine  *int    `json:"start_line"`
	EndLine    *int    `json:"end_line"`
	Content    *string `json:"content"`
}

// fsTool adapts a filesystem operation: it binds the arguments (rejecting
// those the tool's schema does not list), connects and opens SFTP.
func (s *sshServer) fsTool(op func(ctx context.Context, c *conn, args fsArgs) (string, error)) mcpserve.ToolHandler {
	return func(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
		var args fsArgs
		if err := bindSchema(call, &args); err != nil {
			return fail(err)
		}
		_, c, release, err := s.connect(ctx, call, args.Alias)
		if err != nil {
			return fail(err)
		}
		defer release()
		args.Path = remotePath(args.Path)
		out, err := op(ctx, c, args)
		if err != nil {
			return fail(err)
		}
		return mcpserve.TextResult(out), nil
	}
}

// bindSchema decodes the arguments into v after checking that every
// argument is a property of the tool's input schema: fsArgs is shared by
// several tools, so call.Bind alone would accept another tool's fields.
func bindSchema(call *mcpserve.ToolCall, v any) error {
	tool, ok := call.Server.Tool(call.Name)
	if ok {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		var given map[string]json.RawMessage
		if json.Unmarshal(tool.InputSchema, &schema) == nil && json.Unmarshal(call.Arguments, &given) == nil {
			for k := range given {
				if _, ok := schema.Properties[k]; !ok {
					return fmt.Errorf("invalid arguments for %s: unknown field %q", call.Name, k)
				}
			}
		}
	}
	return call.Bind(v)
}

func (s *sshServer) readFile(_ context.Context, c *conn, a fsArgs) (string, error) {
	sc, err := c.sftpClient()
	if err != nil {
		return "", err
	}
	if a.Offset < 0 || a.Limit < 0 {
		return "", errors.New("offset and limit must be positive")
	}
	return readFile(sc, a.Path, a.Offset, a.Limit)
}

func (s *sshServer) listFiles(_ context.Context, c *conn, a fsArgs) (string, error) {
	sc, err := c.sftpClient()
	if err != nil {
		return "", err
	}
	if a.MaxEntries <= 0 {
		a.MaxEntries = defaultMaxList
	}
	return listFiles(sc, a.Path, a.Recursive, a.MaxEntries)
}

func (s *sshServer) grepFiles(_ context.Context, c *conn, a fsArgs) (string, error) {
	if a.Pattern == nil {
		return "", errors.New("pattern is required")
	}
	sc, err := c.sftpClient()
	if err != nil {
		return "", err
	}
	if a.MaxMatches <= 0 {
		a.MaxMatches = defaultMaxGrep
	}
	return grepFiles(sc, a.Path, *a.Pattern, a.Glob, a.MaxMatches)
}

func (s *sshServer) editFile(_ context.Context, c *conn, a fsArgs) (string, error) {
	if a.OldString == nil || a.NewString == nil {
		return "", errors.New("old_string and new_string are required")
	}
	sc, err := c.sftpClient()
	if err != nil {
		return "", err
	}
	return editFile(sc, a.Path, *a.OldString, *a.NewString, a.ReplaceAll)
}

func (s *sshServer) replaceLines(_ context.Context, c *conn, a fsArgs) (string, error) {
	if a.StartLine == nil || a.EndLine == nil || a.Content == nil {
		return "", errors.New("start_line, end_line and content are required")
	}
	sc, err := c.sftpClient()
	if err != nil {
		return "", err
	}
	return replaceLines(sc, a.Path, *a.StartLine, *a.EndLine, *a.Content)
}

func (s *sshServer) exec(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Alias          string `json:"alias"`
		Command        string `json:"command"`
		Sudo           bool   `json:"sudo"`
		SudoUser       string `json:"sudo_user"`
		TimeoutSeconds int    `json:"timeout_seconds"`
		Cwd            string `json:"cwd"`
	}
	if err := call.Bind(&args); err != nil {
		return fail(err)
	}
	if strings.TrimSpace(args.Command) == "" {
		return fail(errors.New("command is required"))
	}
	timeout := 120 * time.Second
	if args.TimeoutSeconds > 0 {
		timeout = time.Duration(args.TimeoutSeconds) * time.Second
	}
	a, c, release, err := s.connect(ctx, call, args.Alias)
	if err != nil {
		return fail(err)
	}
	defer release()
	command := args.Command
	if args.Cwd != "" {
		command = "cd " + shellQuote(args.Cwd) + " && " + command
	}
	res, err := s.run(ctx, call, a, c, command, args.Sudo, args.SudoUser, timeout)
	return commandResult(res, err)
}

// commandResult is a tool result for a finished (or stopped) command: the
// exit status, stdout and stderr, an error first when there is one.
func commandResult(res runResult, err error) (*mcpserve.CallToolResult, error) {
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		if res.Stdout != "" || res.Stderr != "" {
			return mcpserve.ErrorResult("%s\n%s", err.Error(), res.text()), nil
		}
		return fail(err)
	}
	out := mcpserve.TextResult(res.text())
	out.IsError = res.failed()
	return out, nil
}

func (s *sshServer) upload(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	return s.transfer(ctx, call, "upload", func(sc *sftp.Client, alias, local, remote string) (string, error) {
		target, st, err := upload(ctx, sc, local, remote)
		if err != nil {
			return "", transferError("upload", st, err)
		}
		return st.summary("Uploaded", alias+":"+target), nil
	})
}

func (s *sshServer) download(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	return s.transfer(ctx, call, "download", func(sc *sftp.Client, _, local, remote string) (string, error) {
		target, st, err := download(ctx, sc, remote, local)
		if err != nil {
			return "", transferError("download", st, err)
		}
		return st.summary("Downloaded", target), nil
	})
}

// transfer binds upload's and download's arguments, connects, and calls
// run with the alias, the local path (~ expanded, a trailing / kept: it
// means "into this directory") and the remote path.
func (s *sshServer) transfer(ctx context.Context, call *mcpserve.ToolCall, verb string,
	run func(sc *sftp.Client, alias, local, remote string) (string, error)) (*mcpserve.CallToolResult, error) {
	var args struct {
		Alias      string `json:"alias"`
		LocalPath  string `json:"local_path"`
		RemotePath string `json:"remote_path"`
	}
	if err := call.Bind(&args); err != nil {
		return fail(err)
	}
	if args.LocalPath == "" || args.RemotePath == "" {
		return fail(fmt.Errorf("%s: local_path and remote_path are required", verb))
	}
	local, err := s.expandLocal(args.LocalPath)
	if err != nil {
		return fail(err)
	}
	if strings.HasSuffix(args.LocalPath, "/") && !strings.HasSuffix(local, "/") {
		local += "/"
	}
	_, c, release, err := s.connect(ctx, call, args.Alias)
	if err != nil {
		return fail(err)
	}
	defer release()
	sc, err := c.sftpClient()
	if err != nil {
		return fail(err)
	}
	text, err := run(sc, args.Alias, local, remotePath(args.RemotePath))
	if err != nil {
		return fail(err)
	}
	return mcpserve.TextResult(text), nil
}

func transferError(verb string, st transferStats, err error) error {
	return fmt.Errorf("%s: %w (%d files, %d bytes copied before the error)", verb, err, st.Files, st.Bytes)
}

func (s *sshServer) sysinfo(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Alias string `json:"alias"`
	}
	if err := call.Bind(&args); err != nil {
		return fail(err)
	}
	a, c, release, err := s.connect(ctx, call, args.Alias)
	if err != nil {
		return fail(err)
	}
	defer release()
	res, err := runRemote(ctx, c, sysinfoScript, nil, 30*time.Second)
	if err != nil {
		return commandResult(res, err)
	}
	return mcpserve.TextResult(fmt.Sprintf("alias: %s (%s)\n%s", a.Name, a.target(), formatSysinfo(res.Stdout))), nil
}

func (s *sshServer) systemd(ctx context.Context, call *mcpserve.ToolCall) (*mcpserve.CallToolResult, error) {
	var args struct {
		Alias  string `json:"alias"`
		Action string `json:"action"`
		Unit   string `json:"unit"`
		Lines  int    `json:"lines"`
		Sudo   bool   `json:"sudo"`
	}
	if err := call.Bind(&args); err != nil {
		return fail(err)
	}
	command, err := systemdCommand(args.Action, args.Unit, args.Lines)
	if err != nil {
		return fail(err)
	}
	a, c, release, err := s.connect(ctx, call, args.Alias)
	if err != nil {
		return fail(err)
	}
	defer release()
	res, err := s.run(ctx, call, a, c, command, args.Sudo, "", 120*time.Second)
	if why, absent := systemdAbsent(res.Stderr); absent && res.failed() {
		return fail(fmt.Errorf("%w on %s: %s", errNoSystemd, a.Name, why))
	}
	out, rerr := commandResult(res, err)
	// systemctl status exits 3 for an inactive unit: a report, not a failure.
	if err == nil && args.Action == "status" && res.Exit == 3 {
		out.IsError = false
	}
	return out, rerr
}
