package config

import (
	"fmt"
	"maps"
	"slices"
	"time"
)

// codexSpellings are fields of the common format that Codex's
// config.toml spells otherwise. Written in a Codex file they are ignored,
// as Codex ignores them, with a warning that gives Codex's spelling.
var codexSpellings = map[string]string{
	"type":           `Codex tells the transport from "command" or "url"`,
	"headers":        `Codex's config.toml spells it "http_headers"`,
	"timeout":        `Codex's config.toml spells it "tool_timeout_sec", in seconds`,
	"startupTimeout": `Codex's config.toml spells it "startup_timeout_sec", in seconds`,
	"includeTools":   `Codex's config.toml spells it "enabled_tools"`,
	"excludeTools":   `Codex's config.toml spells it "disabled_tools"`,
	"disabledTools":  `Codex's config.toml spells it "disabled_tools"`,
	"disabled":       `Codex's config.toml has "enabled"`,
	"httpUrl":        `Codex's config.toml spells it "url"`,
	"serverUrl":      `Codex's config.toml spells it "url"`,
	"apiKey":         `Codex's config.toml names the variable holding the token in "bearer_token_env_var"`,
	"api_key":        `Codex's config.toml names the variable holding the token in "bearer_token_env_var"`,
	"envFile":        `Codex's config.toml has "env" and "env_vars"`,
}

// codexFields are the fields of a Codex entry that are resolved once
// the whole entry is read.
type codexFields struct {
	bearerTokenVar string
	bearerGiven    bool
	httpHeaders    map[string]string
	envHTTPHeaders map[string]string
	envVars        []string
	startupSec     *Duration
	startupMillis  *Duration
	scopes         string
	scopesGiven    bool
	oauthClientID  string
}

// codexField decodes a field of Codex's [mcp_servers.NAME] table that
// the common format spells otherwise, and reports whether it handled m.
// command, args, env, cwd, url and enabled are the common fields.
func (x *entryDecoder) codexField(m jsonMember) bool {
	sc := &x.e.Server
	c := &x.codex
	switch m.key {
	case "env_vars":
		x.codexEnvVars(m)
	case "http_headers":
		h, err := decodeMapField(sc, m)
		x.fail(err)
		c.httpHeaders = h
	case "env_http_headers":
		h, err := decodeMapField(sc, m)
		x.fail(err)
		for _, k := range slices.Sorted(maps.Keys(h)) {
			if !isVarName(h[k]) {
				x.fail(sc.errorf(m.key+"."+k, "want the name of an environment variable, got %q", h[k]))
				delete(h, k)
			}
		}
		c.envHTTPHeaders = h
	case "bearer_token_env_var":
		if err := decodeStringField(sc, m, &c.bearerTokenVar); err != nil {
			x.fail(err)
		} else if !isVarName(c.bearerTokenVar) {
			x.fail(sc.errorf(m.key, "want the name of an environment variable, got %q", c.bearerTokenVar))
		} else {
			c.bearerGiven = true
		}
	case "startup_timeout_sec":
		var d Duration
		if err := decodeTimeoutField(sc, m, &d, time.Second); err != nil {
			x.fail(err)
		} else {
			c.startupSec = &d
		}
	case "startup_timeout_ms":
		var d Duration
		if err := decodeTimeoutField(sc, m, &d, time.Millisecond); err != nil {
			x.fail(err)
		} else {
			c.startupMillis = &d
		}
	case "tool_timeout_sec":
		x.fail(decodeTimeoutField(sc, m, &sc.Timeout, time.Second))
	case "enabled_tools":
		var err *Error
		sc.IncludeTools, err = decodeStringsField(sc, m)
		x.fail(err)
	case "disabled_tools":
		var err *Error
		sc.ExcludeTools, err = decodeStringsField(sc, m)
		x.fail(err)
	case "scopes":
		s, err := decodeScopes(sc, m)
		x.fail(err)
		c.scopes, c.scopesGiven = s, err == nil
	case "oauth":
		if kind := jsonKind(m.value); kind != "an object" {
			x.fail(sc.errorf(m.key, "want a table, got %s", kind))
			return true
		}
		for _, f := range objectMembers(m.value) {
			field := jsonMember{"oauth." + f.key, f.value}
			if f.key == "client_id" {
				x.fail(decodeStringField(sc, field, &c.oauthClientID))
				continue
			}
			x.warn(fmt.Sprintf("unknown field %q ignored", field.key))
		}
	case "name":
		// Codex's legacy display name; the table's key names the server.
	default:
		return false
	}
	return true
}

