package mcpvisor

import (
	"fmt"
	"slices"
	"sync"

	"github.com/mcpvisor/mcpvisor/actors"
)

// Exposure under servers' own names ("prefix": false), and under mapped
// names. The runtime decides for tools (actors/exposure.go): their
// catalogs are known. Prompts are listed on demand, so the host keeps the
// names each server listed last, and the same rules decide: a prompt name
// model APIs would refuse is mapped as a tool's is (actors.NameMap, over
// the server's last listing), and among the enabled unprefixed servers, in
// registration order, the first that lists a (bare) name owns it.

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
		catalogs, err := h.journal.Store().Catalogs()
		if err != nil {
			return fmt.Errorf("registry: %w", err)
		}
		if c, ok := catalogs[spec.Name]; ok {
			spec.LastCatalog = actors.ToolsFromRecords(spec.Name, c.Tools)
		}
	}
	return h.rt.CheckExposure(spec)
}

// promptNames holds the prompt names servers listed last, and the names
// they are exposed by.
type promptNames struct {
	mu       sync.Mutex
	byServer map[string]*listedPrompts
}

// listedPrompts is one server's last prompt listing.
type listedPrompts struct {
	own   map[string]bool
	names *actors.NameMap
}

// exposes reports whether the listing has a prompt whose bare name is
// bare, and its own name.
func (l *listedPrompts) exposes(bare string) (string, bool) {
	if l == nil {
		return "", false
	}
	own := l.names.OwnOfBare(bare)
	return own, l.own[own] && l.names.Bare(own) == bare
}

// set records the prompts server listed, mapped within budget.
func (p *promptNames) set(server string, prompts []Prompt, budget int) {
	l := &listedPrompts{own: make(map[string]bool, len(prompts))}
	own := make([]string, 0, len(prompts))
	for _, pr := range prompts {
		l.own[pr.Name] = true
		own = append(own, pr.Name)
	}
	l.names = actors.MapNames(server, own, budget)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byServer == nil {
		p.byServer = map[string]*listedPrompts{}
	}
	p.byServer[server] = l
}

// naming returns how server's prompt is named: by the server's last
// listing, or, for a prompt it did not list, by its own name alone.
func (p *promptNames) naming(server, prompt string, budget int) *actors.NameMap {
	p.mu.Lock()
	l := p.byServer[server]
	p.mu.Unlock()
	if l != nil && l.own[prompt] {
		return l.names
	}
	return actors.MapNames(server, []string{prompt}, budget)
}

// ownOfPart returns server's own name for the prompt whose namespaced name
// ends in part: part itself when the last listing maps nothing to it.
func (p *promptNames) ownOfPart(server, part string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.byServer[server]; l != nil {
		return l.names.OwnOfPart(part)
	}
	return part
}

// forget drops a server's prompts (it was unregistered).
func (p *promptNames) forget(server string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byServer, server)
}

// owner returns the first of servers (the enabled unprefixed ones, in
// registration order) that listed a prompt exposed bare as bare, and its
// own name for it; "" for none.
func (p *promptNames) owner(servers []string, bare string) (server, own string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, s := range servers {
		if own, ok := p.byServer[s].exposes(bare); ok {
			return s, own
		}
	}
	return "", ""
}

// holders returns those of servers that listed a prompt exposed bare as
// bare, in their order.
func (p *promptNames) holders(servers []string, bare string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, s := range servers {
		if _, ok := p.byServer[s].exposes(bare); ok {
			out = append(out, s)
		}
	}
	return out
}

// notePrompts records the prompts a server listed. For an unprefixed
// server it logs each that cannot be exposed by its own (bare) name: one
// that reads as namespaced, or one that another unprefixed server listed
// too (naming both, and which keeps the name).
func (h *Host) notePrompts(server string, prompts []Prompt) {
	h.prompts.set(server, prompts, h.nameBudget())
	if !h.rt.IsUnprefixed(server) {
		return
	}
	order := h.rt.Unprefixed()
	for _, pr := range prompts {
		names := h.prompts.naming(server, pr.Name, h.nameBudget())
		bare := names.Bare(pr.Name)
		if isNamespaced(bare) {
			h.opts.Logger.Warn(fmt.Sprintf("server %q: prompt %q is not exposed by its own name, which reads as a namespaced name; it is %s",
				server, pr.Name, names.Namespaced(pr.Name)), "server", server, "prompt", pr.Name)
			continue
		}
		holders := h.prompts.holders(order, bare)
		if len(holders) < 2 || !slices.Contains(holders, server) {
			continue
		}
		for _, later := range holders[1:] {
			if later != server && holders[0] != server {
				continue // a collision between two others
			}
			own := h.prompts.ownOf(later, bare)
			full := h.prompts.naming(later, own, h.nameBudget()).Namespaced(own)
			h.opts.Logger.Warn(fmt.Sprintf("prompt %q is exposed without prefix by servers %q and %q: %q, registered earlier, keeps the name; %q's is %s",
				bare, holders[0], later, holders[0], later, full),
				"prompt", bare, "server", later, "owner", holders[0])
		}
	}
}

// ownOf returns server's own name for the prompt it exposes bare as bare.
func (p *promptNames) ownOf(server, bare string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if own, ok := p.byServer[server].exposes(bare); ok {
		return own
	}
	return bare
}

// nameBudget is the budget of exposed names (Options.MaxToolName).
func (h *Host) nameBudget() int { return actors.NameBudget(h.opts.MaxToolName) }
