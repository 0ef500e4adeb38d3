#!/usr/bin/env node
// collect.mjs: builds the tool-search measurement corpus in
// testdata/toolcorpus/. For each server listed in servers.json it installs
// the npm package (or builds the go-sdk example) into a throwaway directory,
// starts it over stdio, does initialize + tools/list (following nextCursor)
// and writes the server's tools to testdata/toolcorpus/<file>.json.
//
// Usage (from the repo root):
//   node scripts/collect-tools/collect.mjs [--work DIR] [--out DIR]
//        [--only a,b,...] [--timeout SECONDS] [--latest] [--jobs N]
//
//   --work DIR     where packages are installed (default /tmp/mcpvisor-toolcorpus)
//   --out DIR      where the corpus is written (default testdata/toolcorpus)
//   --only LIST    only these servers (short names or package names)
//   --timeout S    per-server start + list time-box (default 20; a server's
//                  "timeout" in servers.json overrides it)
//   --latest       install the newest version instead of the pinned one
//   --jobs N       servers collected at once (default 6)
//
// A servers.json entry has package, short, version and optionally args,
// env (dummy values), timeout, overrides (npm overrides for the scratch
// install) and files (dummy files written into the scratch directory;
// "{scratch}" in args is that directory).
//
// Nothing is installed into the repo. Servers are run with a scratch HOME
// and working directory under --work, and with the dummy environment values
// servers.json lists (never real credentials). A server that fails is
// reported and its file is left as it was. Needs node and npm (and go for
// the go-sdk examples).
import { spawn, execFile } from "node:child_process";
import { promisify } from "node:util";
const run = promisify(execFile);
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");

const args = process.argv.slice(2);
function opt(name, def) {
  const i = args.indexOf(name);
  if (i < 0) return def;
  return args[i + 1];
}
const work = path.resolve(opt("--work", "/tmp/mcpvisor-toolcorpus"));
const out = path.resolve(repo, opt("--out", "testdata/toolcorpus"));
const only = opt("--only", "")
  .split(",")
  .map((s) => s.trim())
  .filter(Boolean);
const defaultTimeout = Number(opt("--timeout", "20"));
const latest = args.includes("--latest");
const jobs = Number(opt("--jobs", "6"));

const config = JSON.parse(fs.readFileSync(path.join(here, "servers.json"), "utf8"));
const GO_SDK = config.goSdk; // { module, version, examples: [...] }

fs.mkdirSync(work, { recursive: true });
fs.mkdirSync(out, { recursive: true });

