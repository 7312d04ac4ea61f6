// The {{name}} prompt pack, in JavaScript. `npm run build` turns it into
// {{name}}.wasm against wit/prompt-provider.wit (WIT 0.4, world
// prompt-pack-with-content); `npm test` runs pack.test.js natively. The
// templates come from prompt-pack.js, the same API as the Rust SDK's.

import { optional, pack, required, template } from "./prompt-pack.js";
// The skills the pack carries, for agents that load skills: every file of
// the skills/ folder, which npm run build (and npm test) writes into skills.js.
import skills from "./skills.js";

export const { promptProvider, asking, content, check } = pack({
  // What the pack says it is: `prompt-host inspect` shows it. (authors,
  // license, homepage and repository may be given too.)
  name: "{{name}}",
  version: "0.1.0",
  description: "Prompts that {{name}} provides",
  // A pack sees nothing of the machine. It may ask to call an origin
  // (fetch(), built with `npm run build:spidermonkey`) or read a value, which the operator
  // grants in [plugins.NAME.grants]:
  //   wants: { origins: ["https://api.example.com/v1/"], env: ["API_TOKEN"] },
  templates: [
    template("summarize", "Asks for a summary of a text")
      .title("Summarize text")
      // Left out, the text is asked for: the host shows the user a form
      // (this prompt is named in asksForMissing below).
      .argument(required("text", "The text to summarize"))
      // One of three, short unless given: the host checks and completes it.
      .argument(optional("length", "How long the summary is").choice(["short", "medium", "long"]).default("short"))
      .user("Write a {length} summary of this text:\n\n{text}"),
    // More: .assistant("..."), .resource(uri, mimeType, text), .link(uri, name),
    // .described("..."); .replyWith((args) => reply([userText(...)])) for a
    // reply written in code, .completeWith((argument, typed) => [...]).
  ],
  // The prompts whose missing required arguments the host asks the user for.
  asksForMissing: ["summarize"],
  skills,
});
