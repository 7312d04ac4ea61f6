// The {{name}} prompt pack, in JavaScript. `npm run build` turns it into
// {{name}}.wasm with jco componentize, against wit/prompt-provider.wit.
// The functions below are the prompt-provider interface of that WIT file:
// WIT records are plain objects, results are returned or thrown as
// { tag, val } errors.

const LENGTHS = ["short", "medium", "long"];

const SUMMARIZE = {
  name: "summarize",
  title: "Summarize text",
  description: "Asks for a summary of a text",
  arguments: [
    { name: "text", title: undefined, description: "The text to summarize", required: true },
    { name: "length", title: undefined, description: "short, medium or long (default: short)", required: false },
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
  listPrompts() {
    return [SUMMARIZE];
  },

  getPrompt(name, args) {
    if (name !== "summarize") {
      throw { tag: "not-found" };
    }
    const text = argument(args, "text");
    if (text === undefined) {
      throw { tag: "invalid-arguments", val: "missing required argument 'text'" };
    }
    const length = argument(args, "length") ?? "short";
    if (!LENGTHS.includes(length)) {
      throw { tag: "invalid-arguments", val: `argument 'length' must be one of: ${LENGTHS.join(", ")}` };
    }
    return { description: undefined, messages: [userText(`Write a ${length} summary of this text:\n\n${text}`)] };
  },

  complete(prompt, argumentName, value, _context) {
    if (prompt !== "summarize") {
      throw { tag: "not-found" };
    }
    if (argumentName !== "length") {
      return { values: [], total: undefined, hasMore: false };
    }
    const values = LENGTHS.filter((length) => length.startsWith(value.toLowerCase()));
    return { values, total: values.length, hasMore: false };
  },
};
