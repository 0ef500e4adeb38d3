package mcpvisor

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// The server registry lives in the journal and is the source of truth for
// which servers exist. At every start the config file's entries are
// upserted into it (origin config), and config rows the file no longer
// names are removed; rows added by Register (origin api) stay until
// Unregister. SetEnabled is recorded in the row and survives restarts; a
// config row keeps it until the file's entry for the server changes.

// loadRegistry reconciles the registry with the config file, durably, and
// returns the specs to start: the file's servers in its order, then the
// others by the time they were first registered. Specs whose last known
// tools would expose a name twice are refused (ErrNameCollision).
func (h *Host) loadRegistry(ctx context.Context) ([]actors.ServerSpec, error) {
	store := h.journal.Store()
	rows, err := store.Servers()
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	byName := make(map[string]persistence.ServerRecord, len(rows))
	for _, r := range rows {
		byName[r.Name] = r
	}
	var ops []persistence.Op
	var order []string
	now := time.Now()
	if cfg := h.opts.Config; cfg != nil {
		inFile := make(map[string]bool, len(cfg.Servers))
		for _, sc := range cfg.Servers {
			inFile[sc.Name] = true
			order = append(order, sc.Name)
			// A file's literal credentials are kept out of the row as an
			// API entry's are: the journal keeps no secrets.
			sealed, fresh := secrets.Seal(sc)
			if err := h.secrets.UpdateServer(sc.Name, fresh, sealed); err != nil {
				return nil, err
			}
			rec, err := serverRecord(sealed, persistence.OriginConfig, now)
			if err != nil {
				return nil, err
			}
			if old, ok := byName[sc.Name]; ok {
				rec.Created = old.Created
				if old.Origin == persistence.OriginConfig && bytes.Equal(old.Config, rec.Config) {
					if old.EnabledByAPI {
						rec.Enabled, rec.EnabledByAPI = old.Enabled, true
					}
					if rec.Enabled == old.Enabled {
						byName[sc.Name] = old
						continue // unchanged: no write at every start
					}
				}
			}
			byName[sc.Name] = rec
			ops = append(ops, persistence.PutServer(rec))
		}
		for _, r := range rows {
			if r.Origin == persistence.OriginConfig && !inFile[r.Name] {
				delete(byName, r.Name)
				ops = append(ops, persistence.DeleteServer(r.Name),
					lifecycleOp(r.Name, "unregistered", "removed from the config file"))
			}
		}
	}
	if len(ops) > 0 {
		if err := h.journal.Write(ctx, ops...); err != nil {
			return nil, fmt.Errorf("registry: %w", err)
		}
	}
	for _, r := range rows {
		if _, kept := byName[r.Name]; !kept {
			h.rt.ForgetPins(r.Name) // deleted with its row
		}
	}
	// Secrets outlive their row only if a crash fell between the two
	// writes.
	if err := h.secrets.KeepOnly(func(server string) bool {
		_, ok := byName[server]
		return ok
	}, func(server string) bool {
		_, ok := byName[server]
		return ok
	}); err != nil {
		return nil, err
	}
	rest := make([]persistence.ServerRecord, 0, len(byName))
	for name, r := range byName {
		if !slices.Contains(order, name) {
			rest = append(rest, r)
		}
	}
	slices.SortFunc(rest, func(a, b persistence.ServerRecord) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, r := range rest {
		order = append(order, r.Name)
	}

	catalogs, err := store.Catalogs()
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	specs := make([]actors.ServerSpec, 0, len(order))
	for _, name := range order {
		if h.opts.Only != nil && !slices.Contains(h.opts.Only, name) {
			h.authorizeUnstarted(byName[name])
			continue
		}
		rec := byName[name]
		sc, err := recordConfig(rec)
		if err != nil {
			return nil, err
		}
		spec, err := h.resolve(ctx, sc)
		if err != nil {
			if rec.Origin == persistence.OriginConfig {
				return nil, err // the file is being loaded: say what is wrong with it
			}
			// A row from the API that no longer resolves (a variable gone
			// from the environment) must not stop the others: it is listed
			// disabled-unresolved and resolved again when enabled.
			h.opts.Logger.Warn("registry: server cannot start", "server", name, "err", err)
			sc.Enabled = false
			if spec, err = h.resolve(ctx, sc); err != nil {
				return nil, err
			}
		}
		if c, ok := catalogs[name]; ok {
			spec.LastCatalog = actors.ToolsFromRecords(name, c.Tools)
		}
		specs = append(specs, spec)
	}
	// Servers with "prefix": false whose last known tools share a name
	// would each expose it: say so before starting any.
	if err := h.rt.CheckExposure(specs...); err != nil {
		return nil, err
	}
	return specs, nil
}

// serverRecord is sc's registry row.
func serverRecord(sc ServerConfig, origin string, now time.Time) (persistence.ServerRecord, error) {
	cfg, err := json.Marshal(sc)
	if err != nil {
		return persistence.ServerRecord{}, fmt.Errorf("registry: server %q: %w", sc.Name, err)
	}
	t, _ := sc.Transport()
	return persistence.ServerRecord{
		Name: sc.Name, Origin: origin, Enabled: sc.Enabled, Transport: string(t),
		Description: sc.Description, FriendlyName: sc.FriendlyName, Config: cfg,
		Created: now, Updated: now,
	}, nil
}

// recordConfig decodes a registry row back into its config entry.
func recordConfig(rec persistence.ServerRecord) (ServerConfig, error) {
	sc := ServerConfig{Name: rec.Name}
	if err := json.Unmarshal(rec.Config, &sc); err != nil {
		return ServerConfig{}, fmt.Errorf("registry: server %q: stored entry: %w", rec.Name, err)
	}
	sc.Enabled = rec.Enabled
	return sc, nil
}

// putServer upserts sc into the registry with a "registered" history
// record, durably. An API entry's literal credentials go to the secret
// store first, and the row refers to them.
func (h *Host) putServer(ctx context.Context, sc ServerConfig, origin string) error {
	now := time.Now()
	if origin == persistence.OriginAPI {
		sealed, fresh := secrets.Seal(sc)
		if err := h.secrets.UpdateServer(sc.Name, fresh, sealed); err != nil {
			return err
		}
		sc = sealed
	}
	rec, err := serverRecord(sc, origin, now)
	if err != nil {
		return err
	}
	if old, ok, err := h.registryRow(sc.Name); err != nil {
		return err
	} else if ok {
		rec.Created = old.Created
	}
	if err := h.journal.Write(ctx, persistence.PutServer(rec),
		lifecycleOp(sc.Name, "registered", origin)); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// persistEnabled records SetEnabled in the server's row, durably.
func (h *Host) persistEnabled(ctx context.Context, name string, enabled bool) error {
	rec, ok, err := h.registryRow(name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownServer, name)
	}
	rec.Enabled, rec.EnabledByAPI, rec.Updated = enabled, true, time.Now()
	transition := "disabled"
	if enabled {
		transition = "enabled"
	}
	if err := h.journal.Write(ctx, persistence.PutServer(rec), lifecycleOp(name, transition, "")); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

func (h *Host) registryRow(name string) (persistence.ServerRecord, bool, error) {
	r, ok, err := h.journal.Store().Server(name)
	if err != nil {
		return r, false, fmt.Errorf("registry: %w", err)
	}
	return r, ok, nil
}

// lifecycleOp is a history record of a registry change.
func lifecycleOp(server, transition, detail string) persistence.Op {
	return persistence.AppendHistory(persistence.HistoryRecord{
		Time: time.Now(), Kind: persistence.HistoryLifecycle, Server: server,
		Transition: transition, Detail: detail,
	})
}
