package toolpin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Severity is how much a finding weighs: under the hold policy a tool with
// a hold finding waits for a person even when nothing else would hold it.
type Severity string

const (
	SeverityWarn Severity = "warn" // reported in status, tool exposed
	SeverityHold Severity = "hold" // reported, and held under PolicyHold
)

// Finding is one rule matching one field of a definition.
type Finding struct {
	Rule     string   `json:"rule"` // a Rule's ID
	Severity Severity `json:"severity"`
	// Path is the field (name, title, description, annotations) or the
	// schema field and a JSON pointer into it, e.g.
	// inputSchema/properties/path/description.
	Path string `json:"path"`
	// Excerpt is a short piece of the text with the match between « and »;
	// invisible runes show as ⟨U+XXXX⟩.
	Excerpt string `json:"excerpt"`
	Reason  string `json:"reason"`
}

func (f Finding) String() string {
	return fmt.Sprintf("%s %s at %s: %s: %s", f.Severity, f.Rule, f.Path, f.Reason, f.Excerpt)
}

// Rule is one description check. Rules lists them all; doc.go explains
// each.
type Rule struct {
	ID       string   `json:"id"`
	Severity Severity `json:"severity"`
	Summary  string   `json:"summary"`
}

// IDs of the rules.
const (
	RuleInvisibleUnicode    = "invisible-unicode"
	RuleMixedScript         = "mixed-script"
	RuleDuplicateKey        = "duplicate-key"
	RuleInvalidJSON         = "invalid-json"
	RuleHiddenText          = "schema-hidden-text"
	RuleLongDescription     = "long-description"
	RuleInstructionOverride = "instruction-override"
	RuleConcealFromUser     = "conceal-from-user"
	RuleSecretPath          = "secret-path"
	RuleSecretRead          = "secret-read"
	RuleExfiltration        = "exfiltration"
	RuleToolShadowing       = "tool-shadowing"
	RuleToolPrecondition    = "tool-precondition"
	RuleDirectiveTag        = "directive-tag"
	RuleModelDirective      = "model-directive"
)

// Bounds of the length rules, in runes.
const (
	// MaxDescription: a tool description longer than this is reported
	// (long-description). The longest descriptions of widely used servers
	// stay well under it; poisoned ones bury their payload in bulk.
	MaxDescription = 4000
	// MaxSchemaProse: a description or title inside a schema longer than
	// this is reported (schema-hidden-text).
	MaxSchemaProse = 1000
	// MaxSchemaData: a string in default, enum, examples, const, $comment
	// or a keyword JSON Schema does not define, longer than this, is
	// reported (schema-hidden-text). Few clients show these to a person.
	MaxSchemaData = 200
)

const excerptContext = 40 // runes of context either side of a match

type rule struct {
	Rule
	re     *regexp.Regexp
	reason string
	// skip rejects a match that the expression cannot exclude (RE2 has no
	// look-around).
	skip func(match string) bool
	// words: every match of re contains one of them (lower case), so a
	// text with none is not searched. TestRuleWords keeps them true.
	words []string
}

func containsAny(s string, words []string) bool {
	for _, w := range words {
		if strings.Contains(s, w) {
			return true
		}
	}
	return len(words) == 0
}

