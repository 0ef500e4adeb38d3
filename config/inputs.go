package config

import (
	"encoding/json"
	"fmt"
)

// Input is one of VS Code's "inputs": a value a server's fields
// reference as ${input:ID}, which the host asks a person for when the
// server starts (an API key, say), rather than the file holding it.
type Input struct {
	ID string `json:"id"`
	// Type is "promptString" or "pickString".
	Type        string `json:"type"`
	Description string `json:"description,omitempty"`
	// Password asks for the value masked.
	Password bool `json:"password,omitempty"`
	// Default is proposed to the person.
	Default string `json:"default,omitempty"`
	// Options are the values to pick from (pickString).
	Options []string `json:"options,omitempty"`
}

// decodeInputs decodes a file's top-level "inputs" array. Errors name the
// member, e.g. `field "inputs[1].id": required`; unknown members are
// ignored with a warning.
func decodeInputs(raw json.RawMessage) ([]Input, []string, []*Error) {
	if kind := jsonKind(raw); kind != "an array" {
		if kind == "null" {
			return nil, nil, nil
		}
		return nil, nil, []*Error{newError("", "inputs", "want an array of inputs, got %s", kind)}
	}
	var (
		inputs   []Input
		warnings []string
		errs     []*Error
	)
	seen := map[string]bool{}
	for i, elem := range arrayElements(raw) {
		label := fmt.Sprintf("inputs[%d]", i)
		if kind := jsonKind(elem); kind != "an object" {
			errs = append(errs, newError("", label, "want an object, got %s", kind))
			continue
		}
		in, ws, ies := decodeInput(label, elem)
		warnings, errs = append(warnings, ws...), append(errs, ies...)
		if len(ies) > 0 {
			continue
		}
		if seen[in.ID] {
			errs = append(errs, newError("", label+".id", "%q is given more than once", in.ID))
			continue
		}
		seen[in.ID] = true
		inputs = append(inputs, in)
	}
	return inputs, warnings, errs
}

func decodeInput(label string, raw json.RawMessage) (Input, []string, []*Error) {
	var (
		in       Input
		warnings []string
		errs     []*Error
	)
	// The JSON helpers report errors for a server; an input is named by
	// its position instead.
	var anon Server
	add := func(err *Error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, m := range objectMembers(raw) {
		field := jsonMember{label + "." + m.key, m.value}
		if jsonKind(m.value) == "null" {
			continue
		}
		switch m.key {
		case "id":
			add(decodeStringField(&anon, field, &in.ID))
		case "type":
			add(decodeStringField(&anon, field, &in.Type))
		case "description":
			add(decodeStringField(&anon, field, &in.Description))
		case "password":
			add(decodeBoolField(&anon, field, &in.Password))
		case "default":
			add(decodeStringField(&anon, field, &in.Default))
		case "options":
			in.Options, errs = decodeOptions(&anon, field, errs)
		default:
			warnings = append(warnings, fmt.Sprintf("%s: unknown field %q ignored", label, m.key))
		}
	}
	switch {
	case len(errs) > 0:
	case in.ID == "":
		errs = append(errs, newError("", label+".id", "required"))
	case !isInputID(in.ID):
		errs = append(errs, newError("", label+".id", "%q cannot be referenced as ${input:ID}: no spaces, quotes, braces, '$' or '\\'", in.ID))
	}
	switch in.Type {
	case "":
		in.Type = "promptString"
	case "promptString":
	case "pickString":
		if len(in.Options) == 0 && len(errs) == 0 {
			errs = append(errs, newError("", label+".options", `required for a "pickString" input`))
		}
	default:
		errs = append(errs, newError("", label+".type", `want "promptString" or "pickString", got %q (mcpvisor cannot run VS Code's commands)`, in.Type))
	}
	return in, warnings, errs
}

// decodeOptions decodes a pickString's options: strings, or VS Code's
// objects {"label", "value"}, of which the value is kept.
func decodeOptions(anon *Server, m jsonMember, errs []*Error) ([]string, []*Error) {
	if kind := jsonKind(m.value); kind != "an array" {
		return nil, append(errs, newError("", m.key, "want an array of strings, got %s", kind))
	}
	var out []string
	for i, e := range arrayElements(m.value) {
		field := jsonMember{fmt.Sprintf("%s[%d]", m.key, i), e}
		var s string
		if jsonKind(e) == "an object" {
			for _, f := range objectMembers(e) {
				if f.key == "value" {
					if err := decodeStringField(anon, jsonMember{field.key + ".value", f.value}, &s); err != nil {
						errs = append(errs, err)
					}
				}
			}
		} else if err := decodeStringField(anon, field, &s); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, s)
	}
	return out, errs
}
