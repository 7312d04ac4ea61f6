// End-to-end: packs added, replaced, broken and removed while the official
// MCP TypeScript SDK client is connected over stdio.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { copyFileSync, mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError, PromptListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

import { allNames, binary, built, install as installInto } from "./helpers.js";

const dir = mkdtempSync(path.join(tmpdir(), "prompt-host-plugins-"));
const cache = mkdtempSync(path.join(tmpdir(), "prompt-host-cache-"));
let client;
let changes = 0;
let waiters = [];

const install = (plugin, fileName) => installInto(dir, plugin, fileName);

function nextListChanged() {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("no list_changed notification within 20 s")), 20000);
    waiters.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const names = () => allNames(client);

before(async () => {
  copyFileSync(built("code_review"), path.join(dir, "code_review.wasm"));
  client = new Client({ name: "prompt-host-e2e-hot-reload", version: "1.0.0" });
  client.setNotificationHandler(PromptListChangedNotificationSchema, () => {
    changes += 1;
    const pending = waiters;
    waiters = [];
    pending.forEach((wake) => wake());
  });
  const transport = new StdioClientTransport({
    command: binary,
    args: ["serve", "--plugins", dir, "--cache-dir", cache],
    stderr: "ignore",
  });
  await client.connect(transport);
});

after(async () => {
  await client.close();
  rmSync(dir, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
});

test("a pack added, replaced, broken and removed while connected", async () => {
  assert.deepEqual(await names(), ["code_review"]);

  let changed = nextListChanged();
  install("dev_assistant", "team.wasm");
  await changed;
  assert.deepEqual(await names(), ["code_review", "git-commit", "explain-code", "debug-error"]);

  changed = nextListChanged();
  install("project_insights", "team.wasm");
  await changed;
  assert.deepEqual(await names(), ["code_review", "analyze-project"]);

  // A corrupt file under the same name: the previous version keeps serving.
  const before = changes;
  writeFileSync(path.join(dir, ".team.wasm.partial"), "not a component");
  renameSync(path.join(dir, ".team.wasm.partial"), path.join(dir, "team.wasm"));
  await new Promise((resolve) => setTimeout(resolve, 1000));
  assert.equal(changes, before);
  assert.deepEqual(await names(), ["code_review", "analyze-project"]);
  const reply = await client.getPrompt({ name: "analyze-project", arguments: { timeframe: "1h", fileUri: "file:///a.py" } });
  assert.equal(reply.messages.length, 4);

  changed = nextListChanged();
  unlinkSync(path.join(dir, "team.wasm"));
  await changed;
  assert.deepEqual(await names(), ["code_review"]);
  await assert.rejects(client.getPrompt({ name: "analyze-project", arguments: {} }), (error) => {
    assert.ok(error instanceof McpError);
    assert.equal(error.code, -32602);
    assert.match(error.message, /unknown prompt 'analyze-project'/);
    return true;
  });
});
