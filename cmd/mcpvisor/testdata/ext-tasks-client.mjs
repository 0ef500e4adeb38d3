// ext-tasks-client.mjs drives mcpvisor's gateway with the official client
// of the tasks extension (io.modelcontextprotocol/tasks, SEP-2663),
// @modelcontextprotocol/ext-tasks, on the TypeScript SDK's v2 client
// (@modelcontextprotocol/client) in the 2026-07-28 era, and reports what it
// saw as JSON lines on stdout, one per step: {"step":"<name>", ...}. It
// ends with {"step":"done"} and exit code 0, or {"step":"fail","error":"..."}
// and exit code 1, as internal/peers.RunSteps reads them. The Go test is
// cmd/mcpvisor/exttasks_test.go.
//
// Usage: node ext-tasks-client.mjs PLAN, where PLAN is a JSON object:
//
//	client       absolute directory of @modelcontextprotocol/client (internal/peers.ClientV2)
//	extTasks     absolute directory of @modelcontextprotocol/ext-tasks (internal/peers.ExtTasks)
//	url, token   the MCP endpoint and the bearer token for every request
//	calls        [{step, name, arguments, preference, cancel}]: session.callTool
//	             in order, one step each; preference is ext-tasks' task
//	             preference ("require": a call that gets no task fails);
//	             cancel: the execution is cancelled (tasks/cancel) once it
//	             has its task, then settled, and the task read again
//	             ("afterCancel": its status)
//	answers      the input handler accepts every elicitation form with, for
//	             each property the form asks for, answers[property]
//	callTimeoutMs  each request's bound
//	timeoutMs    the whole run's bound
//
// ext-tasks needs two adapters for a 2026-07-28 server that the SDK does
// not give (its README, "Adapters and schemas"): rawDispatch, because the
// SDK's result decoding rejects resultType "task" and strips resultType
// from the results the extension's schemas check, and v2RequestFraming, the
// _meta envelope the SDK writes for its own requests. rawDispatch here
// sends the framed request through the SDK client's own transport (which
// derives the MCP-Protocol-Version, Mcp-Method and Mcp-Name headers from
// the body) and takes its response off the transport before the client
// sees it. Each call's step has every message of the extension's requests
// ("raw"), so the test can tell a task from a plain result.
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
// resolve them. ext-tasks imports the client by name from its own place
// in that node_modules, which resolves to the same file: one Client class.
const load = (dir, ...path) => import(pathToFileURL(join(dir, ...path)).href);
const { Client, StreamableHTTPClientTransport } = await load(plan.client, 'dist', 'index.mjs');
const { createTaskSessionFromClient, resultFromTaskOutcome } = await load(plan.extTasks, 'dist', 'client', 'index.js');

const PROTOCOL_VERSION = '2026-07-28';
const clientInfo = { name: 'mcpvisor-ext-tasks-test', version: '1.0.0' };
const clientCapabilities = { elicitation: { form: {} } };

const transport = new StreamableHTTPClientTransport(new URL(plan.url), {
	requestInit: { headers: { Authorization: `Bearer ${plan.token}` } },
});

// The responses to rawDispatch's requests, by id, are taken off the
// transport; everything else goes to the client.
const pending = new Map();
let receive;
Object.defineProperty(transport, 'onmessage', {
	configurable: true,
	get: () =>
		receive &&
		((m, extra) => {
			const waiter = m.id !== undefined && m.method === undefined ? pending.get(m.id) : undefined;
			if (waiter === undefined) return receive(m, extra);
			pending.delete(m.id);
			waiter(m);
		}),
	set: (fn) => (receive = fn),
});

// raw is what the extension's requests sent and got, in order.
let raw = [];
function rawSummary(dir, m) {
	const e = { dir, id: m.id ?? null };
	if (m.method) {
		const p = m.params ?? {};
		Object.assign(e, {
			method: m.method,
			name: p.name ?? null,
			taskId: p.taskId ?? null,
			inputResponses: Object.keys(p.inputResponses ?? {}),
			requestState: typeof p.requestState === 'string',
			declaresTasks: p._meta?.['io.modelcontextprotocol/clientCapabilities']?.extensions?.['io.modelcontextprotocol/tasks'] !== undefined,
		});
	} else if (m.result) {
		Object.assign(e, {
			resultType: m.result.resultType ?? null,
			taskId: m.result.taskId ?? null,
			status: m.result.status ?? null,
			inputRequests: Object.keys(m.result.inputRequests ?? {}),
			// A completed task's result, inlined: the resultType it carries.
			inlined: m.result.result !== undefined,
			inlinedResultType: m.result.result?.resultType ?? null,
		});
	} else if (m.error) {
		e.error = { code: m.error.code, message: m.error.message };
	}
	return e;
}

