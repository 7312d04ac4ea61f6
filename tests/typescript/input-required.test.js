// End-to-end: the official MCP TypeScript SDK client (1.32, a 2025-11-25
// client) and an input-required prompt of a WIT 0.2 pack (the SDK's example,
// plugins/writing-assistant). A client that declared elicitation answers the
// host's elicitation/create requests, one per form, and the call completes
// with the final messages; a client that did not gets -32602 naming what the
// prompt needs.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, McpError } from "@modelcontextprotocol/sdk/types.js";

import { binary, install } from "./helpers.js";

/** A connected client of a server of the example pack, with these client capabilities. */
async function connect(t, capabilities) {
  const work = mkdtempSync(path.join(tmpdir(), "prompt-host-input-"));
  install(work, "writing_assistant");
  const client = new Client({ name: "prompt-host-e2e-typescript", version: "1.0.0" }, { capabilities });
  const asked = [];
  if (capabilities.elicitation) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push(request.params);
      const field = Object.keys(request.params.requestedSchema.properties)[0];
      return { action: "accept", content: { [field]: field === "language" ? "Spanish" : "Good morning" } };
    });
  }
  const transport = new StdioClientTransport({
    command: binary,
    args: ["serve", "--plugins", work, "--cache-dir", path.join(work, "cache")],
    stderr: "ignore",
  });
  await client.connect(transport);
  t.after(async () => {
    await client.close();
    rmSync(work, { recursive: true, force: true });
  });
  return { client, asked };
}

test("a client with elicitation fills in each form, and the call completes with the messages", async (t) => {
  const { client, asked } = await connect(t, { elicitation: {} });
  const result = await client.getPrompt({ name: "translate", arguments: {} });
  assert.deepEqual(result.messages, [
    { role: "user", content: { type: "text", text: "Translate this text into Spanish:\n\nGood morning" } },
  ]);
  assert.deepEqual(
    asked.map((params) => ({ ...params, _meta: undefined })),
    [
      {
        mode: "form",
        message: "What text should be translated?",
        requestedSchema: {
          type: "object",
          properties: { text: { type: "string", description: "The text to translate" } },
          required: ["text"],
        },
        _meta: undefined,
      },
      {
        mode: "form",
        message: "Into which language?",
        requestedSchema: {
          type: "object",
          properties: {
            language: {
              type: "string",
              enum: ["English", "French", "German", "Spanish"],
              description: "The language to translate into",
            },
          },
          required: ["language"],
        },
        _meta: undefined,
      },
    ],
  );
  // Given what it needs, the prompt asks nothing.
  const direct = await client.getPrompt({ name: "translate", arguments: { text: "Hi", language: "French" } });
  assert.equal(direct.messages[0].content.text, "Translate this text into French:\n\nHi");
  assert.equal(asked.length, 2);
});

test("a client without elicitation gets -32602 naming what the prompt needs", async (t) => {
  const { client } = await connect(t, {});
  await assert.rejects(client.getPrompt({ name: "translate", arguments: { text: "Hi" } }), (error) => {
    assert.ok(error instanceof McpError, String(error));
    assert.equal(error.code, -32602);
    assert.equal(
      error.message,
      "MCP error -32602: prompt 'translate': it needs input (form 'language': \"Into which language?\" (fields: " +
        "language \"The language to translate into\")), and the client declared no elicitation capability, and its " +
        "protocol revision has no input-required results (they came with 2026-07-28); or give the argument " +
        "language=... instead, which skips the form",
    );
    return true;
  });
});
