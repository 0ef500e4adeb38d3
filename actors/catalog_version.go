package actors

// CatalogVersion identifies one catalog a server published: two reads
// give equal versions exactly when the server has not relisted its tools
// in between. The zero value is no catalog.
type CatalogVersion struct{ c *catalog }

// Tools returns a copy of the catalog's tools, all of them: for an
// unprefixed server, also those another server's bare names hide.
func (v CatalogVersion) Tools() []Tool {
	if v.c == nil {
		return nil
	}
	return append([]Tool(nil), v.c.tools...)
}

// ListedCatalogs returns the catalog version of every server whose tools
// Tools lists (enabled, not hidden, and not failed, stopped or disabled).
// It never waits on a server.
func (r *Runtime) ListedCatalogs() map[string]CatalogVersion {
	snap := r.snap.Load()
	out := make(map[string]CatalogVersion, len(snap.order))
	for _, e := range snap.order {
		st := e.status.Load()
		if e.spec.Hidden || st == nil || !st.Enabled || st.State == StateFailed || st.State == StateStopped || st.State == StateDisabled {
			continue
		}
		if c := e.catalog.Load(); c != nil {
			out[e.name] = CatalogVersion{c}
		}
	}
	return out
}

// Lookup returns the catalog's tool the server calls tool.
func (v CatalogVersion) Lookup(tool string) (Tool, bool) {
	t, ok := v.c.lookup(tool)
	if !ok {
		return Tool{}, false
	}
	return *t, true
}
