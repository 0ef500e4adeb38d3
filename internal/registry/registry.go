// Package registry keeps the host's server registry: the journal's rows
// that say which servers exist, reconciled at every start with the config
// file and changed at run time by registration and SetEnabled.
//
// The registry lives in the journal and is the source of truth for which
// servers exist. At every start the config file's entries are upserted
// into it (origin config), and config rows the file no longer names are
// removed; rows added by registration (origin api) stay until they are
// unregistered. SetEnabled is recorded in the row and survives restarts;
// a config row keeps it until the file's entry for the server changes.
//
// It works against Host, the few operations of the root package it needs
// (its secret store, resolving an entry into the runtime's spec), so that
// the root stays a facade and this logic is testable on its own.
package registry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/secrets"
	"github.com/mcpvisor/mcpvisor/persistence"
)

// Registry is the registry over one host's journal and runtime: its rows
// are the journal's; it holds what resolving an entry learnt (Unresolved,
// Validates).
type Registry struct {
	journal *actors.Journal
	secrets *secrets.Store // a server's literal credentials: the journal keeps none
	rt      *actors.Runtime
	specs   Specs
	logger  *slog.Logger

	mu         sync.Mutex
	unresolved map[string]config.Server // Unresolved
	validate   sync.Map                 // server name → true: validateArguments
}

// New returns the registry kept in j for the servers of rt, their
// credentials in s, entries resolved with specs.
func New(j *actors.Journal, s *secrets.Store, rt *actors.Runtime, specs Specs, logger *slog.Logger) *Registry {
	if logger == nil {
		logger = slog.Default()
	}
	return &Registry{journal: j, secrets: s, rt: rt, specs: specs, logger: logger, unresolved: map[string]config.Server{}}
}

