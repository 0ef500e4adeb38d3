// steps.mjs is what the SDK client scripts (sdk-client.mjs,
// hosttools-client.mjs) share: their JSON-lines report, one line a step
// ({"step":"<name>", ...}, ending with {"step":"done"} or
// {"step":"fail","error":"..."} and exit code 1, as internal/peers.RunSteps
// reads it), the run's bound, and loading the SDK.
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export function out(step, fields = {}) {
	process.stdout.write(JSON.stringify({ step, ...fields }) + '\n');
}

export function fail(err) {
	out('fail', { error: err instanceof Error ? `${err.message}\n${err.stack}` : String(err) });
	process.exit(1);
}

// start fails the run on any uncaught error or after timeoutMs, and
// returns the loader of the SDK's modules. The SDK lives in another
// node_modules, where a script cannot import it by name: its files are
// imported by URL, as its exports map ("./*" → "./dist/esm/*") would
// resolve "@modelcontextprotocol/sdk/<path>".
export function start(sdk, timeoutMs) {
	process.on('unhandledRejection', fail);
	process.on('uncaughtException', fail);
	setTimeout(() => fail(`timed out after ${timeoutMs} ms`), timeoutMs).unref();
	return (path) => import(pathToFileURL(join(sdk, 'dist', 'esm', path)).href);
}

// text joins a tools/call result's text blocks.
export const text = (res) => (res.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('\n');
