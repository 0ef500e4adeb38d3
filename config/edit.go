package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Entry is a server as a command writes it into a tool's file: a command
// to run (stdio) or a URL (Streamable HTTP). AddServer spells it in the
// file's own dialect.
type Entry struct {
	Command string
	Args    []string
	Env     map[string]string
	URL     string
	Headers map[string]string
}

// ErrServerExists is AddServer's error for a name the file already has.
var ErrServerExists = errors.New("a server of that name is in the file")

// ErrNoSuchServer is RemoveServer's error for a name the file does not have.
var ErrNoSuchServer = errors.New("no server of that name is in the file")

// AddServer writes server name into the configuration file at path, in
// the file's dialect (its name or content says which, as for Load), and
// keeps every other byte of the file as it was: comments, order and
// indentation. A file that does not exist is created (as the dialect its
// name says; an mcpServers JSON file otherwise). With replace false, a
// name the file has already is ErrServerExists. The file is written only
// if it then loads with the server as given; it is replaced atomically,
// its mode kept. Continue's YAML is not written.
func AddServer(path, name string, e Entry, replace bool) error {
	if err := checkEntry(name, e); err != nil {
		return err
	}
	old, mode, err := readForEdit(path)
	if err != nil {
		return err
	}
	d := fileDialect(path, old)
	if have, err := serverNames(path, old); err != nil {
		return err
	} else if slices.Contains(have, name) {
		if !replace {
			return fmt.Errorf("%s: %q: %w", path, name, ErrServerExists)
		}
		if old, err = removeServer(old, d, name); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	var out []byte
	switch d.syntax() {
	case syntaxTOML:
		out = appendTOMLServer(old, name, e)
	case syntaxYAML:
		return fmt.Errorf("%s: writing %s is not supported: add the server by hand", path, d.file())
	default:
		v, err := json.Marshal(entryObject(d, e))
		if err != nil {
			return err
		}
		if out, err = setJSONMember(old, []string{serversKey(d), name}, v); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	names, err := serverNames(path, out)
	if err != nil || !slices.Contains(names, name) {
		return fmt.Errorf("%s: the edited file would not load with server %q (%v): left unchanged", path, name, err)
	}
	return writeAtomic(path, out, mode)
}

// RemoveServer deletes server name from the configuration file at path,
// keeping every other byte; ErrNoSuchServer when the file has none.
func RemoveServer(path, name string) error {
	old, mode, err := readForEdit(path)
	if err != nil {
		return err
	}
	if _, statErr := os.Stat(path); statErr != nil {
		return fmt.Errorf("%s: %q: %w", path, name, ErrNoSuchServer)
	}
	have, err := serverNames(path, old)
	if err != nil {
		return err
	}
	if !slices.Contains(have, name) {
		return fmt.Errorf("%s: %q: %w", path, name, ErrNoSuchServer)
	}
	d := fileDialect(path, old)
	if d.syntax() == syntaxYAML {
		return fmt.Errorf("%s: editing %s is not supported: remove the server by hand", path, d.file())
	}
	out, err := removeServer(old, d, name)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if names, err := serverNames(path, out); err != nil || slices.Contains(names, name) {
		return fmt.Errorf("%s: the edited file would not load without server %q (%v): left unchanged", path, name, err)
	}
	return writeAtomic(path, out, mode)
}

// SetJSON sets the member at keys (from the top-level object down) of the
// JSON file at path to value, creating the file and the objects on the way
// that are missing, and keeping every other byte. It is for the files of
// the tools that are not server configurations (Claude Code's
// ~/.claude.json); value must be valid JSON.
func SetJSON(path string, keys []string, value json.RawMessage) error {
	old, mode, err := readForEdit(path)
	if err != nil {
		return err
	}
	out, err := setJSONMember(old, keys, value)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if !json.Valid(strip(out)) {
		return fmt.Errorf("%s: the edit would leave the file not JSON: left unchanged", path)
	}
	return writeAtomic(path, out, mode)
}

// DeleteJSON deletes the member at keys of the JSON file at path; found is
// false when it has none (the file is then not written).
func DeleteJSON(path string, keys []string) (found bool, err error) {
	old, mode, err := readForEdit(path)
	if err != nil || len(old) == 0 {
		return false, err
	}
	out, found, err := deleteJSONMember(old, keys)
	if err != nil || !found {
		return false, err
	}
	return true, writeAtomic(path, out, mode)
}

// ServerNames lists the servers the configuration file at path names, in
// its order, without checking anything else: a file that is missing has
// none.
func ServerNames(path string) ([]string, error) {
	b, _, err := readForEdit(path)
	if err != nil {
		return nil, err
	}
	return serverNames(path, b)
}

func checkEntry(name string, e Entry) error {
	if err := ValidateServerName(name); err != nil {
		return err
	}
	if (e.Command == "") == (e.URL == "") {
		return fmt.Errorf("server %q: give a command or a URL", name)
	}
	return nil
}

// readForEdit reads the file at path, nothing when it does not exist, and
// its mode (0o600 for a new file: it may come to hold a token).
func readForEdit(path string) ([]byte, os.FileMode, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, 0o600, nil
	}
	if err != nil {
		return nil, 0, err
	}
	if fi.Size() > MaxFileSize {
		return nil, 0, fmt.Errorf("%s: the file is %d bytes, more than a configuration file may be (%d)", path, fi.Size(), MaxFileSize)
	}
	b, err := os.ReadFile(path)
	return b, fi.Mode().Perm(), err
}

// writeAtomic replaces path with b: a file beside it renamed over it.
func writeAtomic(path string, b []byte, mode os.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// fileDialect is the dialect of the file at path holding b.
func fileDialect(path string, b []byte) toolDialect {
	if d, ok := dialectFromPath(path); ok || len(bytes.TrimSpace(b)) == 0 {
		return d
	}
	raw, derr := decodeJSON(path, b)
	if derr != nil {
		return dialectJSON
	}
	return dialectFromContent(objectMembers(raw))
}

// serverNames lists the servers the file at path holding b names, without
// checking their entries (one that does not load is still named); an empty
// file has none.
func serverNames(path string, b []byte) ([]string, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		return nil, nil
	}
	d := fileDialect(path, b)
	if d.syntax() == syntaxYAML {
		pf, err := parseFile(path, b, Options{Path: path})
		var names []string
		for _, s := range pf.Servers {
			names = append(names, s.Name)
		}
		return names, err
	}
	top, derr := decodeDocument(path, b, d)
	if derr != nil {
		return nil, derr
	}
	keys := serverKeys
	if d.syntax() == syntaxTOML {
		keys = []string{"mcp_servers"}
	}
	var names []string
	for _, m := range objectMembers(top) {
		if slices.Contains(keys, m.key) && jsonKind(m.value) == "an object" {
			for _, e := range objectMembers(m.value) {
				names = append(names, e.key)
			}
		}
	}
	return names, nil
}

// serversKey is the member that holds the dialect's servers.
func serversKey(d toolDialect) string {
	switch d {
	case dialectVSCode:
		return "servers"
	case dialectZed:
		return "context_servers"
	}
	return "mcpServers"
}

// entryObject is e in the dialect's field names, keys in a fixed order.
func entryObject(d toolDialect, e Entry) any {
	var m orderedObject
	if e.URL != "" {
		switch d {
		case dialectVSCode, dialectJSON:
			m.add("type", "http")
			m.add("url", e.URL)
		case dialectGemini:
			m.add("httpUrl", e.URL)
		case dialectWindsurf:
			m.add("serverUrl", e.URL)
		case dialectCline, dialectRoo:
			m.add("type", "streamableHttp")
			m.add("url", e.URL)
		default: // Cursor, Zed
			m.add("url", e.URL)
		}
		if len(e.Headers) > 0 {
			m.add("headers", e.Headers)
		}
		return m
	}
	if d == dialectVSCode || d == dialectJSON {
		m.add("type", "stdio")
	}
	m.add("command", e.Command)
	m.add("args", append([]string{}, e.Args...))
	if len(e.Env) > 0 {
		m.add("env", e.Env)
	}
	return m
}

// orderedObject marshals as a JSON object with its keys in the order added.
type orderedObject struct {
	keys []string
	vals []any
}

func (o *orderedObject) add(k string, v any) { o.keys, o.vals = append(o.keys, k), append(o.vals, v) }

func (o orderedObject) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// removeServer deletes server name from b, a file of dialect d.
func removeServer(b []byte, d toolDialect, name string) ([]byte, error) {
	if d.syntax() == syntaxTOML {
		out, found := removeTOMLServer(b, name)
		if !found {
			return nil, fmt.Errorf("server %q is not written as a [mcp_servers.%s] table: edit it by hand", name, name)
		}
		return out, nil
	}
	out, found, err := deleteJSONMember(b, []string{serversKey(d), name})
	if err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("server %q is not a member of %q: edit it by hand", name, serversKey(d))
	}
	return out, nil
}

