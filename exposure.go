package mcpvisor

import (
	"fmt"

	"github.com/mcpvisor/mcpvisor/actors"
)

// Exposure under servers' own names ("prefix": false), and under mapped
// names. The runtime decides for tools (actors/exposure.go): their
// catalogs are known. Prompts are listed on demand, so the host records
// each listing in its naming table (actors.PromptNames), where the same
// rules decide.

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

// notePrompts records the prompts a server listed, and logs those of an
// unprefixed server that cannot be exposed by their own names
// (actors.PromptNames.Note).
func (h *Host) notePrompts(server string, prompts []Prompt) {
	own := make([]string, 0, len(prompts))
	for _, pr := range prompts {
		own = append(own, pr.Name)
	}
	h.prompts.Note(server, own, h.rt.IsUnprefixed(server), h.rt.Unprefixed(), h.nameBudget(), h.opts.Logger)
}

// nameBudget is the budget of exposed names (Options.MaxToolName).
func (h *Host) nameBudget() int { return actors.NameBudget(h.opts.MaxToolName) }
