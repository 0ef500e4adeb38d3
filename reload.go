package mcpvisor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/member"
)

// Reloaded is what Reload changed, by server name.
type Reloaded struct {
	Added, Changed, Removed, Unchanged []string
}

// Reload applies the config file read again while the host runs, as a
// restart would apply it, without one: a server the file adds is
// registered and started, one whose entry changed is replaced (its
// process restarted), one the file no longer names is unregistered (its
// process stopped); an unchanged entry is not touched, nor is a server
// the API or a model registered, nor an enable or disable made through
// the API. Every entry is resolved first: a file with an error changes
// nothing, and the error names the server and the field. An entry whose
// variable this environment lacks is applied all the same, as a server
// that cannot start (failed, its error naming the variable).
func (h *Host) Reload(ctx context.Context, cfg *Config) (Reloaded, error) {
	var r Reloaded
	if cfg == nil {
		return r, errors.New("reload: no config")
	}
	type change struct {
		sc    ServerConfig
		spec  actors.ServerSpec
		added bool
	}
	var changes []change
	inFile := make(map[string]bool, len(cfg.Servers))
	for _, sc := range cfg.Servers {
		inFile[sc.Name] = true
		same, err := h.reg.SameFileEntry(sc)
		if err != nil {
			return r, fmt.Errorf("reload: %w", err)
		}
		if same {
			r.Unchanged = append(r.Unchanged, sc.Name)
			continue
		}
		spec, err := h.reg.ResolveFile(ctx, sc)
		if err != nil {
			return r, fmt.Errorf("reload: %w", err)
		}
		spec.OwnFile = true
		if err := h.checkExposure(spec); err != nil {
			return r, fmt.Errorf("reload: %w", err)
		}
		_, known, err := h.reg.Row(sc.Name)
		if err != nil {
			return r, fmt.Errorf("reload: %w", err)
		}
		changes = append(changes, change{sc: sc, spec: spec, added: !known})
	}
	fileServers, err := h.reg.FileServers()
	if err != nil {
		return r, fmt.Errorf("reload: %w", err)
	}
	for _, c := range changes {
		if err := h.reg.PutFile(ctx, c.sc); err != nil {
			return r, fmt.Errorf("reload: %w", err)
		}
		if err := h.rt.Register(ctx, c.spec); err != nil {
			return r, fmt.Errorf("reload: server %q: %w", c.sc.Name, err)
		}
		if rep := h.replicating(ctx); rep != nil {
			sc := c.sc
			rep.ServerChanged(member.ServerChange{Name: sc.Name, Config: &sc, Enabled: sc.Enabled, Provenance: provenance(ctx)})
		}
		if c.added {
			r.Added = append(r.Added, c.sc.Name)
		} else {
			r.Changed = append(r.Changed, c.sc.Name)
		}
	}
	for _, name := range fileServers {
		if inFile[name] {
			continue
		}
		if err := h.Unregister(ctx, name); err != nil {
			return r, fmt.Errorf("reload: removing server %q: %w", name, err)
		}
		r.Removed = append(r.Removed, name)
	}
	if len(changes) > 0 {
		h.inputs.AskAll(h.bg)
	}
	slices.Sort(r.Removed)
	return r, nil
}
