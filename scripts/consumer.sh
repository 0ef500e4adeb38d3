#!/usr/bin/env bash
# Builds mcpvisor the way a user's program gets it: from a module zip of
# the committed HEAD, served by a file:// GOPROXY under a pseudo-version,
# required with no replace. Two outside programs use it:
#   examples/embed           opens a host on the notes example server and
#                            calls a tool (the README's embedding example);
#   scripts/consumer/upstream links upstream protoactor-go beside mcpvisor
#                            and must not panic at init (PATCHES.md, 16).
# Uncommitted changes are not in the zip: commit first.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
module=github.com/mcpvisor/mcpvisor
start=$SECONDS

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin" "$work/tmp"

if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "consumer: the work tree has uncommitted changes; testing HEAD ($(git rev-parse --short HEAD)) without them"
fi

# The module zip (scripts/modzip is a module of its own: golang.org/x/mod
# stays out of mcpvisor's dependencies).
version=$(cd scripts/modzip && go run . -repo "$root" -module "$module" -out "$work/proxy")
echo "consumer: serving $module@$version from $work/proxy"

# The server the embed example calls, from this work tree.
go build -o "$work/bin/notes" ./examples/servers/notes

# As a user would: the proxy (ours first), the checksum database for
# everything but mcpvisor, which it cannot know; no workspace, no replace.
export GOPROXY="file://$work/proxy,$(go env GOPROXY)"
export GONOSUMDB=$module GOWORK=off GOFLAGS=-buildvcs=false
unset GOLANG_PROTOBUF_REGISTRATION_CONFLICT

# consume DIR NAME: copies DIR to the temp dir, requires mcpvisor@version,
# builds and vets it into $work/bin/NAME.
consume() {
  local src=$1 name=$2 dir=$work/$2
  cp -r "$src" "$dir"
  rm -f "$dir/go.sum"
  (
    cd "$dir"
    # The checked-in version is a placeholder no proxy has: name ours.
    go mod edit -require="$module@$version"
    go get "$module@$version"
    go mod tidy
    if grep -q '^replace' go.mod; then echo "consumer: $name has a replace"; exit 1; fi
    go build -o "$work/bin/$name" .
    go vet ./...
  )
}

consume examples/embed embed
deps=$(cd "$work/embed" && go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' . | grep -c .)
mods=$(cd "$work/embed" && go list -deps -f '{{with .Module}}{{.Path}}{{end}}' . | sort -u | grep -c .)
echo "consumer: embed links $deps non-standard packages from $mods modules"

out=$(cd "$work/tmp" && TMPDIR="$work/tmp" NOTES_BIN="$work/bin/notes" timeout 60 "$work/bin/embed")
echo "$out"
grep -q '^2 + 40 = .*42' <<<"$out" || { echo "consumer: embed did not get 42 from mcp__notes__add"; exit 1; }
grep -q '^session sees' <<<"$out" || { echo "consumer: embed's session call did not finish"; exit 1; }

consume scripts/consumer/upstream upstream
(cd "$work/tmp" && timeout 60 "$work/bin/upstream")

echo "consumer: ok in $((SECONDS - start))s"
