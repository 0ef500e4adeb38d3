package flows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mcpvisor/mcpvisor/config"
	"github.com/mcpvisor/mcpvisor/internal/elicit"
)

// Input is one config input (${input:ID}) a starting server needs and
// nobody has answered yet (the root's InputRequest, field for field).
type Input struct {
	Server      string   `json:"server"`
	ID          string   `json:"id"`
	Description string   `json:"description,omitempty"`
	Password    bool     `json:"password,omitempty"`
	Options     []string `json:"options,omitempty"`
	Default     string   `json:"default,omitempty"`
}

// EnvName is the environment variable that answers the config input id
// for an unattended host: MCPVISOR_INPUT_ and the id upper-cased, every
// character other than a letter or digit written as '_'.
func EnvName(id string) string {
	var b strings.Builder
	b.WriteString("MCPVISOR_INPUT_")
	for _, r := range strings.ToUpper(id) {
		if r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

// inputRef matches ${input:ID} in an entry's JSON; an id holds no '}' or
// quote, so the JSON encoding of the fields does not change what matches.
var inputRef = regexp.MustCompile(`\$\{input:([^}"\\]+)\}`)

// InputIDs lists the inputs a server's config (its JSON encoding)
// references, each once, in order.
func InputIDs(config json.RawMessage) []string {
	var ids []string
	for _, m := range inputRef.FindAllSubmatch(config, -1) {
		if id := string(m[1]); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// InputHost is what the config inputs need of the host; C is its server
// config. Its methods are called concurrently.
type InputHost[C any] interface {
	// Answer returns input id's answer, from the environment or one kept.
	Answer(id string) (string, bool)
	// Keep keeps an answer for later runs.
	Keep(id, value string) error
	// Describe completes q with what the config declares of its input.
	Describe(q Input) Input
	// Start starts a waiting server, all of whose inputs are answered.
	Start(server C) error
}

// Inputs are the servers waiting for answers to config inputs and the
// inputs being asked of the host's person. Safe for concurrent use.
type Inputs[C any] struct {
	host  InputHost[C]
	flows *Flows
	log   *slog.Logger
	ask   func(context.Context, Input) (string, error) // asked at once; nil: the server waits
	wait  bool                                         // the host's person can be asked
	wg    sync.WaitGroup                               // AskAll's

	mu      sync.Mutex
	servers map[string]waitingServer[C]
	asking  map[string]bool // input id → put to the person
}

type waitingServer[C any] struct {
	name    string
	config  C
	missing []string
}

// NewInputs returns the inputs of host. ask, when set, answers a missing
// input at once (the CLI's terminal prompt); otherwise a server waits for
// the host's person, asked through f's elicitations, when it has one.
func NewInputs[C any](host InputHost[C], f *Flows, ask func(context.Context, Input) (string, error)) *Inputs[C] {
	return &Inputs[C]{host: host, flows: f, log: f.o.Logger, ask: ask, wait: f.Elicits(),
		servers: map[string]waitingServer[C]{}, asking: map[string]bool{}}
}

// Resolve makes sure every input an enabled server's entry (raw: its
// JSON) references has an answer. Those missing are asked at once (ask),
// or left to ask the host's person (waiting is true: the server is to
// wait in StateNeedsInput until AskAll's answers start it), or reported
// with an error wrapping config.ErrInvalid that says how to give them.
// Answers are kept for later runs.
func (w *Inputs[C]) Resolve(ctx context.Context, server string, cfg C, enabled bool, raw json.RawMessage) (waiting bool, err error) {
	w.Forget(server)
	if !enabled {
		return false, nil
	}
	var missing []string
	for _, id := range InputIDs(raw) {
		if _, ok := w.host.Answer(id); !ok {
			missing = append(missing, id)
		}
	}
	switch {
	case len(missing) == 0:
		return false, nil
	case w.ask != nil:
		for _, id := range missing {
			v, err := w.ask(ctx, w.host.Describe(Input{Server: server, ID: id}))
			if err != nil {
				return false, fmt.Errorf("server %q: input %q: %w", server, id, err)
			}
			if err := w.host.Keep(id, v); err != nil {
				return false, err
			}
		}
		return false, nil
	case w.wait:
		w.Wait(server, cfg, missing)
		return true, nil
	}
	id := missing[0]
	return false, fmt.Errorf("%w: server %q: field %q: input %q has no answer and nobody can be asked: set %s, or run the command once in a terminal, which asks for it and keeps the answer in the data directory",
		config.ErrInvalid, server, inputField(raw, id), id, EnvName(id))
}

// inputField is the field of an entry (raw: its JSON) where ${input:id}
// first appears, spelt as config's errors spell fields ("env.KEY",
// "args[1]"); "" when it appears in none.
func inputField(raw json.RawMessage, id string) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return ""
	}
	ref := "${input:" + id + "}"
	var find func(path string, v any) (string, bool)
	find = func(path string, v any) (string, bool) {
		switch v := v.(type) {
		case string:
			return path, strings.Contains(v, ref)
		case []any:
			for i, e := range v {
				if p, ok := find(fmt.Sprintf("%s[%d]", path, i), e); ok {
					return p, true
				}
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				p := k
				if path != "" {
					p = path + "." + k
				}
				if p, ok := find(p, v[k]); ok {
					return p, true
				}
			}
		}
		return "", false
	}
	field, _ := find("", v)
	return field
}

// AskAll asks the host's person each input a waiting server needs that is
// not being asked already, each on a goroutine of its own until ctx ends
// (Close waits for them); each answer starts the servers it completes.
// Call it once the waiting servers are registered, so that a quick answer
// cannot be overtaken by their placeholders.
func (w *Inputs[C]) AskAll(ctx context.Context) {
	for _, q := range w.Unasked() {
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			w.Ask(ctx, q)
		}()
	}
}

// Close waits for AskAll's goroutines, whose context must have ended.
func (w *Inputs[C]) Close() { w.wg.Wait() }

// Wait notes that server (config) waits for the missing inputs.
func (w *Inputs[C]) Wait(server string, config C, missing []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.servers[server] = waitingServer[C]{name: server, config: config, missing: missing}
}

// Forget notes that server waits no longer.
func (w *Inputs[C]) Forget(server string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.servers, server)
}