// Load reconciles the registry with the config file cfg (nil: none),
// durably, and returns the specs to start: the file's servers in its
// order, then the others by the time they were first registered, less
// those only (when not nil) does not name. Specs whose last known tools
// would expose a name twice are refused (actors.ErrNameCollision).
func (r *Registry) Load(ctx context.Context, cfg *config.Config, only []string) ([]actors.ServerSpec, error) {
	store := r.journal.Store()
	rows, err := store.Servers()
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	byName := make(map[string]persistence.ServerRecord, len(rows))
	for _, row := range rows {
		byName[row.Name] = row
	}
	var ops []persistence.Op
	var order []string
	now := time.Now()
	if cfg != nil {
		inFile := make(map[string]bool, len(cfg.Servers))
		for _, sc := range cfg.Servers {
			inFile[sc.Name] = true
			order = append(order, sc.Name)
			// A file's literal credentials are kept out of the row as an
			// API entry's are: the journal keeps no secrets.
			sealed, err := r.seal(sc)
			if err != nil {
				return nil, err
			}
			rec, err := Record(sealed, persistence.OriginConfig, now)
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
		for _, row := range rows {
			if row.Origin == persistence.OriginConfig && !inFile[row.Name] {
				delete(byName, row.Name)
				ops = append(ops, persistence.DeleteServer(row.Name),
					LifecycleOp(row.Name, "unregistered", "removed from the config file"))
			}
		}
	}
	if len(ops) > 0 {
		err := r.journal.Write(ctx, ops...)
		switch {
		case errors.Is(err, persistence.ErrDiskFull):
			// Start all the same, from the file: the rows are reconciled
			// again at the next start. A host that refused to start on a
			// full disk would be a crash loop.
			r.logger.Warn("registry: the config file's servers are not journaled: the journal is read-only", "err", err)
		case err != nil:
			return nil, fmt.Errorf("registry: %w", err)
		}
	}
	for _, row := range rows {
		if _, kept := byName[row.Name]; !kept {
			r.rt.ForgetPins(row.Name) // deleted with its row
		}
	}
	// Secrets outlive their row only if a crash fell between the two
	// writes.
	if err := r.keepSecrets(func(server string) bool {
		_, ok := byName[server]
		return ok
	}); err != nil {
		return nil, err
	}
	rest := make([]persistence.ServerRecord, 0, len(byName))
	for name, row := range byName {
		if !slices.Contains(order, name) {
			rest = append(rest, row)
		}
	}
	slices.SortFunc(rest, func(a, b persistence.ServerRecord) int {
		if c := a.Created.Compare(b.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	for _, row := range rest {
		order = append(order, row.Name)
	}

	catalogs, err := store.Catalogs()
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	specs := make([]actors.ServerSpec, 0, len(order))
	for _, name := range order {
		if only != nil && !slices.Contains(only, name) {
			r.authorizeUnstarted(byName[name])
			continue
		}
		rec := byName[name]
		sc, err := Config(rec)
		if err != nil {
			return nil, err
		}
		resolve := r.Resolve
		if rec.Origin == persistence.OriginConfig {
			resolve = r.ResolveFile
		}
		spec, err := resolve(ctx, sc)
		spec.OwnFile = rec.Origin == persistence.OriginConfig
		if err != nil {
			if rec.Origin == persistence.OriginConfig {
				return nil, err // the file is being loaded: say what is wrong with it
			}
			// A row from the API that no longer resolves (a variable gone
			// from the environment) must not stop the others: it is listed
			// disabled-unresolved and resolved again when enabled.
			r.logger.Warn("registry: server cannot start", "server", name, "err", err)
			sc.Enabled = false
			if spec, err = r.Resolve(ctx, sc); err != nil {
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
	if err := r.rt.CheckExposure(specs...); err != nil {
		return nil, err
	}
	return specs, nil
}

// Put upserts sc into the registry with a "registered" history record,
// durably. An API entry's literal credentials go to the secret store
// first, and the row refers to them.
func (r *Registry) Put(ctx context.Context, sc config.Server, origin string) error {
	now := time.Now()
	if origin == persistence.OriginAPI {
		sealed, err := r.seal(sc)
		if err != nil {
			return err
		}
		sc = sealed
	}
	rec, err := Record(sc, origin, now)
	if err != nil {
		return err
	}
	if old, ok, err := r.Row(sc.Name); err != nil {
		return err
	} else if ok {
		rec.Created = old.Created
	}
	if err := r.journal.Write(ctx, persistence.PutServer(rec),
		LifecycleOp(sc.Name, "registered", origin)); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// SameFileEntry reports whether sc, an entry of the config file, is the
// row the file last wrote (Load, PutFile), an enable or disable through
// the API aside: the server need not change when the file is read again.
func (r *Registry) SameFileEntry(sc config.Server) (bool, error) {
	row, ok, err := r.Row(sc.Name)
	if err != nil || !ok || row.Origin != persistence.OriginConfig {
		return false, err
	}
	sealed, fresh := secrets.Seal(sc)
	rec, err := Record(sealed, persistence.OriginConfig, time.Time{})
	if err != nil {
		return false, err
	}
	// A credential the file changed leaves the row as it was: the
	// secret store holds what changed.
	for name, v := range fresh {
		if old, ok := r.secrets.Lookup(sc.Name, name); !ok || old != v {
			return false, nil
		}
	}
	return bytes.Equal(row.Config, rec.Config) && (row.EnabledByAPI || row.Enabled == rec.Enabled), nil
}

// PutFile is Put of a config file's entry read again while the host runs:
// its literal credentials sealed, as Load seals them.
func (r *Registry) PutFile(ctx context.Context, sc config.Server) error {
	sealed, err := r.seal(sc)
	if err != nil {
		return err
	}
	return r.Put(ctx, sealed, persistence.OriginConfig)
}

// FileServers are the names of the servers whose rows the config file
// wrote.
func (r *Registry) FileServers() ([]string, error) {
	rows, err := r.journal.Store().Servers()
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	var names []string
	for _, row := range rows {
		if row.Origin == persistence.OriginConfig {
			names = append(names, row.Name)
		}
	}
	return names, nil
}

// SetEnabled records an enable or disable in the server's row, durably,
// marked as the API's so that a config row keeps it across restarts.
func (r *Registry) SetEnabled(ctx context.Context, name string, enabled bool) error {
	rec, ok, err := r.Row(name)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %q", actors.ErrUnknownServer, name)
	}
	rec.Enabled, rec.EnabledByAPI, rec.Updated = enabled, true, time.Now()
	transition := "disabled"
	if enabled {
		transition = "enabled"
	}
	if err := r.journal.Write(ctx, persistence.PutServer(rec), LifecycleOp(name, transition, "")); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// Delete removes the server's row with an "unregistered" history record,
// durably.
func (r *Registry) Delete(ctx context.Context, name string) error {
	if err := r.journal.Write(ctx, persistence.DeleteServer(name),
		LifecycleOp(name, "unregistered", "")); err != nil {
		return fmt.Errorf("registry: %w", err)
	}
	return nil
}

// Row returns the server's registry row, and whether there is one.
func (r *Registry) Row(name string) (persistence.ServerRecord, bool, error) {
	rec, ok, err := r.journal.Store().Server(name)
	if err != nil {
		return rec, false, fmt.Errorf("registry: %w", err)
	}
	return rec, ok, nil
}

// Record is sc's registry row, as of now.
func Record(sc config.Server, origin string, now time.Time) (persistence.ServerRecord, error) {
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

// Config decodes a registry row back into its config entry, with the
// row's enabled flag (which SetEnabled changes without the entry).
func Config(rec persistence.ServerRecord) (config.Server, error) {
	sc := config.Server{Name: rec.Name}
	if err := json.Unmarshal(rec.Config, &sc); err != nil {
		return config.Server{}, fmt.Errorf("registry: server %q: stored entry: %w", rec.Name, err)
	}
	sc.Enabled = rec.Enabled
	return sc, nil
}

// LifecycleOp is a history record of a registry change.
func LifecycleOp(server, transition, detail string) persistence.Op {
	return persistence.AppendHistory(persistence.HistoryRecord{
		Time: time.Now(), Kind: persistence.HistoryLifecycle, Server: server,
		Transition: transition, Detail: detail,
	})
}

// seal moves sc's literal credentials to the secret store and returns the
// entry that refers to them.
func (r *Registry) seal(sc config.Server) (config.Server, error) {
	sealed, fresh := secrets.Seal(sc)
	if err := r.secrets.UpdateServer(sc.Name, fresh, sealed); err != nil {
		return config.Server{}, err
	}
	return sealed, nil
}

// keepSecrets drops the secrets (sealed and OAuth) of every server keep
// rejects.
func (r *Registry) keepSecrets(keep func(server string) bool) error {
	return r.secrets.KeepOnly(keep, keep)
}

// authorizeUnstarted gives a server that Load leaves unstarted (not in its
// only list) its authorizer, so that its sign-in can still be shown and
// changed (auth status, auth logout) without starting it.
func (r *Registry) authorizeUnstarted(rec persistence.ServerRecord) {
	sc, err := Config(rec)
	if err != nil || r.specs.Authorize == nil {
		return
	}
	var lookup func(string) (string, bool)
	if r.specs.Lookup != nil {
		lookup = r.specs.Lookup(sc.Name)
	}
	if spec, err := actors.SpecOf(sc, lookup, r.specs.Environ); err == nil {
		_ = r.specs.Authorize(&spec, sc.OAuth != nil && sc.OAuth.PerUser)
	}
}