// fileName: the corpus file for a package: "@scope/name" -> "scope__name".
export function fileName(pkg) {
  return pkg.replace(/^@/, "").replace(/\//g, "__");
}

async function installNpm(entry) {
  const dir = path.join(work, "pkgs", fileName(entry.package));
  const spec = latest || !entry.version ? entry.package : `${entry.package}@${entry.version}`;
  const pj = path.join(dir, "node_modules", entry.package, "package.json");
  if (fs.existsSync(pj)) {
    const have = JSON.parse(fs.readFileSync(pj, "utf8")).version;
    if (latest || !entry.version || have === entry.version) return { dir, pj };
  }
  fs.mkdirSync(dir, { recursive: true });
  // overrides (servers.json): npm overrides for the scratch install, for a
  // dependency whose declared source is off the registry (e.g. a github.com
  // tarball); the server's own code is installed unchanged.
  const pkgJson = { private: true, ...(entry.overrides ? { overrides: entry.overrides } : {}) };
  fs.writeFileSync(path.join(dir, "package.json"), JSON.stringify(pkgJson) + "\n");
  // --ignore-scripts: no postinstall downloads (browsers, binaries); the
  // servers only need to start and list their tools.
  await run("npm", ["install", "--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error", spec], {
    cwd: dir,
    timeout: 600_000,
    maxBuffer: 64 << 20,
  });
  return { dir, pj };
}

async function npmCommand(entry) {
  const { pj } = await installNpm(entry);
  const meta = JSON.parse(fs.readFileSync(pj, "utf8"));
  const root = path.dirname(pj);
  let rel;
  if (entry.entry) rel = entry.entry;
  else if (typeof meta.bin === "string") rel = meta.bin;
  else if (meta.bin && typeof meta.bin === "object") {
    const names = Object.keys(meta.bin);
    rel = meta.bin[entry.bin || names[0]];
  }
  if (!rel) throw new Error("package has no bin");
  return { version: meta.version, cmd: process.execPath, argv: [path.join(root, rel), ...(entry.args || [])] };
}

async function goCommand(entry) {
  const bindir = path.join(work, "gobin", GO_SDK.version);
  const bin = path.join(bindir, entry.example);
  if (!fs.existsSync(bin)) {
    fs.mkdirSync(bindir, { recursive: true });
    await run("go", ["install", `${GO_SDK.module}/examples/server/${entry.example}@${GO_SDK.version}`], {
      env: { ...process.env, GOBIN: bindir, GOFLAGS: "-mod=mod" },
      timeout: 600_000,
    });
  }
  return { version: GO_SDK.version, cmd: bin, argv: entry.args || [] };
}

// listTools starts one server and returns its initialize result and tools.
function listTools(entry, cmd, timeoutS) {
  return new Promise((resolve, reject) => {
    const scratch = path.join(work, "run", entry.short);
    fs.rmSync(scratch, { recursive: true, force: true });
    fs.mkdirSync(path.join(scratch, "home"), { recursive: true });
    // files (servers.json): dummy files a server needs at start (e.g. a
    // kubeconfig pointing at nothing), written into the scratch directory.
    for (const [name, content] of Object.entries(entry.files || {})) {
      fs.writeFileSync(path.join(scratch, name), content);
    }
    const env = {
      PATH: process.env.PATH,
      HOME: path.join(scratch, "home"),
      TMPDIR: process.env.TMPDIR || "/tmp",
      LANG: "C.UTF-8",
      NODE_NO_WARNINGS: "1",
      ...(entry.env || {}),
    };
    const argv = cmd.argv.map((a) => a.replaceAll("{scratch}", scratch));
    const child = spawn(cmd.cmd, argv, { cwd: scratch, env, stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    let buf = "";
    let nextId = 1;
    const pending = new Map();
    let done = false;
    const finish = (err, val) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      try {
        child.stdin.end();
      } catch {}
      child.kill("SIGTERM");
      setTimeout(() => child.kill("SIGKILL"), 2000).unref();
      if (err) {
        err.stderr = stderr.slice(-1500);
        reject(err);
      } else resolve(val);
    };
    const timer = setTimeout(() => finish(new Error(`timed out after ${timeoutS}s`)), timeoutS * 1000);
    const send = (msg) => {
      try {
        child.stdin.write(JSON.stringify(msg) + "\n");
      } catch {}
    };
    const request = (method, params) =>
      new Promise((res, rej) => {
        const id = nextId++;
        pending.set(id, { res, rej });
        send({ jsonrpc: "2.0", id, method, params });
      });
    child.on("error", (e) => finish(e));
    child.on("exit", (code, sig) => finish(new Error(`exited (${code ?? sig}) before listing tools`)));
    child.stderr.on("data", (d) => {
      stderr += d;
      if (stderr.length > 20000) stderr = stderr.slice(-10000);
    });
    child.stdin.on("error", () => {});
    child.stdout.on("data", (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, nl).trim();
        buf = buf.slice(nl + 1);
        if (!line.startsWith("{")) continue; // servers that log on stdout
        let msg;
        try {
          msg = JSON.parse(line);
        } catch {
          continue;
        }
        if (msg.method && msg.id !== undefined) {
          // A request from the server: answer roots, refuse the rest.
          if (msg.method === "roots/list") send({ jsonrpc: "2.0", id: msg.id, result: { roots: [] } });
          else if (msg.method === "ping") send({ jsonrpc: "2.0", id: msg.id, result: {} });
          else send({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "not supported by the collector" } });
          continue;
        }
        if (msg.id !== undefined && pending.has(msg.id)) {
          const p = pending.get(msg.id);
          pending.delete(msg.id);
          if (msg.error) p.rej(new Error(`${msg.error.code}: ${msg.error.message}`));
          else p.res(msg.result);
        }
      }
    });
    (async () => {
      const init = await request("initialize", {
        protocolVersion: "2025-06-18",
        capabilities: { roots: { listChanged: false } },
        clientInfo: { name: "mcpvisor-collect-tools", version: "1" },
      });
      send({ jsonrpc: "2.0", method: "notifications/initialized" });
      const tools = [];
      let cursor;
      for (let page = 0; page < 1000; page++) {
        const res = await request("tools/list", cursor ? { cursor } : {});
        tools.push(...(res.tools || []));
        cursor = res.nextCursor;
        if (!cursor) break;
      }
      return { init, tools };
    })().then(
      (v) => finish(null, v),
      (e) => finish(e),
    );
  });
}

