// sdk-client.mjs drives an mcpvisor gateway with the official TypeScript MCP
// SDK client (@modelcontextprotocol/sdk), a real third-party client, and
// reports what it saw as JSON lines on stdout, one per step:
// {"step":"<name>", ...}. It ends with {"step":"done"} and exit code 0, or
// {"step":"fail","error":"..."} and exit code 1. The Go tests
// (gateway/sdk_test.go, cmd/mcpvisor/sdk_stdio_test.go) check the lines.
//
// Usage: node sdk-client.mjs PLAN, where PLAN is a JSON object:
//
//	sdk          absolute directory of the SDK package (internal/peers.SDKClient)
//	transport    "http" or "stdio"
//	url, token   http: the MCP endpoint and the bearer token for every request
//	command, args  stdio: the gateway's command line
//	group        the tool group (server name) to activate
//	echoText     the text to send through the group's echo tool
//	askArgs      the arguments of the group's ask tool (an elicitation)
//	elicitAnswer the content the elicitation handler accepts with
//	silentAbort  http: also abort a call that has sent nothing yet; the
//	             script prints {"step":"waiting"} and aborts once a line
//	             arrives on stdin (the test saw the call reach the server)
//	timeoutMs    the whole run's bound
//
// Every wait is on an event (a response, a notification, a line on stdin);
// timeoutMs only bounds a run that went wrong.
import { fail, out, start, text } from './steps.mjs';
import { createInterface } from 'node:readline';

const plan = JSON.parse(process.argv[2]);

const esm = start(plan.sdk, plan.timeoutMs);
const { Client } = await esm('client/index.js');
const { ElicitRequestSchema, ToolListChangedNotificationSchema } = await esm('types.js');

const ns = (tool) => `mcp__${plan.group}__${tool}`;
const rejection = (e) => ({ code: e?.code, message: String(e?.message ?? e) });

// Every error the SDK reports (a response or progress for an unknown id,
// a broken stream, ...). None is expected before the session closes.
const errors = [];

// answers records, for each tool called over HTTP, how the gateway
// answered the latest POST of that call: a promise of its status,
// Content-Type and whole body, settled once the gateway has ended the
// answer. streams holds the like for each GET (the session's stream).
// These read a copy of each response; the SDK reads the original.
const answers = new Map();
const streams = [];
async function recordingFetch(url, init) {
	let record;
	const settled = new Promise((settle) => (record = settle));
	if (init?.method === 'GET') {
		streams.push(settled);
	} else if (init?.method === 'POST' && typeof init.body === 'string') {
		const msg = JSON.parse(init.body);
		if (msg.method === 'tools/call') {
			answers.set(msg.params.name, settled);
		}
	}
	let res;
	try {
		res = await fetch(url, init);
	} catch (e) {
		record({ fetchError: String(e) });
		throw e;
	}
	const head = { status: res.status, contentType: res.headers.get('content-type') };
	res.clone().text().then(
		(body) => record({ ...head, body }),
		(e) => record({ ...head, readError: String(e) }),
	);
	return res;
}

let transport;
if (plan.transport === 'http') {
	const { StreamableHTTPClientTransport } = await esm('client/streamableHttp.js');
	transport = new StreamableHTTPClientTransport(new URL(plan.url), {
		requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
		fetch: recordingFetch,
		// The SDK reconnects a GET stream that ends, 1 s later by default;
		// the gateway ends it at DELETE, and close, right after, cancels
		// the reconnection. A delay no run reaches keeps that so.
		reconnectionOptions: {
			initialReconnectionDelay: 600000,
			maxReconnectionDelay: 600000,
			reconnectionDelayGrowFactor: 1,
			maxRetries: 2,
		},
	});
} else {
	const { StdioClientTransport } = await esm('client/stdio.js');
	// The gateway's stderr (its logs) goes to ours, which the test keeps.
	transport = new StdioClientTransport({ command: plan.command, args: plan.args, stderr: 'inherit' });
}

const client = new Client(
	{ name: 'mcpvisor-sdk-test', version: '1.0.0' },
	{ capabilities: { elicitation: { form: {} } } },
);
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

const asked = [];
client.setRequestHandler(ElicitRequestSchema, (req) => {
	asked.push({ mode: req.params.mode, message: req.params.message, requestedSchema: req.params.requestedSchema });
	return { action: 'accept', content: plan.elicitAnswer };
});

