// Drives one MCP server over stdio with the official TypeScript SDK client
// (`Client` over `StdioClientTransport`, which writes one message per write,
// as every real client does), for prompt-host-bench.
//
//   node bench/sdk-driver.mjs ROUNDS_JSON -- PROGRAM [ARGS...]
//
// ROUNDS_JSON is a list of loads, e.g. [{"total":3000,"inFlight":1}]. Each
// load keeps `inFlight` prompts/get of code_review outstanding until `total`
// have been answered. It prints the server's pid first, as {"pid": N}. For
// each load it prints {"ready": true} and waits for a line on stdin
// (prompt-host-bench reads the server's CPU time and context switches
// there), runs the load, prints {"total", "inFlight", "seconds",
// "latenciesUs": [p50, p99]} and waits for another line (prompt-host-bench
// reads them again) before it goes on; after the last load it closes the
// client, which ends the server. Every reply is checked.

import { createInterface } from "node:readline";
import { createRequire } from "node:module";

// The SDK is installed once, for the end-to-end tests, by tests/setup.
const require = createRequire(new URL("../tests/package.json", import.meta.url));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StdioClientTransport } = await import(require.resolve("@modelcontextprotocol/sdk/client/stdio.js"));

const CODE = "def hello():\n    print('world')";
const EXPECTED_TEXT = "Please review this Python code:\ndef hello():\n    print('world')";

const separator = process.argv.indexOf("--");
if (separator !== 3 || process.argv.length < 5) {
  console.error("usage: node sdk-driver.mjs ROUNDS_JSON -- PROGRAM [ARGS...]");
  process.exit(2);
}
const loads = JSON.parse(process.argv[2]);
const [command, ...args] = process.argv.slice(separator + 1);

const transport = new StdioClientTransport({
  command,
  args,
  env: { ...process.env, RUST_LOG: "warn" },
  stderr: "ignore",
});
const client = new Client({ name: "prompt-host-bench-sdk-driver", version: "0" });
await client.connect(transport);
console.log(JSON.stringify({ pid: transport.pid }));

// The lines prompt-host-bench writes on stdin, two per load.
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
async function waitForLine() {
  const { done } = await lines.next();
  if (done) throw new Error("prompt-host-bench closed the driver's stdin");
}

async function getOnce() {
  const started = process.hrtime.bigint();
  const reply = await client.getPrompt({ name: "code_review", arguments: { code: CODE } });
  const elapsed = Number(process.hrtime.bigint() - started) / 1000;
  if (reply.messages[0].content.text !== EXPECTED_TEXT) {
    throw new Error(`the server answered ${JSON.stringify(reply)}`);
  }
  return elapsed;
}

for (const { total, inFlight } of loads) {
  const latencies = [];
  let started = 0;
  const worker = async () => {
    while (started < total) {
      started += 1;
      latencies.push(await getOnce());
    }
  };
  console.log(JSON.stringify({ ready: true }));
  await waitForLine();
  const begun = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, worker));
  const seconds = Number(process.hrtime.bigint() - begun) / 1e9;
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.round((latencies.length - 1) * q)];
  console.log(JSON.stringify({
    total,
    inFlight,
    seconds,
    latenciesUs: [at(0.5), at(0.99)],
  }));
  await waitForLine();
}
await client.close();
process.exit(0);
