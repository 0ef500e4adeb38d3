package toolpin

import (
	"fmt"
	"strings"
)

// Policy says what the host does with tool definitions, host-wide or for
// one server. The zero value is unset: a server's unset policy takes the
// host's (Or), and an unset host policy is PolicyOff.
type Policy string

const (
	// PolicyOff: definitions are neither pinned nor checked; every tool is
	// exposed as the server lists it.
	PolicyOff Policy = "off"
	// PolicyWarn: definitions are pinned and checked, and every tool is
	// exposed at once; a new tool, a changed definition and every finding
	// are reported in status and journaled.
	PolicyWarn Policy = "warn"
	// PolicyHold: a new tool (a new server's included), a tool whose
	// definition differs from its pinned one, and a tool with a hold
	// finding are not exposed to any session until a person approves that
	// definition; a call to a withheld tool gets a tool error. Approving
	// pins the definition's Hash.
	PolicyHold Policy = "hold"
)

// ParsePolicy reads a policy as written in configuration: off, warn or
// hold, in any case, with surrounding space ignored. An empty string is
// the unset policy. Anything else is an error wrapping ErrPolicy that
// names the value.
func ParsePolicy(s string) (Policy, error) {
	switch p := Policy(strings.ToLower(strings.TrimSpace(s))); p {
	case "", PolicyOff, PolicyWarn, PolicyHold:
		return p, nil
	}
	return "", fmt.Errorf("%w %q: want off, warn or hold", ErrPolicy, s)
}

// UnmarshalText implements encoding.TextUnmarshaler with ParsePolicy, so
// JSON, TOML and YAML configuration decode a Policy directly.
func (p *Policy) UnmarshalText(text []byte) error {
	v, err := ParsePolicy(string(text))
	if err != nil {
		return err
	}
	*p = v
	return nil
}

// Or returns p, or fallback when p is unset.
func (p Policy) Or(fallback Policy) Policy {
	if p == "" {
		return fallback
	}
	return p
}

// Effective returns the policy in force: PolicyOff when unset.
func (p Policy) Effective() Policy { return p.Or(PolicyOff) }

// State is where a definition stands against its pin.
type State string

const (
	StateNew       State = "new"       // no definition of this tool is pinned
	StateUnchanged State = "unchanged" // the definition hashes to the pin
	StateChanged   State = "changed"   // it hashes to something else
)

// Assessment is what a policy makes of one listed definition.
type Assessment struct {
	Hash     string    `json:"hash"`
	State    State     `json:"state"`
	Findings []Finding `json:"findings,omitempty"`
	// Hold: the tool must not be exposed until a person approves Hash.
	Hold bool `json:"hold"`
	// Report: status should show the tool (new, changed or with findings)
	// and the journal record the event.
	Report bool `json:"report"`
}

// Assess applies a policy to a definition given the hash pinned for that
// tool ("" when none). Under PolicyOff it computes nothing and holds
// nothing. A hold finding holds a tool only while its definition is not
// the pinned one: approving a definition is approving its findings. Under
// PolicyHold the pin must be one a person approved; a pin recorded
// unattended under PolicyWarn must not be passed once the policy is hold.
// It is pure and safe for concurrent use.
func Assess(p Policy, pinned string, def Definition) Assessment {
	p = p.Effective()
	if p == PolicyOff {
		return Assessment{}
	}
	a := Assessment{Hash: Hash(def), Findings: Check(def)}
	switch {
	case pinned == "":
		a.State = StateNew
	case pinned == a.Hash:
		a.State = StateUnchanged
	default:
		a.State = StateChanged
	}
	a.Hold = p == PolicyHold && a.State != StateUnchanged
	a.Report = a.State != StateUnchanged || len(a.Findings) > 0
	return a
}