let rawSeq = 0;
// rawDispatch is ext-tasks' RawClientDispatch: one JSON-RPC request,
// already framed (its _meta carries the protocol version, client info and
// capabilities with the extension), sent as it is, answered with the
// response as it came.
async function rawDispatch(request, options = {}) {
	const id = `ext-tasks-${++rawSeq}`;
	const message = { jsonrpc: '2.0', id, ...request };
	raw.push(rawSummary('out', message));
	const signal = options.signal;
	const response = await new Promise((resolve, reject) => {
		const timer = setTimeout(() => {
			pending.delete(id);
			reject(new Error(`${request.method}: no response after ${plan.callTimeoutMs} ms`));
		}, plan.callTimeoutMs);
		const settle = (fn) => (v) => {
			clearTimeout(timer);
			signal?.removeEventListener('abort', onAbort);
			fn(v);
		};
		const onAbort = () => {
			pending.delete(id);
			settle(reject)(signal.reason ?? new DOMException('The operation was aborted', 'AbortError'));
		};
		if (signal?.aborted) return onAbort();
		signal?.addEventListener('abort', onAbort, { once: true });
		pending.set(id, settle(resolve));
		transport.send(message).catch((e) => {
			pending.delete(id);
			settle(reject)(e);
		});
	});
	raw.push(rawSummary('in', response));
	return response.error !== undefined
		? { kind: 'error', error: response.error }
		: { kind: 'result', result: response.result };
}

const client = new Client(clientInfo, {
	capabilities: clientCapabilities,
	versionNegotiation: { mode: { pin: PROTOCOL_VERSION } },
});
const errors = [];
client.onerror = (e) => errors.push(String(e?.message ?? e));

let asked = [];
async function onInputRequest(request, context) {
	if (request.kind !== 'elicitation') throw new Error(`unexpected ${request.kind} input request`);
	const fields = Object.keys(request.params.requestedSchema?.properties ?? {});
	asked.push({ message: request.params.message, fields, scope: context.scope, delivery: context.delivery, taskId: context.taskId ?? null });
	return { action: 'accept', content: Object.fromEntries(fields.map((f) => [f, plan.answers[f]])) };
}

const text = (res) => (res?.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');

try {
	await client.connect(transport);
	const session = createTaskSessionFromClient(client, {
		endpointId: plan.url,
		rawDispatch,
		v2RequestFraming: { protocolVersion: client.getNegotiatedProtocolVersion(), clientInfo, clientCapabilities },
		onInputRequest,
		onError: (e) => errors.push(`ext-tasks: ${e.message}`),
	});
	out('connect', {
		era: client.getProtocolEra(),
		protocolVersion: client.getNegotiatedProtocolVersion(),
		server: client.getServerVersion() ?? null,
		capabilities: session.capabilities,
	});

	// A call that fails is reported, and the run goes on.
	for (const call of plan.calls) {
		asked = [];
		raw = [];
		const fields = { kind: null, taskId: null, outcome: null, isError: false, text: '', rejected: null, lastTask: null };
		try {
			const execution = await session.callTool(call.name, call.arguments ?? {}, {
				requestTimeoutMs: plan.callTimeoutMs,
				...(call.preference ? { task: { preference: call.preference } } : {}),
			});
			fields.kind = execution.kind;
			fields.taskId = execution.handle?.taskId ?? null;
			if (call.cancel) await execution.cancel(); // tasks/cancel
			const { outcome, lastTask } = await execution.settle();
			fields.outcome = outcome.status;
			fields.lastTask = lastTask ? { taskId: lastTask.taskId, status: lastTask.status } : null;
			if (call.cancel) {
				// ext-tasks settles a cancelled execution without asking
				// again: what the server says of the task now (tasks/get).
				const now = await session.task(fields.taskId, { requestTimeoutMs: plan.callTimeoutMs }).snapshot();
				fields.afterCancel = now.status;
			}
			const res = resultFromTaskOutcome(outcome);
			fields.isError = res.isError ?? false;
			fields.text = text(res);
		} catch (e) {
			fields.rejected = { name: e?.name ?? null, code: e?.code ?? null, message: String(e?.message ?? e) };
		}
		out(call.step, { ...fields, asked, raw, errors: errors.splice(0) });
	}

	out('errors', { errors: errors.splice(0) });
	await session.close();
	await client.close();
} catch (e) {
	fail(e);
}
out('done');
process.exit(0);