var patternRules = []rule{
	{
		Rule: Rule{RuleInstructionOverride, SeverityHold, `"ignore previous instructions" and kin`},
		re: regexp.MustCompile(`(?i)\b(?:ignore|disregard|forget|override|bypass)\s+(?:(?:all|any|the|your|of|these|those)\s+)*(?:previous|prior|above|earlier|preceding|system|other|original|existing|safety|developer)\s+(?:instructions|prompts?|directives|guidelines|rules|messages)\b` +
			`|\b(?:ignore|disregard)\s+(?:all|any)\s+(?:instructions|prompts?|rules|guidelines)\b`),
		reason: "tells the model to set aside its instructions",
		words:  []string{"ignore", "disregard", "forget", "override", "bypass"},
	},
	{
		Rule: Rule{RuleConcealFromUser, SeverityHold, `"do not tell the user" and kin`},
		re: regexp.MustCompile(`(?i)\b(?:do\s+not|don'?t|never|must\s+not|should\s+not|shouldn'?t)\s+(?:tell|mention|inform|reveal|disclose|notify|alert|let\s+(?:the\s+)?user\s+know)\b` +
			`|\bwithout\s+(?:telling|informing|notifying|alerting)\s+(?:the\s+)?user\b` +
			`|\b(?:hide|conceal|keep)\b[^.\n]{0,40}\bfrom\s+(?:the\s+)?user\b` +
			`|\bthe\s+user\s+(?:must|should)\s+(?:not|never)\s+(?:know|see|find\s+out|be\s+told)\b`),
		reason: "tells the model to keep something from the user",
		words:  []string{"not", "don", "never", "shouldn", "without", "hide", "conceal", "keep"},
	},
	{
		Rule: Rule{RuleSecretPath, SeverityHold, "names a file that holds secrets: ~/.ssh, id_rsa, mcp.json, .aws/credentials…"},
		// A match runs on to the end of the path, so that a public key
		// (id_rsa.pub), which is no secret, can be told apart.
		re:     regexp.MustCompile(`(?i)(?:~/\.ssh\b|\.ssh/|\bid_(?:rsa|dsa|ecdsa|ed25519)\b)[\w./-]*|\.aws/(?:credentials|config)\b|\bmcp\.json\b|~/\.cursor\b|\.netrc\b|\.git-credentials\b|/etc/(?:passwd|shadow)\b|\.kube/config\b|\.docker/config\.json\b|\bclaude_desktop_config\.json\b|\.npmrc\b|\.pypirc\b|\.gnupg\b|\bwallet\.dat\b`),
		skip:   func(m string) bool { return strings.HasSuffix(strings.ToLower(m), ".pub") },
		reason: "names a file that holds keys or credentials",
		words:  []string{"ssh", "id_", ".aws", "mcp.json", "cursor", "netrc", "git-credentials", "/etc/", ".kube", ".docker", "claude_desktop", "npmrc", "pypirc", "gnupg", "wallet"},
	},
	{
		Rule:   Rule{RuleSecretRead, SeverityWarn, `a verb of reading or sending near .env, credentials, api key, password…`},
		re:     regexp.MustCompile(`(?i)\b(?:read|cat|open|load|fetch|include|pass|send|copy|extract|collect|dump|attach|upload)\b[^.\n]{0,40}?(?:(?:^|[\s'"` + "`" + `(/])\.env\b|\bcredentials?\b|\bapi[\s_-]?keys?\b|\bprivate\s+keys?\b|\bsecret\s+keys?\b|\baccess\s+tokens?\b|\bpasswords?\b|\bseed\s+phrases?\b|\bsession\s+cookies?\b)`),
		reason: "asks for secrets to be read or passed on",
		words:  []string{".env", "credential", "api", "key", "password", "token", "seed", "cookie"},
	},
	{
		Rule: Rule{RuleExfiltration, SeverityHold, `"send … to https://…" or to an email address`},
		re:   regexp.MustCompile(`(?i)\b(?:send|post|upload|forward|transmit|exfiltrate|leak|submit|bcc|cc)\b[^.\n]{0,80}?\bto\s+(?:https?://[^\s)"'` + "`" + `]+|[\w.+-]+@[\w-]+(?:\.[\w-]+)+)`),
		skip: func(m string) bool {
			m = strings.ToLower(m)
			for _, ok := range []string{"example.com", "example.org", "example.net", "localhost", "127.0.0.1", "your-domain", "yourdomain"} {
				if strings.Contains(m, ok) {
					return true
				}
			}
			return false
		},
		reason: "tells the model to send data to a fixed address",
		words:  []string{"http", "@"},
	},
	{
		Rule: Rule{RuleToolShadowing, SeverityHold, `instructions about another tool: "when you call the … tool", "side effect on the … tool"`},
		re: regexp.MustCompile(`(?i)\bwhen(?:ever)?\s+(?:the\s+user|you|the\s+assistant|the\s+model|the\s+agent|the\s+ai|claude)\s+(?:calls?|uses?|invokes?|runs?|executes?)\b[^.\n]{0,60}?\b(?:tools?|functions?)\b` +
			`|\bwhen\s+this\s+tool\s+is\s+(?:available|present|loaded|installed|enabled|active)\b` +
			`|\bside[\s-]effects?\s+on\s+(?:the\s+)?(?:also\s+present\s+|other\s+)?\S+\s+tools?\b` +
			`|\b[a-z0-9]+(?:_[a-z0-9]+)+\s+tool\s+(?:must|shall|has\s+to|is\s+required\s+to)\b`),
		skip: func(m string) bool {
			m = strings.ToLower(m)
			return strings.Contains(m, "this tool") && !strings.Contains(m, "when this tool is") || strings.Contains(m, "this function")
		},
		reason: "tries to change how the model uses another tool",
		words:  []string{"tool", "function"},
	},
	{
		Rule:   Rule{RuleToolPrecondition, SeverityWarn, `"before using this tool…", "before calling any other tool…"`},
		re:     regexp.MustCompile(`(?i)\bbefore\s+(?:using|calling|invoking|executing|running|you\s+(?:use|call))\s+(?:this|any\s+other|any|other|the\s+other)\s+(?:tools?|functions?)\b`),
		reason: "sets a step the model must take first; poisoned tools use it to slip in a read",
		words:  []string{"before"},
	},
	{
		Rule:   Rule{RuleDirectiveTag, SeverityWarn, `<IMPORTANT>, <SYSTEM>, [SYSTEM], <!-- … --> and kin`},
		re:     regexp.MustCompile(`(?i)<\s*/?\s*(?:important|system|instructions?|critical|admin|secret|hidden|assistant)\b[^<>]{0,30}>|\[\s*(?:system|important|instructions?|admin)\s*\]|<!--`),
		reason: "a tag that addresses the model, or an HTML comment a rendered view hides",
		words:  []string{"<", "["},
	},
	{
		Rule: Rule{RuleModelDirective, SeverityWarn, `"you must first read/call/send…", "otherwise the tool will not work", "very very important"`},
		re: regexp.MustCompile(`(?i)\byou\s+must\s+(?:first\s+|always\s+|also\s+)?(?:read|call|send|include|pass|fetch|upload)\b` +
			`|\botherwise\s+(?:the|this)\s+(?:tool|application|system|app)\s+(?:will\s+not\s+work|won'?t\s+work|will\s+fail|will\s+crash|will\s+break)\b` +
			`|\b(?:very\s+){2,}important\b|\ball\s+(?:your\s+|the\s+)?data\s+will\s+be\s+lost\b`),
		reason: "pressures the model into a step",
		words:  []string{"must", "otherwise", "important", "lost"},
	},
}