let stdinLines;
function nextStdinLine() {
	stdinLines ??= createInterface({ input: process.stdin })[Symbol.asyncIterator]();
	return stdinLines.next();
}

try {
	await client.connect(transport);
	out('initialize', {
		server: client.getServerVersion(),
		protocolVersion: transport.protocolVersion ?? null,
		toolsListChanged: client.getServerCapabilities()?.tools?.listChanged ?? false,
	});

	out('list-before', { tools: (await client.listTools()).tools.map((t) => t.name) });

	const seen = listChanged;
	const act = await client.callTool({ name: 'activate_tools', arguments: { groups: [plan.group] } });
	out('activate', { isError: act.isError ?? false, text: text(act) });

	// A server still starting lists its tools later, with another
	// list_changed: list again after each one, a few times at most.
	let tools = [];
	let lists = 0;
	for (let last = seen; lists < 5 && !tools.includes(ns('echo')); lists++) {
		await changedSince(last);
		last = listChanged;
		tools = (await client.listTools()).tools.map((t) => t.name);
	}
	out('list-after', { tools, listChanged: listChanged - seen, lists });

	const echo = await client.callTool({ name: ns('echo'), arguments: { text: plan.echoText } });
	out('echo', { isError: echo.isError ?? false, text: text(echo) });

	const progress = [];
	const prog = await client.callTool({ name: ns('progress'), arguments: { steps: 3, delay_ms: 1 } }, undefined, {
		onprogress: (p) => progress.push(p),
	});
	out('progress', { isError: prog.isError ?? false, text: text(prog), progress });

	const ask = await client.callTool({ name: ns('ask'), arguments: plan.askArgs });
	out('elicit', { isError: ask.isError ?? false, structuredContent: ask.structuredContent ?? null, asked });

	// Abort a call whose answer is streaming: the first progress shows the
	// call is under way (the next would come in ten minutes).
	{
		const ac = new AbortController();
		const before = [];
		let rejected = null;
		try {
			await client.callTool({ name: ns('progress'), arguments: { steps: 2, delay_ms: 600000 } }, undefined, {
				signal: ac.signal,
				onprogress: (p) => {
					before.push(p);
					ac.abort('the test aborts the streaming call');
				},
			});
		} catch (e) {
			rejected = rejection(e);
		}
		out('abort-streaming', { progress: before, rejected, answer: await answers.get(ns('progress')) ?? null });
	}

	// Abort a call that has sent nothing: the test says when the server has
	// it, so the cancel cannot overtake the call.
	if (plan.silentAbort) {
		const ac = new AbortController();
		const call = client.callTool({ name: ns('slow'), arguments: { ms: 600000, started: true } }, undefined, {
			signal: ac.signal,
		});
		const settled = call.then(
			() => null,
			(e) => rejection(e),
		);
		out('waiting', { for: 'the slow call to start' });
		const line = await nextStdinLine();
		if (line.done) throw new Error('stdin ended before the slow call started');
		ac.abort('the test aborts the silent call');
		const rejected = await settled;
		out('abort-silent', { rejected, answer: await answers.get(ns('slow')) ?? null });
	}

	// The session goes on after the cancels.
	await client.ping();
	out('ping');
	const again = await client.callTool({ name: ns('echo'), arguments: { text: plan.echoText + ' again' } });
	out('echo-again', { isError: again.isError ?? false, text: text(again) });

	out('errors', { errors: errors.splice(0) });

	if (plan.transport === 'http') {
		const sessionId = transport.sessionId;
		await transport.terminateSession(); // DELETE
		// The session's GET streams end with it. Once they have, closing
		// (which aborts the SDK's fetches) cannot break one mid-read.
		const ended = await Promise.all(streams);
		out('terminate', {
			sessionId,
			sessionIdAfter: transport.sessionId ?? null,
			streams: ended.map((s) => ({ status: s.status, contentType: s.contentType, error: s.readError ?? s.fetchError ?? null })),
		});
	}
	// close ends a stdio gateway's stdin, waits 2 s for it to exit, then
	// sends SIGTERM: the exit shows whether it ended on its own.
	const child = plan.transport === 'stdio' ? transport._process : undefined;
	await client.close();
	out('closed', {
		errors: errors.splice(0),
		exit: child ? { code: child.exitCode, signal: child.signalCode } : null,
	});
} catch (e) {
	fail(e);
}
out('done');
process.exit(0);
