package actor

import (
	"strings"
	"testing"
)

// mcpvisor patch 16: the copy's descriptors must not share names with
// upstream protoactor-go's, or a program linking both panics at init.
func TestProtoNamesAreTheCopys(t *testing.T) {
	if got := File_actor_proto.Path(); got != "mcpvisor/protoactor/actor.proto" {
		t.Errorf("file path = %q", got)
	}
	if got := (&PID{}).ProtoReflect().Descriptor().FullName(); !strings.HasPrefix(string(got), "mcpvisor.protoactor.actor.") {
		t.Errorf("PID's full name = %q", got)
	}
}
