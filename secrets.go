package mcpvisor

// The journal keeps no secrets: a server's literal credentials are sealed
// into <data>/secrets.json and its registry row holds references in their
// place (internal/secrets: Seal, Store).

// DerivedKey returns a 32-byte key for purpose derived from the host's
// secret key (Options.SecretKey, else MCPVISOR_SECRET_KEY[_FILE]), or nil
// when the host has none. Hosts with the same secret key derive the same
// keys: a gateway's replicas share their requestState key this way
// (gateway.Options.StateKey). Different purposes give unrelated keys.
func (h *Host) DerivedKey(purpose string) []byte { return h.secrets.DeriveKey(purpose) }

// lookupFor is the variable lookup for server's entry: its own secrets
// for secret references, config inputs (inputs.go) for ${input:ID}, the
// host's environment for the rest.
func (h *Host) lookupFor(server string) func(string) (string, bool) {
	return h.secrets.Resolver(server, h.lookupInput, h.opts.LookupEnv)
}
