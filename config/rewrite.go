package config

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// The agent tools spell some references in ways of their own. Those whose
// value is fixed when the file loads are resolved then; the others are
// rewritten to ${NAME}, so that the host expands every reference the same
// way, when it starts the server (see Expand).

// rewrite applies f to every field of c whose references are expanded,
// headersHelper aside: it is shell text, whose $NAME the shell expands.
func (c *Server) rewrite(f func(string) string) {
	c.Command = f(c.Command)
	for i := range c.Args {
		c.Args[i] = f(c.Args[i])
	}
	for k, v := range c.Env {
		c.Env[k] = f(v)
	}
	c.Cwd = f(c.Cwd)
	c.URL = f(c.URL)
	for k, v := range c.Headers {
		c.Headers[k] = f(v)
	}
	c.APIKey = f(c.APIKey)
	if o := c.OAuth; o != nil {
		for _, p := range []*string{&o.ClientID, &o.ClientSecret, &o.Scopes, &o.AuthServerMetadataURL,
			&o.ClientMetadataURL, &o.GrantType, &o.TokenEndpointAuthMethod, &o.PrivateKey, &o.SigningAlg,
			&o.KeyID, &o.ClientName, &o.IDPTokenEndpoint, &o.IDPClientID, &o.IDPClientSecret, &o.IDToken, &o.Assertion} {
			*p = f(*p)
		}
	}
}

// predefinedVariables resolves VS Code's predefined variables, which
// VS Code and Cursor offer in their files, for a file at path:
// ${workspaceFolder} (see workspaceFolder), ${workspaceFolderBasename},
// ${userHome}, ${pathSeparator} and ${/}. They are fixed for the file,
// so they are resolved when it loads; other references are kept.
func predefinedVariables(path string) (*strings.Replacer, error) {
	ws, err := workspaceFolder(path)
	if err != nil {
		return nil, err
	}
	sep := string(os.PathSeparator)
	pairs := []string{
		"${workspaceFolder}", ws,
		"${workspaceFolderBasename}", filepath.Base(ws),
		"${pathSeparator}", sep,
		"${/}", sep,
	}
	if home, err := os.UserHomeDir(); err == nil {
		pairs = append(pairs, "${userHome}", home)
	}
	return strings.NewReplacer(pairs...), nil
}

// bracketBareVariables rewrites Gemini CLI's $NAME as ${NAME}: Gemini
// CLI expands both spellings in its settings. A '$' followed by anything
// but a letter or '_' stays as written.
func bracketBareVariables(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 >= len(s) || !(s[i+1] == '_' || s[i+1] >= 'a' && s[i+1] <= 'z' || s[i+1] >= 'A' && s[i+1] <= 'Z') {
			b.WriteByte(s[i])
			continue
		}
		end := i + 1
		for end < len(s) && isVarNameByte(s[end]) {
			end++
		}
		b.WriteString("${" + s[i+1:end] + "}")
		i = end - 1
	}
	return b.String()
}

// continueSecret is Continue's reference to a secret or an input:
// ${{ secrets.NAME }}, ${{ inputs.NAME }}.
var continueSecret = regexp.MustCompile(`\$\{\{\s*(?:secrets|inputs)\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)

// continueSecrets rewrites Continue's ${{ secrets.NAME }} (and
// ${{ inputs.NAME }}) as ${NAME}: mcpvisor has no secret store of
// Continue's, so the value comes from the environment variable NAME (or
// the host's own secrets, as any ${NAME}).
func continueSecrets(s string) string {
	if !strings.Contains(s, "${{") {
		return s
	}
	return continueSecret.ReplaceAllStringFunc(s, func(ref string) string {
		return "${" + continueSecret.FindStringSubmatch(ref)[1] + "}"
	})
}

// displayNameToServerName turns one of Continue's display names
// ("Browser search") into a server name ("Browser-search"): every run of
// characters other than letters, digits, '_' and '-' becomes one '-',
// "__" (the namespace separator) becomes '_', and the ends are trimmed of
// '-'. "" when nothing is left.
func displayNameToServerName(display string) string {
	var b strings.Builder
	dash := false
	for i := 0; i < len(display); i++ {
		c := display[i]
		if c == '_' || c == '-' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b.WriteByte(c)
			dash = false
			continue
		}
		if !dash {
			b.WriteByte('-')
			dash = true
		}
	}
	name := b.String()
	for strings.Contains(name, "__") {
		name = strings.ReplaceAll(name, "__", "_")
	}
	return strings.Trim(name, "-")
}
