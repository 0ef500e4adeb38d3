package mcpvisor

import (
	"slices"
	"strings"

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
func InputEnvName(id string) string { return flows.EnvName(id) }

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

// inputsHost is what internal/flows' config inputs reach the host through
// (flows.InputHost).
type inputsHost struct{ h *Host }

var _ flows.InputHost[ServerConfig] = inputsHost{}

func (i inputsHost) Answer(id string) (string, bool) {
	v, _, ok := i.h.lookupInput("input:" + id)
	return v, ok
}

func (i inputsHost) Keep(id, value string) error { return i.h.secrets.SetInput(id, value) }

// Describe completes q from the config's declaration of its input, when
// it has one.
func (i inputsHost) Describe(q flows.Input) flows.Input {
	if cfg := i.h.opts.Config; cfg != nil {
		for _, in := range cfg.Inputs {
			if in.ID == q.ID {
				q.Description, q.Password = in.Description, in.Password
				q.Options, q.Default = slices.Clone(in.Options), in.Default
			}
		}
	}
	return q
}

// Start registers sc, whose inputs are now answered, in place of its
// placeholder.
func (i inputsHost) Start(sc ServerConfig) error {
	h := i.h
	spec, err := h.reg.Resolve(h.bg, sc)
	if err != nil {
		return err
	}
	if err := h.checkExposure(spec); err != nil {
		return err
	}
	return h.rt.Register(h.bg, spec)
}