var otherRules = []Rule{
	{RuleInvisibleUnicode, SeverityHold, "zero-width, bidirectional, tag and other format characters in any string"},
	{RuleMixedScript, SeverityHold, "look-alike letters: a name or word mixing scripts (Latin with Cyrillic, Greek…), a name wholly of Latin doubles, a name in fullwidth or mathematical letters"},
	{RuleDuplicateKey, SeverityHold, "a JSON object with a member name twice: readers disagree on which counts"},
	{RuleInvalidJSON, SeverityHold, "a schema, annotations, icons or _meta field that is not JSON"},
	{RuleHiddenText, SeverityWarn, "long text in a schema's descriptions, titles, defaults, enums, examples, $comment or unknown keywords"},
	{RuleLongDescription, SeverityWarn, fmt.Sprintf("a description over %d characters", MaxDescription)},
}

// Rules returns every rule Check applies, in the order of doc.go.
func Rules() []Rule {
	out := append([]Rule(nil), otherRules...)
	for _, r := range patternRules {
		out = append(out, r.Rule)
	}
	return out
}

func ruleSeverity(id string) Severity {
	for _, r := range Rules() {
		if r.ID == id {
			return r.Severity
		}
	}
	return SeverityWarn
}

// Holds reports whether any finding has hold severity.
func Holds(fs []Finding) bool {
	for _, f := range fs {
		if f.Severity == SeverityHold {
			return true
		}
	}
	return false
}

