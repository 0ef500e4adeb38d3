package mcpvisor

import (
	"fmt"
	"slices"
	"sync"

	"github.com/mcpvisor/mcpvisor/internal/actors"
)

// Exposure under servers' own names ("prefix": false). The runtime decides
// for tools (internal/actors/exposure.go): their catalogs are known. Prompts
// are listed on demand, so the host keeps the names each unprefixed server
// listed last, and the same rule decides: among the enabled unprefixed
// servers, in registration order, the first that lists a name owns it.

// checkExposure refuses, with ErrNameCollision, a server whose last known
// tools would be exposed under names another server with "prefix": false
// exposes (or that may not be exposed bare). The runtime's catalog of a
// registered server is the freshest; the journal's is the fallback for one
// it does not run (Options.Only).
func (h *Host) checkExposure(spec actors.ServerSpec) error {
	if !spec.Unprefixed || !spec.Enabled {
		return nil
	}
	if len(spec.LastCatalog) == 0 {
		catalogs, err := h.journal.store.Catalogs()
		if err != nil {
			return fmt.Errorf("registry: %w", err)
		}
		if c, ok := catalogs[spec.Name]; ok {
			spec.LastCatalog = actors.ToolsFromRecords(spec.Name, c.Tools)
		}
	}
	return h.rt.CheckExposure(spec)
}

// promptNames holds the prompt names unprefixed servers listed last.
type promptNames struct {
	mu       sync.Mutex
	byServer map[string]map[string]bool
}

// set records the prompts server listed.
func (p *promptNames) set(server string, prompts []Prompt) {
	names := make(map[string]bool, len(prompts))
	for _, pr := range prompts {
		names[pr.Name] = true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byServer == nil {
		p.byServer = map[string]map[string]bool{}
	}
	p.byServer[server] = names
}

// forget drops a server's prompts (it was unregistered).
func (p *promptNames) forget(server string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byServer, server)
}

// owner returns the first of servers (the enabled unprefixed ones, in
// registration order) that listed prompt, or "".
func (p *promptNames) owner(servers []string, prompt string) string {
	if h := p.holders(servers, prompt); len(h) > 0 {
		return h[0]
	}
	return ""
}

// holders returns those of servers that listed prompt, in their order.
func (p *promptNames) holders(servers []string, prompt string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, s := range servers {
		if p.byServer[s][prompt] {
			out = append(out, s)
		}
	}
	return out
}

// notePrompts records the prompts an unprefixed server listed and logs
// each that cannot be exposed by its own name: one that reads as
// namespaced, or one that another unprefixed server listed too (naming
// both, and which keeps the name).
func (h *Host) notePrompts(server string, prompts []Prompt) {
	if !h.rt.IsUnprefixed(server) {
		return
	}
	h.prompts.set(server, prompts)
	order := h.rt.Unprefixed()
	for _, pr := range prompts {
		if isNamespaced(pr.Name) {
			h.opts.Logger.Warn(fmt.Sprintf("server %q: prompt %q is not exposed by its own name, which reads as a namespaced name; it is %s",
				server, pr.Name, ToolName(server, pr.Name)), "server", server, "prompt", pr.Name)
			continue
		}
		holders := h.prompts.holders(order, pr.Name)
		if len(holders) < 2 || !slices.Contains(holders, server) {
			continue
		}
		for _, later := range holders[1:] {
			if later != server && holders[0] != server {
				continue // a collision between two others
			}
			h.opts.Logger.Warn(fmt.Sprintf("prompt %q is exposed without prefix by servers %q and %q: %q, registered earlier, keeps the name; %q's is %s",
				pr.Name, holders[0], later, holders[0], later, ToolName(later, pr.Name)),
				"prompt", pr.Name, "server", later, "owner", holders[0])
		}
	}
}
