// Package toolsearch ranks MCP tools for a natural-language query with
// BM25 over weighted fields: a small index the host owns, fed with the
// tools of every server and updated a server at a time.
//
//	idx := toolsearch.New()
//	idx.Replace("fs", []toolsearch.Document{{
//		ID: "mcp__fs__read_file", Server: "fs", Name: "read_file",
//		Description: "Read a file from disk",
//		InputSchema: []byte(`{"properties":{"path":{"description":"The file's path"}}}`),
//	}})
//	for _, h := range idx.Search("read a file", 5) {
//		fmt.Println(h.ID, h.Score)
//	}
//
// # Fields and weights
//
// A document is one tool. Its fields, and how much a term found in each
// counts: the tool's name (3), its title (2), its server's name (1.5), its
// description (1), the names of its parameters (inputSchema.properties)
// (1) and their descriptions (0.5). The score is BM25 (k1 1.2, b 0.75)
// over the weighted term frequencies and the weighted document length, as
// BM25F does when all fields share one length normalisation.
//
// # Tokens
//
// Text is split on anything but letters and digits (so snake_case,
// kebab-case, dots and slashes separate words) and at camelCase humps
// ("readFile", "HTTPServer" → read file, http server), and a word in
// humps is also kept whole ("DigitalOcean" → digitalocean, digital,
// ocean), so a brand meets the server or tool that spells it as one word;
// an apostrophe goes with the contraction it starts ("user's" → user,
// "don't" → do); tokens are lowercased, a short list of stop words ("the",
// "a", "to", "mcp", and a request's filler: "please", "just", "need", ...)
// is dropped, and a light stemmer strips suffixes: plural -s, -es and
// -ies (→ -y), -ing and -ed (undoubling a final consonant: "stopped" →
// "stop"), -ied (→ -y), and a final -e on words over four letters, so
// "create", "creates", "created" and "creating" all become "creat". It is
// deliberately crude: no dictionary, no Porter step tables; it only needs
// to make a query's inflection meet a description's.
//
// # Queries
//
// A query is tokenized as a document is, with three differences
// (query.go). A word in humps is the brand alone when the index has it
// whole ("DigitalOcean" is digitalocean, not also digital and ocean). A
// literal value, quoted or data by its shape ('renew passport',
// jane@acme.com, ~/projects/api, #deployments, PROJ-123, 3pm), counts 0.3
// of a word of the request: it says what to act on, not which tool acts.
// And a query that names a server ("my Todoist inbox") multiplies that
// server's tools' scores by 1.5; a term names the servers whose name has
// it when at least half the tools that have the term are theirs ("gitlab"
// names zereight-gitlab; "api" names no hostinger-api).
//
// # Vocabulary
//
// A query is expanded with the words tools use for what it asks
// (vocabulary.go): when it holds a whole entry of a synonym group ("merge
// request" of "pull request | pr | merge request"), the group's other
// entries join it at 0.35 of a query term's weight. vocab/it.txt holds the
// words of software, services and operations, written from how people ask
// and how APIs say it; vocab/wordnet.txt WordNet's synonyms of everyday
// verbs and nouns (gen_wordnet.go, from Debian's wordnet-base);
// vocab/tasks-dev.txt and vocab/tasks-life.txt join the goals and symptoms
// people describe to the actions tools name ("will I need an umbrella" to
// "forecast"), at 0.2. None was written from the tools or the queries the
// search is measured on (the tasks files' headers say what their writers
// were shown).
//
// # Meaning
//
// Vectors adds semantic recall: an Embedder's vector per document, cached
// by the text embedded and filled by Fill off the search path, and
// Nearest, the documents nearest a query by cosine (those under half the
// nearest one's similarity left out). Fuse merges the words' ranking and
// the meaning's by reciprocal rank fusion (k 60).
//
// # Concurrency
//
// An Index is safe for concurrent use: Search takes a read lock, Replace
// and Remove a write lock, and change only the documents of the group
// (server) they name.
package toolsearch
