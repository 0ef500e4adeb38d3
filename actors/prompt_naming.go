package actors

import (
	"fmt"
	"log/slog"
	"slices"
	"sync"
)

// PromptNames is the naming table of prompts: the prompt names each server
// listed last, and the names they are exposed by. The runtime decides
// exposure for tools (exposure.go), whose catalogs it holds; prompts are
// listed on demand, through the host, so the host records each listing
// here and the same rules decide: a prompt name model APIs would refuse is
// mapped as a tool's is (NameMap, over the server's last listing), and
// among the enabled unprefixed servers, in registration order, the first
// that lists a (bare) name owns it.
//
// The zero PromptNames is empty and ready; it is safe for concurrent use.
// Its methods take the order of the enabled unprefixed servers
// (Runtime.Unprefixed) and whether a server is unprefixed
// (Runtime.IsUnprefixed) from the caller, so that the table holds nothing
// the runtime owns.
type PromptNames struct {
	mu       sync.Mutex
	byServer map[string]*listedPrompts
}

// listedPrompts is one server's last prompt listing.
type listedPrompts struct {
	own   map[string]bool
	names *NameMap
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
func (p *PromptNames) set(server string, prompts []string, budget int) {
	l := &listedPrompts{own: make(map[string]bool, len(prompts))}
	for _, pr := range prompts {
		l.own[pr] = true
	}
	l.names = MapNames(server, slices.Clone(prompts), budget)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byServer == nil {
		p.byServer = map[string]*listedPrompts{}
	}
	p.byServer[server] = l
}

// naming returns how server's prompt is named: by the server's last
// listing, or, for a prompt it did not list, by its own name alone.
func (p *PromptNames) naming(server, prompt string, budget int) *NameMap {
	p.mu.Lock()
	l := p.byServer[server]
	p.mu.Unlock()
	if l != nil && l.own[prompt] {
		return l.names
	}
	return MapNames(server, []string{prompt}, budget)
}

// ownOfPart returns server's own name for the prompt whose namespaced name
// ends in part: part itself when the last listing maps nothing to it.
func (p *PromptNames) ownOfPart(server, part string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if l := p.byServer[server]; l != nil {
		return l.names.OwnOfPart(part)
	}
	return part
}

// Forget drops a server's prompts: it was unregistered, and a server
// registered again under its name starts with no listing.
func (p *PromptNames) Forget(server string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.byServer, server)
}

// owner returns the first of servers (the enabled unprefixed ones, in
// registration order) that listed a prompt exposed bare as bare, and its
// own name for it; "" for none.
func (p *PromptNames) owner(servers []string, bare string) (server, own string) {
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
func (p *PromptNames) holders(servers []string, bare string) []string {
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

// ownOf returns server's own name for the prompt it exposes bare as bare.
func (p *PromptNames) ownOf(server, bare string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if own, ok := p.byServer[server].exposes(bare); ok {
		return own
	}
	return bare
}

// Note records the prompts (their own names) server listed, mapped within
// budget (NameBudget). For an unprefixed server it logs to log each that
// cannot be exposed by its own (bare) name: one that reads as namespaced,
// or one that another of order (the enabled unprefixed servers, in
// registration order) listed too, naming both and which keeps the name,
// so that an operator learns why a prompt is not where the file put it.
func (p *PromptNames) Note(server string, prompts []string, unprefixed bool, order []string, budget int, log *slog.Logger) {
	p.set(server, prompts, budget)
	if !unprefixed {
		return
	}
	for _, pr := range prompts {
		names := p.naming(server, pr, budget)
		bare := names.Bare(pr)
		if isNamespaced(bare) {
			log.Warn(fmt.Sprintf("server %q: prompt %q is not exposed by its own name, which reads as a namespaced name; it is %s",
				server, pr, names.Namespaced(pr)), "server", server, "prompt", pr)
			continue
		}
		holders := p.holders(order, bare)
		if len(holders) < 2 || !slices.Contains(holders, server) {
			continue
		}
		for _, later := range holders[1:] {
			if later != server && holders[0] != server {
				continue // a collision between two others
			}
			own := p.ownOf(later, bare)
			full := p.naming(later, own, budget).Namespaced(own)
			log.Warn(fmt.Sprintf("prompt %q is exposed without prefix by servers %q and %q: %q, registered earlier, keeps the name; %q's is %s",
				bare, holders[0], later, holders[0], later, full),
				"prompt", bare, "server", later, "owner", holders[0])
		}
	}
}

// Name is the name server's prompt is exposed under: the prompt's own
// name for an unprefixed server, else mcp__<server>__<prompt>, each mapped
// as tool names are (NameMap, within budget) over the server's last
// listing. An unprefixed server's prompt keeps the namespaced name when
// its bare one reads as mcp__<x>__<y>, or when a server before it in
// order (the enabled unprefixed servers, in registration order) listed a
// prompt of that bare name: the name belongs to that server then.
func (p *PromptNames) Name(server, prompt string, unprefixed bool, order []string, budget int) string {
	names := p.naming(server, prompt, budget)
	if !unprefixed {
		return names.Namespaced(prompt)
	}
	bare := names.Bare(prompt)
	if isNamespaced(bare) {
		return names.Namespaced(prompt)
	}
	if owner, _ := p.owner(order, bare); owner != "" && owner != server {
		return names.Namespaced(prompt)
	}
	return bare
}

// Resolve returns the server of an exposed prompt name and the server's
// own name for the prompt: mcp__<server>__<prompt> of a server known
// reports registered (with the name Name gives, or the prompt's own), or a
// bare name as Name gives it to one of order (the enabled unprefixed
// servers, in registration order), once its prompts were noted. ok is
// false for any other name.
func (p *PromptNames) Resolve(name string, known func(server string) bool, order []string) (server, prompt string, ok bool) {
	if server, part, ok := SplitToolName(name); ok {
		if !known(server) {
			return "", "", false
		}
		return server, p.ownOfPart(server, part), true
	}
	if owner, own := p.owner(order, name); owner != "" {
		return owner, own, true
	}
	return "", "", false
}

func isNamespaced(name string) bool {
	_, _, ok := SplitToolName(name)
	return ok
}
