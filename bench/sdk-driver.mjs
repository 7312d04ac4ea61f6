// Drives one MCP server over stdio with the official TypeScript SDK client
// (`Client` over `StdioClientTransport`, which writes one message per write,
// as every real client does), for prompt-host-bench.
//
//   node bench/sdk-driver.mjs ROUNDS_JSON -- PROGRAM [ARGS...]
//
// ROUNDS_JSON is a list of loads, e.g. [{"total":3000,"inFlight":1}]. Each
// load keeps `inFlight` prompts/get of code_review outstanding until `total`
// have been answered. Prints one JSON object per load on stdout:
// {"total", "inFlight", "seconds", "latenciesUs": [p50, p99], "cpuNs",
// "switches"}, and the server's pid first as {"pid": N}. cpuNs and switches
// are the server's CPU time and context switches over the load, all its
// threads together (from /proc, as prompt-host-bench reads them for its own
// driver). Every reply is checked.

import { readFileSync, readdirSync } from "node:fs";
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

// CPU nanoseconds and context switches of each thread of a process, by
// thread id.
function processCost(pid) {
  const threads = new Map();
  for (const task of readdirSync(`/proc/${pid}/task`)) {
    try {
      const cpuNs = Number(readFileSync(`/proc/${pid}/task/${task}/schedstat`, "utf8").split(" ")[0]);
      let switches = 0;
      for (const line of readFileSync(`/proc/${pid}/task/${task}/status`, "utf8").split("\n")) {
        if (line.includes("ctxt_switches")) switches += Number(line.split(/\s+/)[1]);
      }
      threads.set(task, { cpuNs, switches });
    } catch {
      // A thread that ended between the listing and the read.
    }
  }
  return threads;
}

// What each thread alive after a load spent since before it (all of it for
// a thread started meanwhile); a thread that ended meanwhile (the blocking
// pool's, after 10 s idle) counts nothing, as prompt-host-bench counts.
function costBetween(before, after) {
  let cpuNs = 0;
  let switches = 0;
  for (const [task, now] of after) {
    const then = before.get(task) ?? { cpuNs: 0, switches: 0 };
    cpuNs += Math.max(0, now.cpuNs - then.cpuNs);
    switches += Math.max(0, now.switches - then.switches);
  }
  return { cpuNs, switches };
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
  const before = processCost(transport.pid);
  const begun = process.hrtime.bigint();
  await Promise.all(Array.from({ length: Math.min(inFlight, total) }, worker));
  const seconds = Number(process.hrtime.bigint() - begun) / 1e9;
  const after = processCost(transport.pid);
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.round((latencies.length - 1) * q)];
  console.log(JSON.stringify({
    total,
    inFlight,
    seconds,
    latenciesUs: [at(0.5), at(0.99)],
    ...costBetween(before, after),
  }));
}
await client.close();