function pick(t) {
  const o = { name: t.name };
  for (const k of ["title", "description", "inputSchema", "outputSchema", "annotations"]) {
    if (t[k] !== undefined) o[k] = t[k];
  }
  return o;
}

async function collect(entry) {
  const cmd = entry.kind === "go-sdk-example" ? await goCommand(entry) : await npmCommand(entry);
  const timeoutS = entry.timeout || defaultTimeout;
  const { init, tools } = await listTools(entry, cmd, timeoutS);
  if (!tools.length) throw new Error("tools/list returned no tools");
  const pkg = entry.kind === "go-sdk-example" ? `${GO_SDK.module}/examples/server/${entry.example}` : entry.package;
  const doc = {
    package: pkg,
    version: cmd.version,
    source: entry.kind === "go-sdk-example" ? "go" : "npm",
    server: entry.short,
    args: entry.args || [],
    dummyEnv: Object.keys(entry.env || {}),
    protocolVersion: init.protocolVersion,
    serverInfo: init.serverInfo,
    toolCount: tools.length,
    tools: tools.map(pick),
  };
  const file = path.join(out, fileName(entry.kind === "go-sdk-example" ? `go-sdk__${entry.example}` : entry.package) + ".json");
  // A server may quote its working directory (the scratch dir) in a
  // description; write a placeholder so the corpus does not depend on --work.
  const scratch = path.join(work, "run", entry.short);
  const text = (JSON.stringify(doc, null, tools.length > 300 ? 0 : 1) + "\n").replaceAll(scratch, "<workdir>");
  fs.writeFileSync(file, text);
  return { file, count: tools.length, version: cmd.version };
}

const entries = [
  ...config.servers.map((s) => ({ kind: "npm", ...s })),
  ...GO_SDK.examples.map((e) => ({ kind: "go-sdk-example", ...e })),
].filter((e) => !e.skip && (!only.length || only.includes(e.short) || only.includes(e.package)));

const results = [];
let idx = 0;
async function worker() {
  while (idx < entries.length) {
    const e = entries[idx++];
    const t0 = Date.now();
    try {
      const r = await collect(e);
      results.push({ short: e.short, ok: true, ...r });
      console.log(`ok    ${e.short.padEnd(22)} ${String(r.count).padStart(4)} tools  ${e.package || e.example}@${r.version}  (${Date.now() - t0} ms)`);
    } catch (err) {
      results.push({ short: e.short, ok: false, error: String(err.message || err) });
      const tail = (err.stderr || "").trim().split("\n").slice(-3).join(" | ").slice(0, 400);
      console.log(`FAIL  ${e.short.padEnd(22)} ${e.package || e.example}: ${err.message}${tail ? "  stderr: " + tail : ""}`);
    }
  }
}
await Promise.all(Array.from({ length: jobs }, worker));
const ok = results.filter((r) => r.ok);
console.log(`\n${ok.length}/${results.length} servers, ${ok.reduce((n, r) => n + r.count, 0)} tools collected this run`);
process.exit(0);
