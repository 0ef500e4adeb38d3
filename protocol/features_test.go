package protocol

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFeatureRoundTrip decodes schema-shaped JSON into each type and checks
// that encoding it again gives the same bytes.
func TestFeatureRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		v    any // pointer to a zero value of the type
		json string
	}{
		{"resource", &Resource{}, `{"uri":"file:///a.txt","name":"a.txt","title":"A","description":"d","mimeType":"text/plain","size":12,"icons":[{"src":"https://x/i.png"}],"annotations":{"audience":["user"],"priority":0.5},"_meta":{"k":1}}`},
		{"resource template", &ResourceTemplate{}, `{"uriTemplate":"file:///{path}","name":"files","title":"Files","description":"d","mimeType":"text/plain","icons":[{"src":"data:,"}],"annotations":{"priority":1}}`},
		{"resources list", &ListResourcesResult{}, `{"resources":[{"uri":"u","name":"n"}],"nextCursor":"c"}`},
		{"templates list", &ListResourceTemplatesResult{}, `{"resourceTemplates":[{"uriTemplate":"t","name":"n"}],"nextCursor":"c"}`},
		{"read params", &ReadResourceParams{}, `{"uri":"file:///a"}`},
		{"read result", &ReadResourceResult{}, `{"contents":[{"uri":"file:///a","mimeType":"text/plain","text":""},{"uri":"file:///b","blob":"AA=="}]}`},
		{"subscribe", &SubscribeParams{}, `{"uri":"file:///a"}`},
		{"resource updated", &ResourceUpdatedParams{}, `{"uri":"file:///a/b"}`},
		{"cursor", &CursorParams{}, `{"cursor":"opaque=="}`},
		{"prompt", &Prompt{}, `{"name":"review","title":"Review","description":"d","arguments":[{"name":"code","title":"Code","description":"c","required":true},{"name":"style"}],"icons":[{"src":"https://x/i.png"}],"_meta":{"k":1}}`},
		{"prompts list", &ListPromptsResult{}, `{"prompts":[{"name":"p"}],"nextCursor":"c"}`},
		{"get prompt params", &GetPromptParams{}, `{"name":"review","arguments":{"code":"x"}}`},
		{"get prompt result", &GetPromptResult{}, `{"description":"d","messages":[{"role":"user","content":{"type":"text","text":"Review this"}},{"role":"assistant","content":{"type":"resource","resource":{"uri":"u","text":"t"}}}]}`},
		{"set level", &LoggingSetLevelParams{}, `{"level":"warning"}`},
		{"complete params", &CompleteParams{}, `{"ref":{"type":"ref/prompt","name":"code_review"},"argument":{"name":"language","value":"py"},"context":{"arguments":{"a":"b"}}}`},
		{"complete result", &CompleteResult{}, `{"completion":{"values":["python","pytorch"],"total":10,"hasMore":true}}`},
		{"elicit form", &ElicitRequestParams{}, `{"mode":"form","message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}}`},
		{"elicit url", &ElicitRequestParams{}, `{"mode":"url","message":"Sign in","url":"https://example.com/auth","elicitationId":"e-1","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"t"}}}`},
		{"elicit result", &ElicitResult{}, `{"action":"accept","content":{"age":30,"name":"Ada","ok":true,"tags":["a","b"]}}`},
		{"elicit decline", &ElicitResult{}, `{"action":"decline"}`},
		{"elicitation complete", &ElicitationCompleteParams{}, `{"elicitationId":"e-1"}`},
		{"url elicitation required", &URLElicitationRequiredData{}, `{"elicitations":[{"mode":"url","message":"m","url":"https://x","elicitationId":"e"}]}`},
		{
			"create message params", &CreateMessageParams{},
			`{"messages":[{"role":"user","content":{"type":"text","text":"hi"}},{"role":"assistant","content":[{"type":"tool_use","id":"u1","name":"w","input":{}}]}],"modelPreferences":{"hints":[{"name":"claude"}],"speedPriority":0.5},"systemPrompt":"s","includeContext":"none","temperature":0.2,"maxTokens":100,"stopSequences":["\n\n"],"metadata":{"a":1},"tools":[{"name":"w","inputSchema":{"type":"object"}}],"toolChoice":{"mode":"auto"},"task":{"ttl":1000}}`,
		},
		{"create message result", &CreateMessageResult{}, `{"role":"assistant","content":{"type":"text","text":"ok"},"model":"m-1","stopReason":"endTurn"}`},
		{"roots", &ListRootsResult{}, `{"roots":[{"uri":"file:///home/u/p","name":"p","_meta":{"k":1}},{"uri":"file:///tmp"}]}`},
		{"elicitation capability", &ElicitationCapability{}, `{"form":{},"url":{}}`},
		{"sampling capability", &SamplingCapability{}, `{"tools":{},"context":{}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := json.Unmarshal([]byte(tt.json), tt.v); err != nil {
				t.Fatal(err)
			}
			// Encode the value, not the pointer, as a caller holding one would.
			got, err := json.Marshal(reflect.ValueOf(tt.v).Elem().Interface())
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.json {
				t.Errorf("round trip:\n got %s\nwant %s", got, tt.json)
			}
		})
	}
}

func TestFeatureRequiredMembers(t *testing.T) {
	tests := []struct {
		name string
		v    any
		want string
	}{
		{"resources", ListResourcesResult{}, `{"resources":[]}`},
		{"templates", ListResourceTemplatesResult{}, `{"resourceTemplates":[]}`},
		{"contents", ReadResourceResult{}, `{"contents":[]}`},
		{"prompts", ListPromptsResult{}, `{"prompts":[]}`},
		{"messages", GetPromptResult{}, `{"messages":[]}`},
		{"prompt message", PromptMessage{Role: RoleUser, Content: ContentBlock{Type: ContentText}}, `{"role":"user","content":{"type":"text","text":""}}`},
		{"roots", ListRootsResult{}, `{"roots":[]}`},
		{"roots by pointer", &ListRootsResult{}, `{"roots":[]}`},
		{"elicitations", URLElicitationRequiredData{}, `{"elicitations":[]}`},
		{"sampling", CreateMessageParams{MaxTokens: 1}, `{"messages":[],"maxTokens":1}`},
		{"completion", CompleteResult{}, `{"completion":{"values":[]}}`},
		{"elicit message", ElicitRequestParams{}, `{"message":""}`},
		{"form-only elicitation", ElicitationCapability{Form: &struct{}{}}, `{"form":{}}`},
		{"empty cursor", CursorParams{}, `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.v)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("json.Marshal = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestElicitContentValues(t *testing.T) {
	var r ElicitResult
	if err := json.Unmarshal([]byte(`{"action":"accept","content":{"s":"x","n":1.5,"b":false,"l":["a"]}}`), &r); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"s": "x", "n": 1.5, "b": false, "l": []any{"a"}}
	if diff := cmp.Diff(want, r.Content); diff != "" {
		t.Errorf("content mismatch (-want +got):\n%s", diff)
	}
}