// Check runs the description checks over a definition: its name, title,
// description, annotations, every string of its schemas, and every string
// and member name of its icons and _meta. It needs no
// network and is deterministic; each rule reports at most one finding per
// field (the first match), in the order fields appear. It is safe for
// concurrent use.
func Check(def Definition) []Finding {
	c := &checker{seen: map[string]bool{}}
	c.invisible("name", def.Name)
	if excerpt, reason, ok := nameLookalike(def.Name); ok {
		c.add(RuleMixedScript, "name", excerpt, reason)
	}
	c.invisible("title", def.Title)
	c.lookalike("title", def.Title)
	c.prose("title", def.Title)
	c.invisible("description", def.Description)
	c.lookalike("description", def.Description)
	c.prose("description", def.Description)
	if n := utf8.RuneCountInString(def.Description); n > MaxDescription {
		c.add(RuleLongDescription, "description", shorten(def.Description, 2*excerptContext),
			fmt.Sprintf("%d characters, over %d: room to bury instructions", n, MaxDescription))
	}
	c.json("inputSchema", def.InputSchema, true)
	c.json("outputSchema", def.OutputSchema, true)
	c.json("annotations", def.Annotations, false)
	c.json("icons", def.Icons, false)
	c.json("_meta", def.Meta, false)
	return c.findings
}

type checker struct {
	findings []Finding
	seen     map[string]bool
}

func (c *checker) add(ruleID, path, excerpt, reason string) {
	if c.seen[ruleID+"\x00"+path] {
		return
	}
	c.seen[ruleID+"\x00"+path] = true
	c.findings = append(c.findings, Finding{Rule: ruleID, Severity: ruleSeverity(ruleID), Path: path, Excerpt: excerpt, Reason: reason})
}

func (c *checker) lookalike(path, s string) {
	if excerpt, reason, ok := wordLookalike(s); ok {
		c.add(RuleMixedScript, path, excerpt, reason)
	}
}

func (c *checker) invisible(path, s string) {
	if excerpt, reason, ok := invisibleFinding(s); ok {
		c.add(RuleInvisibleUnicode, path, excerpt, reason)
	}
}

// prose runs the instruction patterns over what a model reads of s.
func (c *checker) prose(path, s string) {
	if s == "" {
		return
	}
	text := cleanText(s)
	// ToLower folds all but one of the runes (?i) matches as ASCII
	// letters (K to k included); ſ is folded by hand.
	lower := strings.ReplaceAll(strings.ToLower(text), "ſ", "s")
	for _, r := range patternRules {
		if !containsAny(lower, r.words) {
			continue // the expression cannot match: skip its backtracking
		}
		for _, loc := range r.re.FindAllStringIndex(text, 8) {
			if r.skip != nil && r.skip(text[loc[0]:loc[1]]) {
				continue
			}
			c.add(r.ID, path, excerpt(text, loc[0], loc[1]), r.reason)
			break
		}
	}
}

func (c *checker) json(field string, raw json.RawMessage, schema bool) {
	n, ok := optionalNode(raw)
	if !ok {
		c.add(RuleInvalidJSON, field, shorten(string(raw), 2*excerptContext), "not valid JSON")
		return
	}
	if n == nil {
		return
	}
	c.everyString(field, n)
	if schema {
		c.schema(field, n)
	} else if field == "annotations" {
		// Annotations: only the title is text a model may read.
		if t := n.get("title"); t != nil && t.kind == kindString {
			c.lookalike(field+"/title", t.s)
			c.prose(field+"/title", t.s)
		}
	}
}

// everyString checks every member name and string for invisible runes,
// and every object for duplicate names.
func (c *checker) everyString(path string, n *node) {
	switch n.kind {
	case kindString:
		c.invisible(path, n.s)
	case kindArray:
		for i, v := range n.arr {
			c.everyString(fmt.Sprintf("%s/%d", path, i), v)
		}
	case kindObject:
		names := map[string]bool{}
		for _, m := range n.obj {
			p := path + "/" + escapePointer(m.key)
			if names[m.key] {
				c.add(RuleDuplicateKey, p, fmt.Sprintf("«%s» appears more than once", shorten(m.key, excerptContext)),
					"one reader sees the first value, another the last; a person may be shown the harmless one")
			}
			names[m.key] = true
			c.invisible(p, m.key)
			c.everyString(p, m.val)
		}
	}
}

