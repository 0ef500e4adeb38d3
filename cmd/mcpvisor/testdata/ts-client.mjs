// ts-client.mjs drives mcpvisor's gateway with an official TypeScript MCP
// client, either @modelcontextprotocol/sdk 1.x (legacy era only) or
// @modelcontextprotocol/client 2.x (legacy, or the 2026-07-28 era), and
// reports what it saw as JSON lines on stdout, one per step:
// {"step":"<name>", ...}. It ends with {"step":"done"} and exit code 0, or
// {"step":"fail","error":"..."} and exit code 1, as internal/peers.RunSteps
// reads them. The Go tests (cmd/mcpvisor/tsclient_test.go) check the lines.
//
// Usage: node ts-client.mjs PLAN, where PLAN is a JSON object:
//
//	sdk          "v1" (@modelcontextprotocol/sdk) or "v2" (@modelcontextprotocol/client)
//	dir          absolute directory of that package (internal/peers.SDKClient, ClientV2)
//	era          v2: "legacy" (versionNegotiation mode 'legacy', the default:
//	             initialize) or "modern" (mode {pin: '2026-07-28'}: server/discover,
//	             no initialize, no fallback); v1 is always legacy
//	transport    "http" or "stdio"
//	url, token   http: the MCP endpoint and the bearer token for every request
//	command, args  stdio: the gateway's command line
//	tools        names to wait for: the script lists the tools, and lists
//	             again after each notifications/tools/list_changed (modern:
//	             on a subscriptions/listen stream) until all are there
//	calls        [{step, name, arguments}]: tools/call in order, one step each
//	answers      the elicitation handler accepts every form with, for each
//	             property the form asks for, answers[property]
//	callTimeoutMs  each call's bound (the client's request timeout)
//	timeoutMs    the whole run's bound
//
// Each call's step has the messages the client sent and received while it
// ran ("wire"), read at the transport, and, over HTTP, each POST's MCP
// headers, so the test can tell an input_required round from a
// server-to-client request. Every wait is on an event; timeoutMs only
// bounds a run that went wrong.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const plan = JSON.parse(process.argv[2]);

function out(step, fields = {}) {
	process.stdout.write(JSON.stringify({ step, ...fields }) + '\n');
}

function fail(err) {
	out('fail', { error: err instanceof Error ? `${err.message}\n${err.stack}` : String(err) });
	process.exit(1);
}

process.on('unhandledRejection', fail);
process.on('uncaughtException', fail);
setTimeout(() => fail(`timed out after ${plan.timeoutMs} ms`), plan.timeoutMs).unref();

// The packages live in another node_modules, where a script cannot import
// them by name: their files are imported by URL, as their exports maps
// resolve them.
const load = (...path) => import(pathToFileURL(join(plan.dir, ...path)).href);
let Client, StreamableHTTPClientTransport, StdioClientTransport, onElicit, onToolsChanged;
if (plan.sdk === 'v1') {
	({ Client } = await load('dist', 'esm', 'client', 'index.js'));
	({ StreamableHTTPClientTransport } = await load('dist', 'esm', 'client', 'streamableHttp.js'));
	({ StdioClientTransport } = await load('dist', 'esm', 'client', 'stdio.js'));
	const { ElicitRequestSchema, ToolListChangedNotificationSchema } = await load('dist', 'esm', 'types.js');
	onElicit = (client, fn) => client.setRequestHandler(ElicitRequestSchema, fn);
	onToolsChanged = (client, fn) => client.setNotificationHandler(ToolListChangedNotificationSchema, fn);
} else {
	({ Client, StreamableHTTPClientTransport } = await load('dist', 'index.mjs'));
	({ StdioClientTransport } = await load('dist', 'stdio.mjs'));
	onElicit = (client, fn) => client.setRequestHandler('elicitation/create', fn);
	onToolsChanged = (client, fn) => client.setNotificationHandler('notifications/tools/list_changed', fn);
}
const modern = plan.sdk === 'v2' && plan.era === 'modern';

// wire records every message through the transport, and posts every
// POST's MCP headers, in order.
const wire = [];
const posts = [];
const PV_META = 'io.modelcontextprotocol/protocolVersion';
const SUB_META = 'io.modelcontextprotocol/subscriptionId';
function summary(dir, m) {
	const e = { dir, id: m.id ?? null };
	if (m.method) {
		e.method = m.method;
		const p = m.params ?? {};
		e.protocolVersionMeta = p._meta?.[PV_META] ?? null;
		e.subscriptionId = p._meta?.[SUB_META] ?? null;
		if (m.method === 'tools/call') {
			e.name = p.name;
			e.requestState = typeof p.requestState === 'string';
			e.inputResponses = Object.keys(p.inputResponses ?? {});
		}
	} else if (m.result) {
		e.protocolVersion = m.result.protocolVersion ?? null; // initialize's
		e.resultType = m.result.resultType ?? null;
		e.inputRequests = Object.keys(m.result.inputRequests ?? {});
	} else if (m.error) {
		e.error = { code: m.error.code, message: m.error.message };
	}
	return e;
}
async function recordingFetch(url, init) {
	if (init?.method === 'POST') {
		const h = new Headers(init.headers);
		posts.push({
			protocolVersion: h.get('mcp-protocol-version'),
			method: h.get('mcp-method'),
			name: h.get('mcp-name'),
			session: h.get('mcp-session-id') !== null,
		});
	}
	return fetch(url, init);
}

let transport;
if (plan.transport === 'http') {
	transport = new StreamableHTTPClientTransport(new URL(plan.url), {
		requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
		fetch: recordingFetch,
		// A legacy session's GET stream that ends is reopened 1 s later by
		// default; close, right after the gateway ends it, cancels that.
		reconnectionOptions: {
			initialReconnectionDelay: 600000,
			maxReconnectionDelay: 600000,
			reconnectionDelayGrowFactor: 1,
			maxRetries: 2,
		},
	});
} else {
	// The gateway's stderr (its logs) goes to ours, which the test keeps.
	transport = new StdioClientTransport({ command: plan.command, args: plan.args, stderr: 'inherit' });
}
const send = transport.send.bind(transport);
transport.send = (m, opts) => {
	wire.push(summary('out', m));
	return send(m, opts);
};
// The client sets the transport's onmessage at connect; the transport
// calls what it reads back.
let receive;
const recordIn = (m, extra) => {
	wire.push(summary('in', m));
	return receive(m, extra);
};
Object.defineProperty(transport, 'onmessage', {
	configurable: true,
	get: () => (receive ? recordIn : undefined),
	set: (fn) => (receive = fn),
});

const options = { capabilities: { elicitation: { form: {} } } };
if (plan.sdk === 'v2') {
	options.versionNegotiation = { mode: modern ? { pin: '2026-07-28' } : 'legacy' };
}
const client = new Client({ name: 'mcpvisor-ts-test', version: '1.0.0' }, options);
const errors = [];
client.onerror = (e) => errors.push(String(e?.message ?? e));

let listChanged = 0;
let changeWaiters = [];
onToolsChanged(client, () => {
	listChanged++;
	for (const wake of changeWaiters.splice(0)) wake();
});
const changedSince = (seen) =>
	listChanged > seen ? Promise.resolve() : new Promise((wake) => changeWaiters.push(wake));

let asked = [];
onElicit(client, (req) => {
	const fields = Object.keys(req.params.requestedSchema?.properties ?? {});
	asked.push({ message: req.params.message, fields });
	return { action: 'accept', content: Object.fromEntries(fields.map((f) => [f, plan.answers[f]])) };
});

const text = (res) => (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

try {
	await client.connect(transport);
	const initializeResult = wire.find((w) => w.dir === 'in' && w.protocolVersion);
	out('connect', {
		era: plan.sdk === 'v2' ? client.getProtocolEra() : 'legacy',
		// v1 keeps the negotiated version only on its HTTP transport.
		protocolVersion: plan.sdk === 'v2' ? client.getNegotiatedProtocolVersion() : initializeResult?.protocolVersion,
		server: client.getServerVersion() ?? null,
		wire: wire.splice(0),
		posts: posts.splice(0),
	});

	if (plan.tools?.length) {
		// A modern client hears of list changes only on a listen stream.
		const sub = modern ? await client.listen({ toolsListChanged: true }) : null;
		let tools = [];
		let lists = 0;
		for (let last = listChanged; lists < 6; lists++) {
			if (lists > 0) {
				await changedSince(last);
				last = listChanged;
			}
			tools = (await client.listTools()).tools.map((t) => t.name);
			if (plan.tools.every((n) => tools.includes(n))) break;
		}
		await sub?.close();
		out('tools', { tools, lists: lists + 1, listChanged, honored: sub?.honoredFilter ?? null, wire: wire.splice(0) });
		posts.splice(0);
	}

	// A call that fails is reported, and the run goes on.
	for (const call of plan.calls) {
		asked = [];
		let res = {};
		let rejected = null;
		try {
			const params = { name: call.name, arguments: call.arguments ?? {} };
			const opts = { timeout: plan.callTimeoutMs };
			// v1: callTool(params, resultSchema, options); v2: callTool(params, options).
			res = await (plan.sdk === 'v1' ? client.callTool(params, undefined, opts) : client.callTool(params, opts));
		} catch (e) {
			rejected = { code: e?.code ?? null, message: String(e?.message ?? e) };
		}
		out(call.step, {
			rejected,
			isError: res.isError ?? false,
			text: text(res),
			structuredContent: res.structuredContent ?? null,
			asked,
			wire: wire.splice(0),
			posts: posts.splice(0),
			errors: errors.splice(0),
		});
	}

	out('errors', { errors: errors.splice(0) });
	if (plan.transport === 'http' && transport.sessionId) {
		await transport.terminateSession(); // DELETE
	}
	// close ends a stdio gateway's stdin, waits 2 s for it to exit, then
	// sends SIGTERM: the exit shows whether it ended on its own.
	const child = plan.transport === 'stdio' ? transport._process : undefined;
	await client.close();
	out('closed', { exit: child ? { code: child.exitCode, signal: child.signalCode } : null });
} catch (e) {
	fail(e);
}
out('done');
process.exit(0);