// Unasked marks and returns the inputs waiting servers need that are not
// being asked, one request each, described (InputHost.Describe).
func (w *Inputs[C]) Unasked() []Input {
	w.mu.Lock()
	var out []Input
	for _, name := range slices.Sorted(maps.Keys(w.servers)) {
		for _, id := range w.servers[name].missing {
			if !w.asking[id] {
				w.asking[id] = true
				out = append(out, Input{Server: name, ID: id})
			}
		}
	}
	w.mu.Unlock()
	for i := range out {
		out[i] = w.host.Describe(out[i])
	}
	return out
}

func (w *Inputs[C]) unask(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.asking, id)
}

// answered records that id has an answer and returns the waiting servers
// that now have all of theirs, no longer waiting.
func (w *Inputs[C]) answered(id string) []waitingServer[C] {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.asking, id)
	var ready []waitingServer[C]
	for _, name := range slices.Sorted(maps.Keys(w.servers)) {
		ws := w.servers[name]
		if !slices.ContainsFunc(ws.missing, func(m string) bool { _, ok := w.host.Answer(m); return !ok }) {
			ready = append(ready, ws)
			delete(w.servers, name)
		}
	}
	return ready
}

// Status is the note for a waiting server's status; false when it is not
// waiting.
func (w *Inputs[C]) Status(server string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ws, ok := w.servers[server]
	if !ok {
		return "", false
	}
	var env []string
	for _, id := range ws.missing {
		env = append(env, EnvName(id))
	}
	return fmt.Sprintf("waiting for input %s (answer it in the inbox, or set %s)",
		strings.Join(ws.missing, ", "), strings.Join(env, ", ")), true
}

// Ask puts one input (from Unasked) to the host's person and, once
// answered, keeps the answer and starts the servers waiting for it that
// have every answer they need. It blocks until answered, or ctx ends or
// the elicitation's deadline passes (then it may be asked again).
func (w *Inputs[C]) Ask(ctx context.Context, q Input) {
	v, err := w.flows.elicitInput(ctx, q)
	if err != nil {
		w.log.Warn("config input not answered", "input", q.ID, "server", q.Server, "err", err)
		w.unask(q.ID)
		return
	}
	if err := w.host.Keep(q.ID, v); err != nil {
		w.log.Error("config input: keeping the answer", "input", q.ID, "err", err)
		w.unask(q.ID)
		return
	}
	for _, ws := range w.answered(q.ID) {
		if err := w.host.Start(ws.config); err != nil {
			w.log.Warn("config input answered, server not started", "server", ws.name, "err", err)
		}
	}
}

// elicitInput asks for one input through the host's elicitations: a form
// with one string field, masked for a password.
func (f *Flows) elicitInput(ctx context.Context, q Input) (string, error) {
	field := map[string]any{"type": "string", "title": q.ID}
	if q.Description != "" {
		field["description"] = q.Description
	}
	if q.Password {
		field["format"] = "password"
	}
	if len(q.Options) > 0 {
		field["enum"] = q.Options
	}
	if q.Default != "" && !q.Password {
		field["default"] = q.Default
	}
	msg := fmt.Sprintf("Server %q needs %q to start", q.Server, q.ID)
	if q.Description != "" {
		msg += ": " + q.Description
	}
	params, err := json.Marshal(map[string]any{
		"mode":    "form",
		"message": msg,
		"requestedSchema": map[string]any{
			"type":       "object",
			"properties": map[string]any{"value": field},
			"required":   []string{"value"},
		},
	})
	if err != nil {
		return "", err
	}
	raw, err := f.Elicit(ctx, q.Server, params, func(*elicit.Request) *Asker { return nil })
	if err != nil {
		return "", err
	}
	var resp struct {
		Action  elicit.Action  `json:"action"`
		Content map[string]any `json:"content"`
	}
	if err := json.Unmarshal(raw, &resp); err != nil {
		return "", err
	}
	if resp.Action != elicit.ActionAccept {
		return "", fmt.Errorf("the person answered %s", resp.Action)
	}
	v, _ := resp.Content["value"].(string)
	if v == "" {
		return "", errors.New("the answer is empty")
	}
	return v, nil
}
