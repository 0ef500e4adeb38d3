#!/usr/bin/env bash
# Installs the MCP inspector's command-line client, once, into
# .cache/inspector/ (git-ignored), apart from .cache/peers so that its own
# copy of the TypeScript SDK never moves the one the peers pin:
#   @modelcontextprotocol/inspector@2.12.0   `mcp-inspector --cli`, the one-shot
#                                            client a newcomer tries first
# It runs on the Node 22 that scripts/peers.sh installs. `make peers` runs
# this after peers.sh. Never fails the build for want of the network: the
# test that needs it then skips (fails when CI is set; internal/peers).
set -euo pipefail

cd "$(dirname "$0")/.."

PKG=@modelcontextprotocol/inspector
VERSION=2.12.0 # keep in step with internal/peers.InspectorVersion
CACHE=.cache/inspector
CLI=$CACHE/node_modules/$PKG/clients/launcher/build/index.js

if [ -f "$CLI" ] && grep -q "\"version\": \"$VERSION\"" "$CACHE/node_modules/$PKG/package.json" 2>/dev/null; then
	[ "${PEERS_QUIET:-}" = 1 ] || echo "inspector: $PKG@$VERSION in $CACHE"
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "inspector: npm not found; the test that drives the inspector's CLI will skip (fail when CI is set)" >&2
	exit 0
fi
echo "inspector: installing $PKG@$VERSION into $CACHE"
mkdir -p "$CACHE"
if ! npm install --prefix "$CACHE" --save-exact --no-audit --no-fund --loglevel=error "$PKG@$VERSION"; then
	echo "inspector: npm registry unreachable; the test that drives the inspector's CLI will skip (fail when CI is set)" >&2
	exit 0
fi
echo "inspector: $PKG@$VERSION in $CACHE"
