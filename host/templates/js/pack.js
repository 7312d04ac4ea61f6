// The {{name}} prompt pack, in JavaScript. `npm run build` turns it into
// {{name}}.wasm with jco componentize, against wit/prompt-provider.wit
// (WIT 0.3, world prompt-pack-that-asks). The objects below are the
// interfaces of that WIT file: WIT records are plain objects, variants are
// { tag, val }, and errors are thrown as { tag, val }.

// One argument in one line: its kind, default and examples are checked,
// completed and shown to clients by the host, before the pack runs.
function arg(name, description, { required = false, kind, default: fallback, examples = [] } = {}) {
  return { name, title: undefined, description, required, kind, default: fallback, examples };
}
// The kinds: text, a whole number, a number, true or false, one of these, a URI.
const text = (maxLength, pattern) => ({ tag: "text", val: { maxLength, pattern } });
const integer = (min, max) => ({ tag: "integer", val: { min, max } });
const number = (min, max) => ({ tag: "number", val: { min, max } });
const boolean = () => ({ tag: "boolean" });
const choice = (...choices) => ({ tag: "choice", val: choices });
const uri = (...schemes) => ({ tag: "uri", val: { schemes } });

const SUMMARIZE = {
  name: "summarize",
  title: "Summarize text",
  description: "Asks for a summary of a text",
  arguments: [
    // Left out, the text is asked for: the host shows the user a form
    // (this prompt is named in `asking` below).
    arg("text", "The text to summarize", { required: true }),
    arg("length", "How long the summary is", { kind: choice("short", "medium", "long"), default: "short" }),
  ],
  icons: [],
};

function argument(args, name) {
  return args.find((arg) => arg.name === name)?.value;
}

function userText(text) {
  return { role: "user", content: { tag: "text", val: { text, annotations: undefined } } };
}

export const promptProvider = {
  // What the pack says it is: `prompt-host inspect` shows it.
  describePack() {
    return {
      name: "{{name}}",
      version: "0.1.0",
      description: "Prompts that {{name}} provides",
      authors: [],
      license: undefined,
      homepage: undefined,
      repository: undefined,
      // A pack sees nothing of the machine. It may ask to see a folder (read
      // with fs as /logs), call an origin (fetch(), built without
      // --disable http) or read a value, which the operator grants in
      // [plugins.NAME.grants]:
      //   wants: { folders: [{ name: "logs", description: "..." }], origins: ["https://api.example.com/v1/"], env: ["API_TOKEN"] },
      wants: { folders: [], origins: [], env: [] },
    };
  },

  listPrompts() {
    return [SUMMARIZE];
  },

  // The host calls this only with every required argument, each value of
  // its kind, and the defaults filled in.
  getPrompt(name, args, _input) {
    if (name !== "summarize") {
      throw { tag: "not-found" };
    }
    const messages = [userText(`Write a ${argument(args, "length")} summary of this text:\n\n${argument(args, "text")}`)];
    return { tag: "reply", val: { description: undefined, messages } };
  },

  // The host completes `length` (a choice) itself; nothing else completes.
  complete(prompt, _argumentName, _value, _context) {
    if (prompt !== "summarize") {
      throw { tag: "not-found" };
    }
    return { values: [], total: undefined, hasMore: false };
  },
};

// The prompts whose missing required arguments the host asks the user for.
export const asking = {
  promptsThatAsk() {
    return ["summarize"];
  },
};
