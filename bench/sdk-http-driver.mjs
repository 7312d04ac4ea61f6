// Drives one MCP server over Streamable HTTP with the official TypeScript SDK
// client (`Client` over `StreamableHTTPClientTransport`), for
// prompt-host-bench.
//
//   node bench/sdk-http-driver.mjs LOADS_JSON
//
// LOADS_JSON is {"url": "http://127.0.0.1:PORT/mcp", "loads": [{"clients": 1,
// "perClient": 1500}, ...], "warmUp": 20}. For each load the driver connects
// `clients` clients, each its own `Client` over its own transport (its own
// session), has each make `warmUp` prompts/get of code_review, then prints
// {"ready": true} and waits for a line on stdin: prompt-host-bench reads the
// server's CPU time there. Then each client makes `perClient` prompts/get one
// after another, all clients at once, and the driver prints {"clients",
// "perClient", "total", "seconds", "latenciesUs": [p50, p99]} before it closes
// the clients (ending their sessions). Every reply is checked: a wrong one
// ends the driver with a message and a non-zero status.

import { createInterface } from "node:readline";
import { createRequire } from "node:module";

// The SDK is installed once, for the end-to-end tests, by tests/setup.
const require = createRequire(new URL("../tests/package.json", import.meta.url));
const { Client } = await import(require.resolve("@modelcontextprotocol/sdk/client/index.js"));
const { StreamableHTTPClientTransport } = await import(require.resolve("@modelcontextprotocol/sdk/client/streamableHttp.js"));

const CODE = "def hello():\n    print('world')";
const EXPECTED_TEXT = "Please review this Python code:\ndef hello():\n    print('world')";

if (process.argv.length !== 3) {
  console.error("usage: node sdk-http-driver.mjs LOADS_JSON");
  process.exit(2);
}
const { url, loads, warmUp = 20 } = JSON.parse(process.argv[2]);

// The lines prompt-host-bench writes on stdin, one per load.
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();

async function connect() {
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const client = new Client({ name: "prompt-host-bench-sdk-http-driver", version: "0" });
  await client.connect(transport);
  return { client, transport };
}

async function getOnce(client) {
  const started = process.hrtime.bigint();
  const reply = await client.getPrompt({ name: "code_review", arguments: { code: CODE } });
  const elapsed = Number(process.hrtime.bigint() - started) / 1000;
  if (reply.messages?.[0]?.content?.text !== EXPECTED_TEXT) {
    throw new Error(`the server at ${url} answered ${JSON.stringify(reply)}`);
  }
  return elapsed;
}

try {
  for (const { clients, perClient } of loads) {
    const connected = [];
    for (let i = 0; i < clients; i += 1) connected.push(await connect());
    await Promise.all(connected.map(async ({ client }) => {
      for (let i = 0; i < warmUp; i += 1) await getOnce(client);
    }));
    console.log(JSON.stringify({ ready: true }));
    const go = await lines.next();
    if (go.done) throw new Error("stdin closed before the load");

    const begun = process.hrtime.bigint();
    const perClientLatencies = await Promise.all(connected.map(async ({ client }) => {
      const latencies = [];
      for (let i = 0; i < perClient; i += 1) latencies.push(await getOnce(client));
      return latencies;
    }));
    const seconds = Number(process.hrtime.bigint() - begun) / 1e9;
    const latencies = perClientLatencies.flat().sort((a, b) => a - b);
    const at = (q) => latencies[Math.round((latencies.length - 1) * q)];
    console.log(JSON.stringify({
      clients,
      perClient,
      total: latencies.length,
      seconds,
      latenciesUs: [at(0.5), at(0.99)],
    }));
    // prompt-host-bench reads the server's CPU time after the results and
    // then says so: the sessions end outside the measurement.
    const measured = await lines.next();
    if (measured.done) throw new Error("stdin closed after the load");

    for (const { client, transport } of connected) {
      await transport.terminateSession().catch(() => {});
      await client.close();
    }
  }
} catch (error) {
  console.error(`sdk-http-driver: ${error?.stack ?? error}`);
  process.exit(1);
}
process.exit(0);
