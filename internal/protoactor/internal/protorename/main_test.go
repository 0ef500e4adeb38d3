package main

import (
	"strings"
	"testing"
)

// The checked-in .pb.go files are the generator's output: a refresh from
// upstream that forgot to run it fails here, not in a consumer's init.
func TestGeneratedFilesAreRenamed(t *testing.T) {
	changed, err := Run("../..", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(changed) > 0 {
		t.Fatalf("run `go run ./internal/protorename` in internal/protoactor; these files are not renamed: %v", changed)
	}
}

func TestRenameIsPrefixOnly(t *testing.T) {
	r := renamer{packages: map[string]string{}, paths: map[string]string{}}
	r.addFile("actor", "actor.proto")
	r.addFile(packagePrefix+"remote", pathPrefix+"remote.proto")
	for in, want := range map[string]string{
		".actor.PID":                     ".mcpvisor.protoactor.actor.PID",
		"actor.PID":                      "mcpvisor.protoactor.actor.PID",
		".mcpvisor.protoactor.actor.PID": ".mcpvisor.protoactor.actor.PID",
		"remote.Remoting":                "mcpvisor.protoactor.remote.Remoting",
		".google.protobuf.Any":           ".google.protobuf.Any",
		".actorx.PID":                    ".actorx.PID",
	} {
		if got := r.fullName(in); got != want {
			t.Errorf("fullName(%q) = %q, want %q", in, got, want)
		}
	}
	if got := r.paths["actor.proto"]; got != "mcpvisor/protoactor/actor.proto" {
		t.Errorf("path of actor.proto = %q", got)
	}
	grpc := string(r.rewriteGRPC([]byte("// source: remote.proto\n" +
		`x := "/remote.Remoting/Receive"; y := "remote.Remoting"; z := "remote.proto"; w := "google.golang.org/grpc"`)))
	for _, want := range []string{
		"// source: mcpvisor/protoactor/remote.proto",
		`"/mcpvisor.protoactor.remote.Remoting/Receive"`,
		`"mcpvisor.protoactor.remote.Remoting"`,
		`"mcpvisor/protoactor/remote.proto"`,
		`"google.golang.org/grpc"`,
	} {
		if !strings.Contains(grpc, want) {
			t.Errorf("rewriteGRPC output lacks %s:\n%s", want, grpc)
		}
	}
}