// tomlHeader matches a table header line and captures its name.
var tomlHeader = regexp.MustCompile(`^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$`)

// removeTOMLServer deletes the [mcp_servers.NAME] table and its subtables
// ([mcp_servers.NAME.env], …) from a Codex file.
func removeTOMLServer(b []byte, name string) ([]byte, bool) {
	lines := strings.SplitAfter(string(b), "\n")
	var out strings.Builder
	found, inside := false, false
	for _, line := range lines {
		if m := tomlHeader.FindStringSubmatch(line); m != nil {
			inside = tomlUnder(m[1], name)
			found = found || inside
		}
		if !inside {
			out.WriteString(line)
		}
	}
	return []byte(out.String()), found
}

// tomlUnder reports whether the table header h is mcp_servers.NAME or one
// of its subtables, NAME bare or quoted.
func tomlUnder(h, name string) bool {
	rest, ok := strings.CutPrefix(h, "mcp_servers.")
	if !ok {
		return false
	}
	for _, n := range []string{name, strconv.Quote(name), "'" + name + "'"} {
		if rest == n || strings.HasPrefix(rest, n+".") {
			return true
		}
	}
	return false
}

// appendTOMLServer appends server name as Codex's [mcp_servers.NAME].
func appendTOMLServer(b []byte, name string, e Entry) []byte {
	var out bytes.Buffer
	out.Write(b)
	if len(b) > 0 && !bytes.HasSuffix(b, []byte("\n")) {
		out.WriteByte('\n')
	}
	if len(bytes.TrimSpace(b)) > 0 {
		out.WriteByte('\n')
	}
	key := tomlKey(name)
	fmt.Fprintf(&out, "[mcp_servers.%s]\n", key)
	if e.URL != "" {
		fmt.Fprintf(&out, "url = %s\n", strconv.Quote(e.URL))
		writeTOMLTable(&out, "mcp_servers."+key+".http_headers", e.Headers)
		return out.Bytes()
	}
	fmt.Fprintf(&out, "command = %s\n", strconv.Quote(e.Command))
	args := make([]string, len(e.Args))
	for i, a := range e.Args {
		args[i] = strconv.Quote(a)
	}
	fmt.Fprintf(&out, "args = [%s]\n", strings.Join(args, ", "))
	writeTOMLTable(&out, "mcp_servers."+key+".env", e.Env)
	return out.Bytes()
}

func writeTOMLTable(out *bytes.Buffer, table string, kv map[string]string) {
	if len(kv) == 0 {
		return
	}
	fmt.Fprintf(out, "\n[%s]\n", table)
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(out, "%s = %s\n", tomlKey(k), strconv.Quote(kv[k]))
	}
}

// tomlKey is k bare when TOML allows it, quoted otherwise.
func tomlKey(k string) string {
	for _, c := range k {
		if !(c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return strconv.Quote(k)
		}
	}
	return k
}
