// End-to-end over Streamable HTTP: the official MCP TypeScript SDK client
// lists, gets and completes, and two sessions hear that a pack was added.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { copyFileSync, mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

import { allNames as names, binary, built, install } from "./helpers.js";

const work = mkdtempSync(path.join(tmpdir(), "prompt-host-http-"));
const plugins = path.join(work, "plugins");
let server;
let url;

before(async () => {
  mkdirSync(plugins);
  copyFileSync(built("code_review"), path.join(plugins, "code_review.wasm"));
  copyFileSync(built("dev_assistant"), path.join(plugins, "dev_assistant.wasm"));
  server = spawn(binary, ["serve", "--plugins", plugins, "--cache-dir", path.join(work, "cache"), "--http", "127.0.0.1:0", "--page-size", "3"], {
    stdio: ["ignore", "ignore", "pipe"],
  });
  let log = "";
  url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the server did not start listening:\n${log}`)), 20000);
    server.stderr.on("data", (chunk) => {
      log += chunk;
      const found = log.match(/http:\/\/127\.0\.0\.1:\d+\/mcp/);
      if (found) {
        clearTimeout(timer);
        resolve(found[0]);
      }
    });
  });
});

after(() => {
  server.kill();
  rmSync(work, { recursive: true, force: true });
});

// `onStreamOpen` is called once the server has answered the session's GET,
// which opens the stream that notifications come on.
async function connect(onListChanged, onStreamOpen) {
  const client = new Client({ name: "prompt-host-e2e-http", version: "1.0.0" });
  if (onListChanged) client.setNotificationHandler(PromptListChangedNotificationSchema, onListChanged);
  const watching = async (input, init) => {
    const response = await fetch(input, init);
    if (init?.method === "GET" && response.ok && onStreamOpen) onStreamOpen();
    return response;
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: watching }));
  return client;
}

test("list every page, get, and complete over HTTP", async () => {
  const client = await connect();
  assert.deepEqual(await names(client), ["code_review", "git-commit", "explain-code", "debug-error"]);
  const reply = await client.getPrompt({ name: "debug-error", arguments: { error: "EADDRINUSE" } });
  assert.deepEqual(reply.messages.map((m) => m.role), ["user", "assistant", "user"]);
  assert.equal(reply.messages[0].content.text, "Here's an error I'm seeing: EADDRINUSE");
  const completion = await client.complete({ ref: { type: "ref/prompt", name: "explain-code" }, argument: { name: "language", value: "ha" } });
  assert.deepEqual(completion.completion.values, ["haskell"]);
  await client.close();
});

test("two sessions each receive list_changed when a pack is added", async () => {
  const heard = [];
  const opened = [];
  const sessions = await Promise.all(
    [0, 1].map((index) => new Promise((resolve) => {
      let streamOpen;
      opened[index] = new Promise((open) => { streamOpen = open; });
      heard[index] = new Promise((wake) => {
        resolve(connect(() => wake(), () => streamOpen()));
      });
    })),
  );
  // Both sessions' notification streams are open before the change (a
  // notification sent before a stream opens is not kept for it).
  const noStream = new Promise((_, reject) => setTimeout(() => reject(new Error("a session opened no stream within 20 s")), 20000).unref());
  await Promise.race([Promise.all(opened), noStream]);
  install(plugins, "media_prompts");
  const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("no list_changed within 20 s")), 20000).unref());
  await Promise.race([Promise.all(heard), timeout]);
  assert.deepEqual(await names(sessions[1]), [
    "code_review", "git-commit", "explain-code", "debug-error", "describe-image", "transcribe-audio",
  ]);
  await Promise.all(sessions.map((client) => client.close()));
});
