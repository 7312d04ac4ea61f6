// End-to-end: the official MCP TypeScript SDK client drives prompt-host over
// stdio, serving the example packs bundled into the binary.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { McpError } from "@modelcontextprotocol/sdk/types.js";

import { binary, root } from "./helpers.js";

const asset = (name) => readFileSync(path.join(root, "plugins/media-prompts/assets", name)).toString("base64");

let client;

before(async () => {
  client = new Client({ name: "prompt-host-e2e-typescript", version: "1.0.0" });
  const transport = new StdioClientTransport({ command: binary, args: ["serve", "--page-size", "3"], stderr: "ignore" });
  await client.connect(transport);
});

after(async () => {
  await client.close();
});

test("the server declares prompts with listChanged, and completions", () => {
  const capabilities = client.getServerCapabilities();
  assert.deepEqual(capabilities.prompts, { listChanged: true });
  assert.deepEqual(capabilities.completions, {});
  assert.equal(client.getServerVersion().name, "prompt-host");
});

test("every page lists the bundled prompts in order", async () => {
  const pages = [];
  let cursor;
  do {
    const page = await client.listPrompts(cursor ? { cursor } : {});
    pages.push(page.prompts.map((prompt) => prompt.name));
    cursor = page.nextCursor;
  } while (cursor);
  assert.deepEqual(pages, [
    ["code_review", "git-commit", "explain-code"],
    ["debug-error", "describe-image", "transcribe-audio"],
    ["analyze-project"],
  ]);
});

test("code_review replies exactly as in the specification", async () => {
  const result = await client.getPrompt({ name: "code_review", arguments: { code: "def hello():\n    print('world')" } });
  assert.deepEqual(result, {
    description: "Code review prompt",
    messages: [
      { role: "user", content: { type: "text", text: "Please review this Python code:\ndef hello():\n    print('world')" } },
    ],
  });
});

test("an image prompt carries the pack's PNG, base64-encoded", async () => {
  const result = await client.getPrompt({ name: "describe-image", arguments: {} });
  assert.deepEqual(result.messages, [
    { role: "user", content: { type: "image", data: asset("chart.png"), mimeType: "image/png" } },
    { role: "user", content: { type: "text", text: "Write a screen-reader description of the image above." } },
  ]);
});

// The bundled analyze-project declares typed arguments (WIT 0.3): the SDK
// client reads their JSON Schema in the prompt's _meta, and the hint in
// each description.
test("typed arguments reach the client as a JSON Schema in _meta", async () => {
  const prompts = [];
  let cursor;
  do {
    const page = await client.listPrompts(cursor ? { cursor } : {});
    prompts.push(...page.prompts);
    cursor = page.nextCursor;
  } while (cursor);
  const analyze = prompts.find((prompt) => prompt.name === "analyze-project");
  const schema = analyze._meta["prompt-host/arguments"];
  const { pattern, ...fileUri } = schema.properties.fileUri;
  assert.deepEqual({ ...schema, properties: { ...schema.properties, fileUri } }, {
    type: "object",
    properties: {
      timeframe: { type: "string", enum: ["15m", "1h", "6h", "24h", "7d"] },
      fileUri: { type: "string", examples: ["file:///src/app.py"] },
    },
    required: ["timeframe", "fileUri"],
  });
  // The URI pattern is the host's own check, read by this client's engine
  // with the u flag JSON Schema's patterns use.
  const uri = new RegExp(pattern, "u");
  const verdicts = ["file:///src/app.py", "FILE:///src/app.py", "file:", "https://example.com/", "file:///a b", "file:///a\u200Bb", " file:///a"]
    .map((value) => [value, uri.test(value)]);
  assert.deepEqual(verdicts, [
    ["file:///src/app.py", true],
    ["FILE:///src/app.py", true],
    ["file:", false],
    ["https://example.com/", false],
    ["file:///a b", false],
    ["file:///a\u200Bb", false],
    [" file:///a", false],
  ]);
  assert.equal(analyze.arguments[0].description, "Time period to analyze logs (one of: 15m, 1h, 6h, 24h, 7d)");
});

test("an embedded resource arrives whole", async () => {
  const result = await client.getPrompt({ name: "analyze-project", arguments: { timeframe: "24h", fileUri: "file:///app/main.py" } });
  assert.equal(result.messages.length, 4);
  assert.deepEqual(result.messages[2].content, {
    type: "resource_link",
    uri: "file:///app/main.py",
    name: "code-file",
    description: "The code file to analyze",
  });
  const embedded = result.messages[3].content;
  assert.equal(embedded.type, "resource");
  assert.equal(embedded.resource.uri, "prompt-pack://project-insights/checklist.md");
  assert.equal(embedded.resource.mimeType, "text/markdown");
  assert.match(embedded.resource.text, /^# Project analysis checklist\n/);
});

test("an argument completes from the owning pack", async () => {
  const result = await client.complete({
    ref: { type: "ref/prompt", name: "explain-code" },
    argument: { name: "language", value: "ru" },
  });
  assert.deepEqual(result.completion, { values: ["ruby", "rust"], total: 2, hasMore: false });
});

test("an unknown prompt is invalid params", async () => {
  await assert.rejects(client.getPrompt({ name: "no-such-prompt" }), (error) => {
    assert.ok(error instanceof McpError);
    assert.equal(error.code, -32602);
    assert.match(error.message, /unknown prompt 'no-such-prompt'/);
    return true;
  });
});
