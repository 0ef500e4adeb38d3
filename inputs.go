package mcpvisor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/mcpvisor/mcpvisor/actors"
	"github.com/mcpvisor/mcpvisor/internal/elicit"
	"github.com/mcpvisor/mcpvisor/internal/flows"
)

// A config file may ask a person for a value when a server starts: VS
// Code's "inputs", referenced as ${input:ID} in the server's fields. The
// host resolves such a reference, in order, from
//
//  1. the environment variable MCPVISOR_INPUT_<ID> (InputEnvName), for
//     hosts that run unattended;
//  2. the answer given before, kept in <data>/secrets.json (encrypted with
//     MCPVISOR_SECRET_KEY when set) and reused by every later run, as VS
//     Code keeps its answers in its secret storage;
//  3. Options.AskInput, asked at once (the CLI's terminal prompt); or,
//     without it, the person the host's elicitations go to (Options.Inbox or
//     Options.Elicitation): the server waits in StateNeedsInput while the
//     question is open and starts once it is answered.
//
// With none of these a server that needs an unanswered input does not
// start, and the error says how to give the value.

// StateNeedsInput is the state of a server that waits for the answer to a
// config input (${input:ID}) before it can start; it starts once answered.
const StateNeedsInput State = "needs_input"

// InputRequest is one config input a starting server needs and nobody has
// answered yet.
type InputRequest struct {
	// Server is the server that needs it (others may share it).
	Server string `json:"server"`
	// ID is the input's id, as in ${input:ID}.
	ID string `json:"id"`
	// Description is what the file says the input is; "" when the file
	// declares no such input.
	Description string `json:"description,omitempty"`
	// Password asks for the answer masked.
	Password bool `json:"password,omitempty"`
	// Options, when set, are the answers to pick from (pickString).
	Options []string `json:"options,omitempty"`
	// Default is proposed to the person.
	Default string `json:"default,omitempty"`
}

