package mcpvisor

import (
	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
)

// The configuration a host runs from is declared in package config: the
// file formats, the entries and their validation. These names keep the
// root package's API as embedders know it.
type (
	// Config is one configuration file (config.Config).
	Config = config.Config
	// ConfigInput is one of VS Code's "inputs" (config.Input).
	ConfigInput = config.Input
	// ServerConfig is one server entry as written in the file
	// (config.Server).
	ServerConfig = config.Server
	// OAuthConfig is an http or sse server's "oauth" object
	// (config.OAuth).
	OAuthConfig = config.OAuth
	// ServerLimits bound a stdio server's resources (config.Limits).
	ServerLimits = config.Limits
	// Duration is a duration as written in a configuration file
	// (config.Duration).
	Duration = config.Duration
)

// MinTimeout is the shortest "timeout", "startupTimeout" and
// "maxTotalTimeout" a server may have (config.MinTimeout).
const MinTimeout = config.MinTimeout

// LoadConfig reads and parses the configuration file at path, checking its
// references against the process environment: config.Load.
func LoadConfig(path string) (*Config, error) { return config.Load(path) }

// LoadConfigs loads every file of paths, in order, and merges them:
// config.LoadAll.
func LoadConfigs(paths ...string) (*Config, error) { return config.LoadAll(paths...) }

// MergeConfigs merges configurations loaded from several files into one,
// a later file's server replacing an earlier one's: config.Merge.
func MergeConfigs(cfgs ...*Config) *Config { return config.Merge(cfgs...) }

// ParseConfig parses a configuration file's contents, given without a
// file name, as JSON, checking its references against the process
// environment: config.Parse with no Options.
func ParseConfig(data []byte) (*Config, error) { return config.Parse(data, config.Options{}) }

// serverSpec resolves sc for the runtime with lookup and the host's
// environ: actors.SpecOf.
func serverSpec(sc ServerConfig, lookup func(string) (string, bool), environ []string) (actors.ServerSpec, error) {
	return actors.SpecOf(sc, lookup, environ)
}
