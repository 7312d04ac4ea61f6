// The pack's functions are plain JavaScript: `npm test` runs them natively
// (node --test), before any build.
import assert from "node:assert/strict";
import { test } from "node:test";

import { asking, check, content, promptProvider } from "./pack.js";

test("the templates pass the checks the host runs at load", () => {
  assert.equal(check(), null);
});

test("summaries are short unless asked", () => {
  // Left out, the length is its default (the host fills it in before it
  // calls the pack; the library does too, for tests like this one).
  const args = [{ name: "text", value: "Some text." }];
  const answer = promptProvider.getPrompt("summarize", args, undefined);
  assert.deepEqual(answer.val.messages.map((message) => [message.role, message.content.val.text]), [
    ["user", "Write a short summary of this text:\n\nSome text."],
  ]);
});

test("the length is one of three", () => {
  const length = promptProvider.listPrompts()[0].arguments[1];
  assert.deepEqual(length.kind, { tag: "choice", val: ["short", "medium", "long"] });
  assert.equal(length.default, "short");
});

test("a text left out is asked for by the host", () => {
  assert.deepEqual(asking.promptsThatAsk(), ["summarize"]);
  assert.equal(promptProvider.listPrompts()[0].arguments[0].required, true);
});

test("the skill is carried from its folder", () => {
  const files = content.skillFiles();
  assert.deepEqual(files.map((file) => file.path), ["summarizing/SKILL.md"]);
  assert.equal(Buffer.from(files[0].bytes).toString().startsWith("---\nname: summarizing\n"), true);
});
