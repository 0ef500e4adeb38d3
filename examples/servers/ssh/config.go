package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Environment variables the server reads at start.
const (
	envAliases       = "SSH_MCP_ALIASES"        // aliases file
	envKnownHosts    = "SSH_MCP_KNOWN_HOSTS"    // known_hosts file
	envPoolTTL       = "SSH_MCP_POOL_TTL"       // idle connection lifetime
	envLoginTTL      = "SSH_MCP_LOGIN_PW_TTL"   // login password / key passphrase cache lifetime
	envSudoTTL       = "SSH_MCP_SUDO_PW_TTL"    // sudo password cache lifetime
	envKeyPassphrase = "SSH_MCP_KEY_PASSPHRASE" // passphrase for encrypted keys, no prompt
)

const defaultTTL = 300 * time.Second

// config is the server's settings, read once from the environment.
type config struct {
	AliasesPath    string
	KnownHostsPath string
	PoolTTL        time.Duration
	LoginTTL       time.Duration
	SudoTTL        time.Duration
	KeyPassphrase  *secret // nil when SSH_MCP_KEY_PASSPHRASE is unset
	Home           string
}

// configFromEnv reads the settings; getenv is os.Getenv outside tests.
func configFromEnv(getenv func(string) string) (config, error) {
	home := getenv("HOME")
	if home == "" {
		home, _ = os.UserHomeDir()
	}
	c := config{Home: home}
	c.AliasesPath = getenv(envAliases)
	if c.AliasesPath == "" {
		base := getenv("XDG_CONFIG_HOME")
		if base == "" {
			base = filepath.Join(home, ".config")
		}
		c.AliasesPath = filepath.Join(base, "mcpvisor", "ssh_aliases.json")
	}
	c.KnownHostsPath = getenv(envKnownHosts)
	if c.KnownHostsPath == "" {
		c.KnownHostsPath = filepath.Join(home, ".ssh", "known_hosts")
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{envPoolTTL, &c.PoolTTL}, {envLoginTTL, &c.LoginTTL}, {envSudoTTL, &c.SudoTTL}} {
		v, err := parseSeconds(getenv(d.name))
		if err != nil {
			return config{}, fmt.Errorf("%s: %w", d.name, err)
		}
		*d.dst = v
	}
	if v := getenv(envKeyPassphrase); v != "" {
		s := newSecret(v)
		c.KeyPassphrase = &s
	}
	return c, nil
}

// parseSeconds reads a duration given as plain seconds ("300", "0.5") or in
// Go syntax ("5m"); "" means the default.
func parseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return defaultTTL, nil
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if f < 0 {
			return 0, fmt.Errorf("negative duration %q", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want seconds, got %q", s)
	}
	if d < 0 {
		return 0, fmt.Errorf("negative duration %q", s)
	}
	return d, nil
}
