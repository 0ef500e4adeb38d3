// hosttools-client.mjs drives an mcpvisor gateway's host tools with the
// official TypeScript MCP SDK client (@modelcontextprotocol/sdk): a model
// that manages its own MCP servers, without a model. It reports what it saw
// as JSON lines on stdout, one per step: {"step":"<name>", ...}. It ends
// with {"step":"done"} and exit code 0, or {"step":"fail","error":"..."}
// and exit code 1. gateway/hosttools_e2e_test.go checks the lines.
//
// Usage: node hosttools-client.mjs PLAN, where PLAN is a JSON object:
//
//	sdk          absolute directory of the SDK package (internal/peers.SDKClient)
//	url          the gateway's Streamable HTTP endpoint
//	mode         which part of the scenario to run (the test restarts the
//	             host between them):
//	               "register": activate config, register_mcp the server,
//	                 activate it, call its tools, list_items, disable it
//	               "restart": activate config, list_items, enable the
//	                 server, call its tools, delete_mcp it (twice: the test
//	                 denies the first), list_items
//	               "gone": activate config, list_items
//	server       the name the server is registered under
//	register     register_mcp's arguments (mode "register")
//	echoText     the text to send through the server's echo tool
//	timeoutMs    the whole run's bound
//
// After the step "pid" (the server's process id) the script waits for a
// line on stdin: the test looks at that process while it runs.
//
// Every wait is on an event (a response, a notification, a line on
// stdin); timeoutMs only bounds a run that went wrong.
import { fail, out, start, text } from './steps.mjs';
import { createInterface } from 'node:readline';

const plan = JSON.parse(process.argv[2]);

const esm = start(plan.sdk, plan.timeoutMs);
const { Client } = await esm('client/index.js');
const { StreamableHTTPClientTransport } = await esm('client/streamableHttp.js');
const { ToolListChangedNotificationSchema } = await esm('types.js');

const ns = (tool) => `mcp__${plan.server}__${tool}`;
// result is what a step reports of a tools/call result.
const result = (res) => ({
	isError: res.isError ?? false,
	text: text(res),
	structuredContent: res.structuredContent ?? null,
});

// Every error the SDK reports. None is expected before the session closes.
const errors = [];

// streams holds, for each GET (the session's stream), a promise settled
// once the gateway has ended it; read from a copy of the response.
const streams = [];
async function recordingFetch(url, init) {
	const res = await fetch(url, init);
	if (init?.method === 'GET') {
		const head = { status: res.status, contentType: res.headers.get('content-type') };
		streams.push(
			res.clone().text().then(
				() => head,
				(e) => ({ ...head, error: String(e) }),
			),
		);
	}
	return res;
}

const transport = new StreamableHTTPClientTransport(new URL(plan.url), {
	fetch: recordingFetch,
	// A GET stream the gateway ends (DELETE) is not reconnected before
	// close cancels the reconnection (see sdk-client.mjs).
	reconnectionOptions: {
		initialReconnectionDelay: 600000,
		maxReconnectionDelay: 600000,
		reconnectionDelayGrowFactor: 1,
		maxRetries: 2,
	},
});
const client = new Client({ name: 'mcpvisor-hosttools-test', version: '1.0.0' }, { capabilities: {} });
client.onerror = (e) => errors.push(String(e?.message ?? e));

let listChanged = 0;
let changeWaiters = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
	listChanged++;
	for (const wake of changeWaiters.splice(0)) wake();
});
// changedSince resolves once more than seen list_changed have arrived.
const changedSince = (seen) =>
	listChanged > seen ? Promise.resolve() : new Promise((wake) => changeWaiters.push(wake));

const listTools = async () =>
	(await client.listTools()).tools.map((t) => ({ name: t.name, annotations: t.annotations ?? null }));

