// Package toolpin pins tool definitions and checks their descriptions, so a
// server cannot change what a model reads of a tool after a person approved
// it (a rug pull), nor slip instructions aimed at the model into it (tool
// poisoning).
//
//	def := toolpin.FromTool(tool)           // a tools/list entry
//	pin := toolpin.Hash(def)                // "sha256:…", pinned when approved
//	a := toolpin.Assess(toolpin.PolicyHold, pin, next)
//	if a.Hold {
//		fmt.Print(toolpin.Diff(def, next)) // what the person approves
//	}
//	for _, f := range a.Findings { fmt.Println(f) }
//
// The package is pure: no I/O, no clock, no state; every function is safe
// for concurrent use. Where pins live, who approves and what is journaled
// belong to the host.
//
// # Pinning
//
// A Definition is a tool's name, title, description, input and output
// schema, annotations, icons and _meta. Hash digests its canonical JSON
// form (Canonical: RFC 8785 over the fields, with absent, null and empty
// fields that mean the same folded together), so key order, whitespace
// and number spelling never change a pin, and any change to text, schema,
// hints, an icon or a _meta value (MCP Apps' _meta.ui.resourceUri) does.
// Diff shows a person what changed: per field, schema, icons and _meta
// members by JSON pointer, long texts as a word diff.
//
// HashVersion 1 left icons and _meta out. LegacyHash is that hash, so a
// host can carry a pin version 1 recorded over to version 2 when the tool
// it approved is listed again; a tool without icons or _meta hashes alike
// in both.
//
// A Policy (off, warn, hold) says what the host does: nothing; pin, check,
// expose and report; or pin, check and withhold any tool whose definition
// a person has not approved.
//
// # Description checks
//
// Check runs a small rule set over the name, title, description,
// annotations title, every string of the schemas, the icons and _meta.
// It reads text as a model does: zero-width and other invisible runes are dropped and tag
// characters read as the ASCII they encode before the patterns run, so
// "ig\u200bnore" still matches. Each rule reports at most one finding per
// field. Severity hold means the finding alone is reason to withhold the
// tool under PolicyHold; warn findings are only reported.
//
//	rule                  sev   flags
//	invisible-unicode     hold  zero-width (U+200B–U+200D, U+2060–U+2064, U+FEFF, U+180E), bidirectional
//	                            controls (U+061C, U+200E–U+200F, U+202A–U+202E, U+2066–U+2069), tag characters
//	                            (U+E0000–U+E007F), runs of variation selectors, any other format (Cf) character;
//	                            in any string or member name. Not flagged: a ZWJ inside an emoji sequence, ZWJ
//	                            and ZWNJ beside letters of scripts that need them (Arabic, Indic…), the tags of a
//	                            subdivision flag, one variation selector after its base. Icons and _meta are
//	                            searched too, as are their member names.
//	mixed-script          hold  look-alike letters: a name, or a word of a title, description or schema
//	                            description, whose letters are of scripts no language writes together (Latin with
//	                            Cyrillic or Greek: "rеad_file" with U+0435; UTS #39's highly restrictive sets, so
//	                            Latin with Han, kana, Bopomofo or Hangul passes); a name or parameter name wholly
//	                            of Cyrillic, Greek, Armenian or Cherokee letters that each have a Latin double
//	                            ("ехес"); a name in compatibility forms (fullwidth, mathematical, letterlike).
//	                            The reason says what it reads as; the excerpt marks each odd letter ⟨е U+0435⟩.
//	duplicate-key         hold  a JSON object naming a member twice: readers disagree on which value counts.
//	invalid-json          hold  a schema, annotations, icons or _meta field that is not JSON.
//	schema-hidden-text    warn  a schema description or title over MaxSchemaProse (1,000) characters; a string
//	                            in default, enum, examples, const, $comment or a keyword JSON Schema does not
//	                            define over MaxSchemaData (200). Clients rarely show these; models read them.
//	long-description      warn  a description over MaxDescription (4,000) characters.
//	instruction-override  hold  "ignore/disregard/forget (all|any|previous|prior|system…) instructions|prompts|rules".
//	conceal-from-user     hold  "do not / never (tell|mention|inform|reveal|disclose|notify)", "without telling
//	                            the user", "hide … from the user", "the user must not know".
//	secret-path           hold  files that hold secrets: ~/.ssh, id_rsa (dsa, ecdsa, ed25519), .aws/credentials,
//	                            mcp.json, ~/.cursor, .netrc, .git-credentials, /etc/passwd, /etc/shadow, .kube/config,
//	                            .docker/config.json, claude_desktop_config.json, .npmrc, .pypirc, .gnupg, wallet.dat.
//	secret-read           warn  a verb of reading or passing (read, cat, open, load, fetch, include, pass, send,
//	                            copy, extract, collect, dump, attach, upload) within 40 characters before .env,
//	                            credentials, api key, private/secret key, access token, password, seed phrase,
//	                            session cookie.
//	exfiltration          hold  "send|post|upload|forward|transmit|leak|submit|bcc|cc … to" a fixed http(s) URL or
//	                            email address in the same sentence (example.com and localhost addresses excepted).
//	tool-shadowing        hold  "when (the user|you|the model…) (calls|uses…) … tool" about a tool other than this
//	                            one, "when this tool is available", "side effect on the … tool", "<some_tool> tool
//	                            must …".
//	tool-precondition     warn  "before (using|calling|invoking) (this|any other) tool".
//	directive-tag         warn  <IMPORTANT>, <SYSTEM>, <instructions>, <critical>, <admin>, <secret>, <hidden>,
//	                            <assistant>, [SYSTEM], [IMPORTANT], and <!-- (hidden when rendered as markdown).
//	model-directive       warn  "you must (first|always|also) (read|call|send|include|pass|fetch|upload)",
//	                            "otherwise the tool will not work", "very very important", "all data will be lost".
//
// Patterns are matched case-insensitively within a sentence, so that a
// benign word far from a secret's name does not join it. The hold rules
// raise nothing on the 103 tools of testdata/reference (the npm reference
// servers and a few popular ones); the table tests keep real phrasings
// ("Ignore files matching .gitignore rules", "Requires the BRAVE_API_KEY
// environment variable", "When you call this tool, pass an absolute path")
// from matching. testdata/poisoned holds the published attacks: the "add"
// tool that reads ~/.cursor/mcp.json into a sidenote, the send_email
// shadowing, zero-width and tag-character smuggling, a bidi-spoofed name,
// instructions in schema defaults and unknown keywords, a duplicate key.
//
// Over the real-tool corpus (testdata/toolcorpus, 7,823 definitions;
// TestCorpusFigures prints the counts), mixed-script matches none
// (Chinese and Japanese descriptions included; TestCheckLookalikes holds
// Russian, Greek and Korean ones), and the other hold rules match 27 real
// tools: stray zero-width spaces in one vendor's descriptions, a sentence
// saying ~/.ssh paths are rejected, one "DO NOT mention". Under hold such
// a tool is held until approved anyway; the finding tells the person what
// to read.
//
// The rules are a tripwire, not a proof: text rewritten to avoid them,
// another language, or homoglyphs within one script pass. Pinning is the
// defence that does not depend on them: whatever a tool says, under hold
// a person has read it, and it cannot change afterwards unseen.
package toolpin
