package registry

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/flows"
	"github.com/mcpvisor/mcpvisor/supervision"
)

// Specs are how the registry turns an entry into the runtime's spec: the
// host's defaults and what resolution needs of it.
type Specs struct {
	Restart              supervision.RestartPolicy
	StopGrace, TermGrace time.Duration
	MaxFrame             int // 0: the runtime's
	Environ              []string
	// Lookup is the variable lookup of server's entry (its secrets, the
	// config inputs' answers, the environment); nil: none.
	Lookup func(server string) func(string) (string, bool)
	// Inputs are the config inputs: an entry whose inputs wait for a
	// person is a disabled placeholder until they are answered; nil: no
	// inputs are resolved.
	Inputs *flows.Inputs[config.Server]
	// Authorize gives a remote server its authorizer (OAuth); nil: none.
	Authorize func(spec *actors.ServerSpec, perUser bool) error
}

// Resolve validates sc and turns it into the runtime's spec, with the
// host's defaults applied. An enabled sc whose config inputs wait for a
// person's answer is a disabled placeholder (flows.Inputs); a disabled sc
// whose variables this environment lacks is listed as it is, and resolved
// again when enabled (Unresolved).
func (r *Registry) Resolve(ctx context.Context, sc config.Server) (actors.ServerSpec, error) {
	return r.resolve(ctx, sc, false)
}

// ResolveFile is Resolve for an entry of the config file. An enabled entry
// that references a variable this environment lacks does not fail: the
// environment, not the file, is wrong, and the file's other servers must
// run. Its spec is enabled and Unstartable with the error that names the
// server, the field and the variable (the runtime lists it failed), and
// it is resolved again when enabled again (Unresolved).
func (r *Registry) ResolveFile(ctx context.Context, sc config.Server) (actors.ServerSpec, error) {
	return r.resolve(ctx, sc, true)
}

func (r *Registry) resolve(ctx context.Context, sc config.Server, file bool) (actors.ServerSpec, error) {
	if err := sc.Validate(); err != nil {
		return actors.ServerSpec{}, err
	}
	if r.specs.Inputs != nil {
		raw, _ := json.Marshal(sc)
		waiting, err := r.specs.Inputs.Resolve(ctx, sc.Name, sc, sc.Enabled, raw)
		if err != nil {
			return actors.ServerSpec{}, err
		}
		if waiting {
			r.Forget(sc.Name)
			return Placeholder(sc), nil
		}
	}
	var lookup func(string) (string, bool)
	if r.specs.Lookup != nil {
		lookup = r.specs.Lookup(sc.Name)
	}
	spec, err := actors.SpecOf(sc, lookup, r.specs.Environ)
	if err != nil && sc.Enabled && !file {
		return actors.ServerSpec{}, err
	}
	r.mu.Lock()
	delete(r.unresolved, sc.Name)
	if err != nil {
		r.unresolved[sc.Name] = sc
		spec = Placeholder(sc)
		if sc.Enabled {
			spec.Enabled, spec.Unstartable = true, err
		}
	}
	r.mu.Unlock()
	if sc.ValidateArguments {
		r.validate.Store(sc.Name, true)
	} else {
		r.validate.Delete(sc.Name)
	}
	spec.Restart = r.specs.Restart
	spec.StopGrace, spec.TermGrace = r.specs.StopGrace, r.specs.TermGrace
	if r.specs.MaxFrame > 0 {
		spec.MaxFrame = r.specs.MaxFrame
	}
	if r.specs.Authorize != nil {
		if err := r.specs.Authorize(&spec, sc.OAuth != nil && sc.OAuth.PerUser); err != nil {
			return actors.ServerSpec{}, err
		}
	}
	return spec, nil
}

// Placeholder is the disabled spec that stands for sc while it cannot
// start: its inputs unanswered, or its variables unresolved (ResolveFile
// enables it, Unstartable).
func Placeholder(sc config.Server) actors.ServerSpec {
	return actors.ServerSpec{Name: sc.Name, Transport: actors.Transport(sc.Type),
		Description: sc.Description, FriendlyName: sc.FriendlyName}
}

// Unresolved is the entry of a disabled server whose variables could not
// be resolved when it was registered: enabling it resolves it again.
func (r *Registry) Unresolved(name string) (config.Server, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	sc, ok := r.unresolved[name]
	return sc, ok
}

// Forget drops what the registry holds of name beside its row.
func (r *Registry) Forget(name string) {
	r.mu.Lock()
	delete(r.unresolved, name)
	r.mu.Unlock()
}

// Validates reports whether server's tool arguments are checked against
// their inputSchema (validateArguments).
func (r *Registry) Validates(server string) bool {
	_, ok := r.validate.Load(server)
	return ok
}