// callThenList calls a tool that changes this session's tools, then waits
// for notifications/tools/list_changed and lists the tools after each one
// until done(names) holds (a few lists at most: a server still starting
// lists its tools with another list_changed). Without the notification it
// waits until timeoutMs: the run fails. A call that failed changed
// nothing: it is reported at once.
async function callThenList(name, args, done) {
	const seen = listChanged;
	const res = await client.callTool({ name, arguments: args });
	if (res.isError) return { call: result(res), tools: [], listChanged: 0, lists: 0 };
	let tools = [];
	let lists = 0;
	for (let last = seen; lists < 5 && (lists === 0 || !done(tools.map((t) => t.name))); lists++) {
		await changedSince(last);
		last = listChanged;
		tools = await listTools();
	}
	return { call: result(res), tools, listChanged: listChanged - seen, lists };
}

let stdinLines;
async function awaitTest(what) {
	stdinLines ??= createInterface({ input: process.stdin })[Symbol.asyncIterator]();
	const line = await stdinLines.next();
	if (line.done) throw new Error(`stdin ended before the test ${what}`);
}

// pidStep reports the server's process id, and waits for the test to
// have checked that process.
async function pidStep() {
	out('pid', await call(ns('pid'), {}));
	await awaitTest('checked the server process');
}

const call = async (name, args) => result(await client.callTool({ name, arguments: args }));
const hasServerTools = (names) => names.some((n) => n.startsWith(ns('')));

try {
	await client.connect(transport);
	out('initialize', {
		server: client.getServerVersion(),
		protocolVersion: transport.protocolVersion ?? null,
		toolsListChanged: client.getServerCapabilities()?.tools?.listChanged ?? false,
	});
	out('list-before', { tools: await listTools() });

	out('activate-config', await callThenList('activate_tools', { groups: ['config'] }, (names) => names.includes('list_items')));

	switch (plan.mode) {
		case 'register': {
			out('register', await call('register_mcp', plan.register));
			out('activate-server', await callThenList('activate_tools', { groups: [plan.server] }, (names) => names.includes(ns('echo'))));
			out('echo', await call(ns('echo'), { text: plan.echoText }));
			await pidStep();
			out('list-items', await call('list_items', { type: 'mcp' }));
			out('disable', await callThenList('toggle_item', { kind: 'mcp', id: plan.server, enabled: false }, (names) => !hasServerTools(names)));
			out('list-items-disabled', await call('list_items', { type: 'mcp' }));
			break;
		}
		case 'restart': {
			out('list-items', await call('list_items', { type: 'mcp' }));
			out('enable', await call('toggle_item', { kind: 'mcp', id: plan.server, enabled: true }));
			out('activate-server', await callThenList('activate_tools', { groups: [plan.server] }, (names) => names.includes(ns('echo'))));
			out('echo', await call(ns('echo'), { text: plan.echoText }));
			await pidStep();
			out('list-items-enabled', await call('list_items', { type: 'mcp' }));
			// The test denies the first delete_mcp: nothing may change.
			out('delete-denied', await call('delete_mcp', { name: plan.server }));
			out('list-items-kept', await call('list_items', { type: 'mcp' }));
			out('delete', await callThenList('delete_mcp', { name: plan.server }, (names) => !hasServerTools(names)));
			out('list-items-deleted', await call('list_items', { type: 'mcp' }));
			break;
		}
		case 'gone':
			out('list-items', await call('list_items', { type: 'mcp' }));
			break;
		default:
			throw new Error(`unknown mode ${plan.mode}`);
	}

	out('errors', { errors: errors.splice(0) });
	const sessionId = transport.sessionId;
	await transport.terminateSession(); // DELETE
	// The GET stream ends with the session; once it has, close cannot
	// break it mid-read.
	const ended = await Promise.all(streams);
	out('terminate', { sessionId, sessionIdAfter: transport.sessionId ?? null, streams: ended });
	await client.close();
	out('closed', { errors: errors.splice(0) });
} catch (e) {
	fail(e);
}
out('done');
process.exit(0);
