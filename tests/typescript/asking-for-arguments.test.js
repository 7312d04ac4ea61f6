// End-to-end: the official MCP TypeScript SDK clients answer the form the
// host builds for a prompt's missing arguments (WIT 0.3.1's `asking`; the
// fixture typed_arguments opts `announce` in), over stdio, in both ways a
// client is asked: v2 (@modelcontextprotocol/client, pinned to protocol
// 2026-07-28) gets an InputRequiredResult and fulfils it through its
// elicitation handler; v1 (@modelcontextprotocol/sdk 1.32, a 2025-11-25
// client) gets an elicitation/create request on its session. The form's
// schema is the one the declared kinds make, and the answers reach the pack
// as arguments.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

import { Client as ClientV1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport as StdioV1 } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { Client as ClientV2 } from "@modelcontextprotocol/client";
import { StdioClientTransport as StdioV2 } from "@modelcontextprotocol/client/stdio";

import { binary, install } from "./helpers.js";

const SCHEMA = {
  type: "object",
  properties: {
    tone: { type: "string", enum: ["formal", "casual"], description: "The tone (one of: formal, casual)" },
    urgent: { type: "boolean", description: "The urgent (true or false)" },
  },
  required: ["tone", "urgent"],
};
const GIVEN = { count: "9", ratio: "0.1", headline: "From TypeScript" };

function serverParams(t) {
  const work = mkdtempSync(path.join(tmpdir(), "prompt-host-asking-"));
  install(work, "typed_arguments");
  t.after(() => rmSync(work, { recursive: true, force: true }));
  return { command: binary, args: ["serve", "--plugins", work, "--cache-dir", path.join(work, "cache")], stderr: "ignore" };
}

/** The request handler both SDKs call for elicitation/create: records and accepts. */
function answering(asked) {
  return async (request) => {
    asked.push(request.params);
    return { action: "accept", content: { tone: "casual", urgent: true } };
  };
}

/** Gets `announce` without tone and urgent: the host asked for them once, and the pack got the answers. */
async function assertAskedAndAnswered(client, asked) {
  const result = await client.getPrompt({ name: "announce", arguments: GIVEN });
  const text = result.messages.map((message) => message.content.text).join("\n");
  assert.equal(text, "channel=general\ncount=9\nheadline=From TypeScript\nratio=0.1\ntone=casual\nurgent=true");
  assert.deepEqual(
    asked.map(({ message, requestedSchema }) => ({ message, requestedSchema })),
    [{ message: "The prompt announce needs: tone, urgent", requestedSchema: SCHEMA }],
  );
}

test("v2 on 2026-07-28 fulfils the host's InputRequiredResult through its elicitation handler", async (t) => {
  const client = new ClientV2(
    { name: "prompt-host-e2e-typescript-v2", version: "1.0.0" },
    { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: "2026-07-28" } } },
  );
  const asked = [];
  client.setRequestHandler("elicitation/create", answering(asked));
  await client.connect(new StdioV2(serverParams(t)));
  t.after(() => client.close());
  await assertAskedAndAnswered(client, asked);
});

test("v1 on 2025-11-25 answers the host's elicitation/create request", async (t) => {
  const client = new ClientV1({ name: "prompt-host-e2e-typescript", version: "1.0.0" }, { capabilities: { elicitation: {} } });
  const asked = [];
  client.setRequestHandler(ElicitRequestSchema, answering(asked));
  await client.connect(new StdioV1(serverParams(t)));
  t.after(() => client.close());
  await assertAskedAndAnswered(client, asked);
});