// InputEnvName is the environment variable that answers the config input
// id for an unattended host: MCPVISOR_INPUT_ and the id upper-cased, every
// character other than a letter or digit written as '_' ("ev-token" →
// MCPVISOR_INPUT_EV_TOKEN).
func InputEnvName(id string) string {
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

// inputIDs lists the inputs sc's fields reference, each once, in order.
func inputIDs(sc ServerConfig) []string {
	raw, err := json.Marshal(sc)
	if err != nil {
		return nil
	}
	var ids []string
	for _, m := range inputRef.FindAllSubmatch(raw, -1) {
		if id := string(m[1]); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// lookupInput resolves the reference name "input:ID" from the environment
// or a stored answer; ok is false for any other name.
func (h *Host) lookupInput(name string) (value string, isInput, ok bool) {
	id, isInput := strings.CutPrefix(name, "input:")
	if !isInput {
		return "", false, false
	}
	if v, ok := h.opts.LookupEnv(InputEnvName(id)); ok {
		return v, true, true
	}
	v, ok := h.secrets.Input(id)
	return v, true, ok
}

// inputRequest describes input id for server, from the config's
// declaration when it has one.
func (h *Host) inputRequest(server, id string) InputRequest {
	req := InputRequest{Server: server, ID: id}
	if h.opts.Config != nil {
		for _, in := range h.opts.Config.Inputs {
			if in.ID == id {
				req.Description, req.Password = in.Description, in.Password
				req.Options, req.Default = slices.Clone(in.Options), in.Default
			}
		}
	}
	return req
}

// answerInputs makes sure every input an enabled sc references has an
// answer. Those missing are asked through Options.AskInput now, or left
// to ask the host's person (waiting is true: sc is to wait in
// StateNeedsInput), or reported. Answers are stored for later runs.
func (h *Host) answerInputs(ctx context.Context, sc ServerConfig) (waiting bool, err error) {
	h.inputs.forget(sc.Name)
	if !sc.Enabled {
		return false, nil
	}
	var missing []string
	for _, id := range inputIDs(sc) {
		if _, _, ok := h.lookupInput("input:" + id); !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) == 0 {
		return false, nil
	}
	if h.opts.AskInput != nil {
		for _, id := range missing {
			v, err := h.opts.AskInput(ctx, h.inputRequest(sc.Name, id))
			if err != nil {
				return false, fmt.Errorf("server %q: input %q: %w", sc.Name, id, err)
			}
			if err := h.secrets.SetInput(id, v); err != nil {
				return false, err
			}
		}
		return false, nil
	}
	if h.opts.Inbox || h.opts.Elicitation != nil {
		h.inputs.wait(sc, missing)
		return true, nil
	}
	return false, fmt.Errorf("%w: server %q needs input %q, which has no answer: set %s, or answer it once in a terminal (e.g. mcpvisor status --config FILE) and it is kept in the data directory",
		ErrConfig, sc.Name, missing[0], InputEnvName(missing[0]))
}

// askInputs asks the host's person each input a waiting server needs that
// is not being asked already, in the background; each answer starts the
// servers it completes. Called once the waiting servers are registered,
// so that a quick answer cannot be overtaken by their placeholders.
func (h *Host) askInputs() {
	for _, q := range h.inputs.unasked() {
		q = h.inputRequest(q.Server, q.ID)
		h.tasksWG.Add(1)
		go func() {
			defer h.tasksWG.Done()
			h.askInput(q)
		}()
	}
}

// askInput puts one input to the host's person and, once answered, starts
// the servers waiting for it that have every answer they need.
func (h *Host) askInput(q InputRequest) {
	v, err := h.elicitInput(q)
	if err != nil {
		h.opts.Logger.Warn("config input not answered", "input", q.ID, "server", q.Server, "err", err)
		h.inputs.unask(q.ID)
		return
	}
	if err := h.secrets.SetInput(q.ID, v); err != nil {
		h.opts.Logger.Error("config input: keeping the answer", "input", q.ID, "err", err)
		h.inputs.unask(q.ID)
		return
	}
	for _, sc := range h.inputs.answered(q.ID, func(id string) bool { _, _, ok := h.lookupInput("input:" + id); return ok }) {
		if err := h.startWaiting(sc); err != nil {
			h.opts.Logger.Warn("config input answered, server not started", "server", sc.Name, "err", err)
		}
	}
}

// startWaiting registers sc, whose inputs are now answered, in place of
// its placeholder.
func (h *Host) startWaiting(sc ServerConfig) error {
	spec, err := h.resolve(h.bg, sc)
	if err != nil {
		return err
	}
	if err := h.checkExposure(spec); err != nil {
		return err
	}
	return h.rt.Register(h.bg, spec)
}

// elicitInput asks for one input through the host's elicitations: a form
// with one string field, masked for a password.
func (h *Host) elicitInput(q InputRequest) (string, error) {
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
	ctx, cancel := context.WithCancel(h.bg)
	defer cancel()
	raw, err := h.flows.Elicit(ctx, q.Server, params, func(*ElicitationRequest) *flows.Asker { return nil })
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

// inputWaits are the servers waiting for config inputs and the inputs
// being asked. The zero value is ready to use.
type inputWaits struct {
	mu      sync.Mutex
	servers map[string]waitingServer
	asking  map[string]bool // input id → put to the person
}

type waitingServer struct {
	sc      ServerConfig
	missing []string
}

func (w *inputWaits) lock() {
	w.mu.Lock()
	if w.servers == nil {
		w.servers, w.asking = map[string]waitingServer{}, map[string]bool{}
	}
}

func (w *inputWaits) unlock() { w.mu.Unlock() }

func (w *inputWaits) wait(sc ServerConfig, missing []string) {
	w.lock()
	defer w.unlock()
	w.servers[sc.Name] = waitingServer{sc: sc, missing: missing}
}

func (w *inputWaits) forget(server string) {
	w.lock()
	defer w.unlock()
	delete(w.servers, server)
}

// unasked marks and returns the inputs waiting servers need that are not
// being asked, one request each.
func (w *inputWaits) unasked() []InputRequest {
	w.lock()
	defer w.unlock()
	var out []InputRequest
	for _, name := range slices.Sorted(maps.Keys(w.servers)) {
		for _, id := range w.servers[name].missing {
			if !w.asking[id] {
				w.asking[id] = true
				out = append(out, InputRequest{Server: name, ID: id})
			}
		}
	}
	return out
}

func (w *inputWaits) unask(id string) {
	w.lock()
	defer w.unlock()
	delete(w.asking, id)
}

// answered records that id has an answer and returns the waiting servers
// that now have all of theirs (has reports an answer), no longer waiting.
func (w *inputWaits) answered(id string, has func(string) bool) []ServerConfig {
	w.lock()
	defer w.unlock()
	delete(w.asking, id)
	var ready []ServerConfig
	for _, name := range slices.Sorted(maps.Keys(w.servers)) {
		ws := w.servers[name]
		if !slices.ContainsFunc(ws.missing, func(m string) bool { return !has(m) }) {
			ready = append(ready, ws.sc)
			delete(w.servers, name)
		}
	}
	return ready
}

// status is the note for a waiting server's status, "" when it is not
// waiting.
func (w *inputWaits) status(server string) (string, bool) {
	w.lock()
	defer w.unlock()
	ws, ok := w.servers[server]
	if !ok {
		return "", false
	}
	var env []string
	for _, id := range ws.missing {
		env = append(env, InputEnvName(id))
	}
	return fmt.Sprintf("waiting for input %s (answer it in the inbox, or set %s)",
		strings.Join(ws.missing, ", "), strings.Join(env, ", ")), true
}

// placeholder is the disabled spec that stands for sc while it waits.
func placeholder(sc ServerConfig) actors.ServerSpec {
	return actors.ServerSpec{Name: sc.Name, Transport: actors.Transport(sc.Type),
		Description: sc.Description, FriendlyName: sc.FriendlyName}
}