func TestElicitEffectiveMode(t *testing.T) {
	for mode, want := range map[string]string{"": ElicitModeForm, ElicitModeForm: ElicitModeForm, ElicitModeURL: ElicitModeURL, "other": "other"} {
		p := ElicitRequestParams{Mode: mode}
		if got := p.EffectiveMode(); got != want {
			t.Errorf("EffectiveMode(%q) = %q, want %q", mode, got, want)
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		v    interface{ Validate() error }
		ok   bool
	}{
		{"accept", &ElicitResult{Action: ElicitAccept}, true},
		{"decline", &ElicitResult{Action: ElicitDecline}, true},
		{"cancel", &ElicitResult{Action: ElicitCancel}, true},
		{"no action", &ElicitResult{}, false},
		{"bad action", &ElicitResult{Action: "Accept"}, false},
		{"sampling block", &CreateMessageResult{Role: RoleAssistant, Content: raw(`{"type":"text","text":"x"}`), Model: "m"}, true},
		{"sampling array", &CreateMessageResult{Role: RoleAssistant, Content: raw(` [{"type":"tool_use","id":"1","name":"n","input":{}}]`), Model: "m"}, true},
		{"sampling user role", &CreateMessageResult{Role: RoleUser, Content: raw(`{}`), Model: "m"}, true},
		{"sampling bad role", &CreateMessageResult{Role: "system", Content: raw(`{}`), Model: "m"}, false},
		{"sampling no content", &CreateMessageResult{Role: RoleAssistant, Model: "m"}, false},
		{"sampling null content", &CreateMessageResult{Role: RoleAssistant, Content: raw(`null`), Model: "m"}, false},
		{"sampling string content", &CreateMessageResult{Role: RoleAssistant, Content: raw(`"hi"`), Model: "m"}, false},
		{"sampling malformed content", &CreateMessageResult{Role: RoleAssistant, Content: raw(`{"type":`), Model: "m"}, false},
		{"sampling no model", &CreateMessageResult{Role: RoleAssistant, Content: raw(`{}`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.v.Validate()
			if tt.ok && err != nil {
				t.Errorf("Validate() = %v, want nil", err)
			}
			if !tt.ok && !errors.Is(err, ErrInvalidResult) {
				t.Errorf("Validate() = %v, want ErrInvalidResult", err)
			}
		})
	}
}

func TestMethodNameNewConstants(t *testing.T) {
	for _, m := range []string{
		MethodResourcesTemplatesList, MethodResourcesSubscribe, MethodResourcesUnsubscribe,
		MethodCompletionComplete, MethodTasksGet, MethodTasksResult, MethodTasksCancel,
		MethodTasksList, MethodTasksStatus,
	} {
		quoted, _ := json.Marshal(m)
		if got := methodName(quoted); got != m {
			t.Errorf("methodName(%s) = %q", quoted, got)
		}
		if allocs := testing.AllocsPerRun(10, func() { _ = methodName(quoted) }); allocs != 0 {
			t.Errorf("methodName(%s) allocates %v times, want 0", quoted, allocs)
		}
	}
}
