// An outside program that embeds mcpvisor: a module of its own, requiring
// only mcpvisor, with no replace. scripts/consumer.sh (make consumer)
// builds it against a module zip of the commit under test, setting the
// version below to that commit's pseudo-version with go get; a program of
// your own requires a published version instead.
module example.com/embed

go 1.26.0

require github.com/mcpvisor/mcpvisor v0.0.0-00010101000000-000000000000