// codexEnvVars decodes "env_vars": names of variables passed from the
// environment, each a string or a table {name, source}.
func (x *entryDecoder) codexEnvVars(m jsonMember) {
	sc := &x.e.Server
	if kind := jsonKind(m.value); kind != "an array" {
		x.fail(sc.errorf(m.key, "want an array of variable names, got %s", kind))
		return
	}
	var elems []jsonMember
	for i, e := range arrayElements(m.value) {
		elems = append(elems, jsonMember{fmt.Sprintf("%s[%d]", m.key, i), e})
	}
	for _, e := range elems {
		var name string
		switch jsonKind(e.value) {
		case "an object":
			var source string
			for _, f := range objectMembers(e.value) {
				field := jsonMember{e.key + "." + f.key, f.value}
				switch f.key {
				case "name":
					x.fail(decodeStringField(sc, field, &name))
				case "source":
					x.fail(decodeStringField(sc, field, &source))
				default:
					x.warn(fmt.Sprintf("unknown field %q ignored", field.key))
				}
			}
			switch source {
			case "", "local":
			case "remote":
				x.warn(fmt.Sprintf(`field %q: source "remote" is not supported by mcpvisor, ignored: %s is read from mcpvisor's environment`, e.key, name))
			default:
				x.fail(sc.errorf(e.key+".source", `want "local" or "remote", got %q`, source))
			}
		default:
			if err := decodeStringField(sc, e, &name); err != nil {
				x.fail(err)
				continue
			}
		}
		if !isVarName(name) {
			x.fail(sc.errorf(e.key, "want the name of an environment variable, got %q", name))
			continue
		}
		x.codex.envVars = append(x.codex.envVars, name)
	}
}

// apply turns the Codex fields into the common ones, once every field
// is read.
func (c *codexFields) apply(x *entryDecoder) {
	sc := &x.e.Server
	switch {
	case c.startupSec != nil: // Codex prefers the seconds when both are given
		sc.StartupTimeout = *c.startupSec
	case c.startupMillis != nil:
		sc.StartupTimeout = *c.startupMillis
	}

	sc.Headers = mergeMap(sc.Headers, c.httpHeaders)
	for _, k := range slices.Sorted(maps.Keys(c.envHTTPHeaders)) {
		if HasHeader(c.httpHeaders, k) {
			x.fail(sc.errorf("env_http_headers."+k, `%s is also in "http_headers"; give it once`, k))
			continue
		}
		sc.Headers = mergeMap(sc.Headers, map[string]string{k: "${" + c.envHTTPHeaders[k] + "}"})
	}
	if c.bearerGiven {
		if HasHeader(sc.Headers, "Authorization") {
			x.fail(sc.errorf("bearer_token_env_var", "cannot be combined with an Authorization header; give one"))
		} else {
			sc.Headers = mergeMap(sc.Headers, map[string]string{"Authorization": "Bearer ${" + c.bearerTokenVar + "}"})
		}
	}

	// env_vars passes variables through: an unset one is passed empty,
	// since ${NAME:-} has a default; "env" gives a value of its own.
	for _, name := range c.envVars {
		if _, ok := sc.Env[name]; !ok {
			sc.Env = mergeMap(sc.Env, map[string]string{name: "${" + name + ":-}"})
		}
	}

	if c.scopesGiven || c.oauthClientID != "" {
		if sc.OAuth == nil {
			sc.OAuth = &OAuth{}
		}
		sc.OAuth.Scopes, sc.OAuth.ClientID = c.scopes, c.oauthClientID
	}
}