// Schema keywords by what their value is.
var (
	schemaMaps   = setOf("properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies")
	schemaValues = setOf("items", "additionalItems", "additionalProperties", "unevaluatedItems", "unevaluatedProperties", "not", "if", "then", "else", "contains", "propertyNames", "contentSchema", "allOf", "anyOf", "oneOf", "prefixItems")
	schemaProse  = setOf("description", "title")
	schemaData   = setOf("default", "enum", "examples", "const", "$comment")
	schemaOther  = setOf("$schema", "$id", "id", "$ref", "$anchor", "$dynamicRef", "$dynamicAnchor", "$vocabulary", "$recursiveRef", "$recursiveAnchor",
		"type", "format", "pattern", "required", "dependentRequired", "readOnly", "writeOnly", "deprecated", "nullable",
		"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength", "maxLength",
		"minItems", "maxItems", "uniqueItems", "minContains", "maxContains", "minProperties", "maxProperties",
		"contentEncoding", "contentMediaType", "x-mcp-header")
)

func setOf(s ...string) map[string]bool {
	m := map[string]bool{}
	for _, k := range s {
		m[k] = true
	}
	return m
}

// schema walks a JSON Schema: text keywords get the instruction patterns
// and a length bound; data keywords and keywords JSON Schema does not
// define, which few clients show a person, get both with a tighter bound.
func (c *checker) schema(path string, n *node) {
	switch n.kind {
	case kindArray:
		for i, v := range n.arr {
			c.schema(fmt.Sprintf("%s/%d", path, i), v)
		}
		return
	case kindObject:
	default:
		return
	}
	for _, m := range n.obj {
		p := path + "/" + escapePointer(m.key)
		switch {
		case schemaMaps[m.key] && m.val.kind == kindObject:
			for _, sub := range m.val.obj {
				if m.key == "properties" {
					// A parameter's name is an identifier too.
					if excerpt, reason, ok := nameLookalike(sub.key); ok {
						c.add(RuleMixedScript, p+"/"+escapePointer(sub.key), excerpt, reason)
					}
				}
				c.schema(p+"/"+escapePointer(sub.key), sub.val)
			}
		case schemaValues[m.key]:
			c.schema(p, m.val)
		case schemaProse[m.key] && m.val.kind == kindString:
			c.lookalike(p, m.val.s)
			c.prose(p, m.val.s)
			c.long(p, m.val.s, MaxSchemaProse, "a long "+m.key+" inside a schema")
		case schemaData[m.key], !schemaOther[m.key]:
			where := "in " + m.key
			if !schemaData[m.key] {
				where = "in " + m.key + ", a keyword JSON Schema does not define"
			}
			c.dataStrings(p, m.val, where)
		}
	}
}

func (c *checker) dataStrings(path string, n *node, where string) {
	switch n.kind {
	case kindString:
		c.prose(path, n.s)
		c.long(path, n.s, MaxSchemaData, "long text "+where)
	case kindArray:
		for i, v := range n.arr {
			c.dataStrings(fmt.Sprintf("%s/%d", path, i), v, where)
		}
	case kindObject:
		for _, m := range n.obj {
			c.dataStrings(path+"/"+escapePointer(m.key), m.val, where)
		}
	}
}

func (c *checker) long(path, s string, bound int, what string) {
	if n := utf8.RuneCountInString(s); n > bound {
		c.add(RuleHiddenText, path, shorten(cleanText(s), 2*excerptContext),
			fmt.Sprintf("%s (%d characters, over %d): text a person rarely sees but a model reads", what, n, bound))
	}
}

// excerpt shows text[start:end] between « and » with some context, on one
// line.
func excerpt(text string, start, end int) string {
	before := []rune(strings.Join(strings.Fields(text[:start]), " "))
	if len(before) > 0 && isSpaceByte(text[start-1]) {
		before = append(before, ' ')
	}
	if len(before) > excerptContext {
		before = append([]rune("…"), before[len(before)-excerptContext:]...)
	}
	after := []rune(strings.Join(strings.Fields(text[end:]), " "))
	if len(after) > 0 && isSpaceByte(text[end]) {
		after = append([]rune{' '}, after...)
	}
	if len(after) > excerptContext {
		after = append(after[:excerptContext:excerptContext], '…')
	}
	return string(before) + "«" + shorten(text[start:end], 2*excerptContext) + "»" + string(after)
}

func isSpaceByte(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }
