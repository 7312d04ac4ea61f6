// The {{name}} prompt pack, in JavaScript. `npm run build` turns it into
// {{name}}.wasm with jco componentize, against wit/prompt-provider.wit
// (WIT 0.2). The functions below are the prompt-provider interface of that
// WIT file: WIT records are plain objects, variants are { tag, val }, and
// errors are thrown as { tag, val }.

const LENGTHS = ["short", "medium", "long"];

const SUMMARIZE = {
  name: "summarize",
  title: "Summarize text",
  description: "Asks for a summary of a text",
  arguments: [
    // Optional to the client: left out, the text is asked for with a form.
    { name: "text", title: undefined, description: "The text to summarize", required: false },
    { name: "length", title: undefined, description: "short, medium or long (default: short)", required: false },
  ],
  icons: [],
};

// The form that asks for the text when the client left it out.
const ASK_FOR_TEXT = {
  key: "text",
  message: "What text should be summarized?",
  fields: [
    {
      name: "text",
      title: undefined,
      description: "The text to summarize",
      kind: { tag: "string", val: undefined },
      required: true,
    },
  ],
};

function argument(args, name) {
  return args.find((arg) => arg.name === name)?.value;
}

// The text the user filled in for `field` of the form `key`; an error if they
// declined the form; undefined if it was not asked yet.
function answered(input, key, field) {
  const answer = input?.answers.find((answer) => answer.key === key);
  if (answer === undefined) {
    return undefined;
  }
  if (answer.response.tag !== "accept") {
    throw { tag: "invalid-arguments", val: `argument '${field}' is missing, and the user declined to give it` };
  }
  const value = answer.response.val.find((value) => value.name === field)?.value;
  return value?.tag === "string" ? value.val : undefined;
}

function userText(text) {
  return { role: "user", content: { tag: "text", val: { text, annotations: undefined } } };
}

export const promptProvider = {
  // What the pack says it is: `prompt-host inspect` shows it.
  describePack() {
    // A pack sees nothing of the machine. Built against WIT 0.3 (the host's
    // wit/0.3), it may also say what it wants, which the operator grants in
    // [plugins.NAME.grants], and then call those origins with fetch() (build
    // without --disable http):
    //   wants: { folders: [], origins: ["https://api.example.com/v1/"], env: [] },
    return {
      name: "{{name}}",
      version: "0.1.0",
      description: "Prompts that {{name}} provides",
      authors: [],
      license: undefined,
      homepage: undefined,
      repository: undefined,
    };
  },

  listPrompts() {
    return [SUMMARIZE];
  },

  getPrompt(name, args, input) {
    if (name !== "summarize") {
      throw { tag: "not-found" };
    }
    const text = argument(args, "text") ?? answered(input, "text", "text");
    if (text === undefined) {
      // The host asks the user, then calls again with the answer in `input`.
      return { tag: "input-required", val: { forms: [ASK_FOR_TEXT], state: new Uint8Array() } };
    }
    const length = argument(args, "length") ?? "short";
    if (!LENGTHS.includes(length)) {
      throw { tag: "invalid-arguments", val: `argument 'length' must be one of: ${LENGTHS.join(", ")}` };
    }
    const messages = [userText(`Write a ${length} summary of this text:\n\n${text}`)];
    return { tag: "reply", val: { description: undefined, messages } };
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
