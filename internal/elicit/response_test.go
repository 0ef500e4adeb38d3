package elicit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestActionValid(t *testing.T) {
	for a, want := range map[Action]bool{
		ActionAccept: true, ActionDecline: true, ActionCancel: true,
		"": false, "Accept": false, "reject": false,
	} {
		if got := a.Valid(); got != want {
			t.Errorf("Action(%q).Valid() = %v, want %v", a, got, want)
		}
	}
}

func TestResponseDoesNotLeakValues(t *testing.T) {
	const secret = "pa55-w0rd-xyzzy"
	resp := Response{Action: ActionAccept, Content: map[string]any{
		"password": secret,
		"user":     "ada",
		"pins":     []string{secret},
	}}

	if got, want := resp.String(), "accept [password pins user]"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if got := (Response{Action: ActionDecline}).String(); got != "decline" {
		t.Errorf("String() of a decline = %q", got)
	}
	for _, format := range []string{"%v", "%+v", "%#v", "%s"} {
		if s := fmt.Sprintf(format, resp); strings.Contains(s, secret) {
			t.Errorf("Sprintf(%q) leaks the value: %s", format, s)
		}
	}

	for name, h := range map[string]func(*bytes.Buffer) slog.Handler{
		"text": func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
		"json": func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
	} {
		var buf bytes.Buffer
		log := slog.New(h(&buf))
		log.Info("answered", "response", resp)
		log.Info("answered", slog.Any("response", &resp))
		out := buf.String()
		if strings.Contains(out, secret) || strings.Contains(out, "ada") {
			t.Errorf("%s log leaks a value: %s", name, out)
		}
		if !strings.Contains(out, "accept") || !strings.Contains(out, "password") {
			t.Errorf("%s log lacks the action or the field names: %s", name, out)
		}
	}
}

func TestResultJSON(t *testing.T) {
	tests := []struct {
		name string
		resp Response
		want string
	}{
		{"accept", Response{ActionAccept, map[string]any{"n": int64(3), "tags": []string{"a"}}}, `{"action":"accept","content":{"n":3,"tags":["a"]}}`},
		{"accept without content", Response{Action: ActionAccept}, `{"action":"accept"}`},
		{"accept with empty content", Response{ActionAccept, map[string]any{}}, `{"action":"accept"}`},
		{"decline drops content", Response{ActionDecline, map[string]any{"x": "y"}}, `{"action":"decline"}`},
		{"cancel", Response{Action: ActionCancel}, `{"action":"cancel"}`},
		{"invalid action", Response{Action: "maybe"}, `{"action":"cancel"}`},
		{"unencodable content", Response{ActionAccept, map[string]any{"c": make(chan int)}}, `{"action":"cancel"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ResultJSON(tt.resp)
			if string(got) != tt.want {
				t.Errorf("ResultJSON = %s, want %s", got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("not JSON: %s", got)
			}
		})
	}
}
