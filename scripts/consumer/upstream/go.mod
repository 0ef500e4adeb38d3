// A program that links both mcpvisor and upstream protoactor-go: the
// copy's protobuf names must not collide with upstream's (mcpvisor patch
// 16). scripts/consumer.sh sets the mcpvisor version to the commit under
// test.
module example.com/upstream

go 1.26.0

require (
	github.com/asynkron/protoactor-go v0.0.0-20240822202345-3c0e61ca19c9
	github.com/mcpvisor/mcpvisor v0.0.0-00010101000000-000000000000
)
