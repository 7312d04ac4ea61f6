// A pack in JavaScript (WIT 0.3) that asks for HTTP origins and calls them
// with the runtime's own fetch(), which componentize-js implements on the
// standard wasi:http/outgoing-handler: the host sends each request only to
// an origin asked for here and granted (tests/python/test_other_languages.py).
// Built by tests/build-packs: jco componentize against wit/0.3, with HTTP
// left enabled (only the incoming fetch-event is disabled).

const PORTS = [47801, 47802, 47803, 47804, 47805, 47806, 47807, 47808];

function text(value) {
  return { role: "user", content: { tag: "text", val: { text: value, annotations: undefined } } };
}

export const promptProvider = {
  describePack() {
    return {
      name: "js-grants-fetch",
      version: "0.1.0",
      description: "Calls the origins it is granted with fetch()",
      authors: [],
      license: undefined,
      homepage: undefined,
      repository: undefined,
      wants: { folders: [], origins: PORTS.map((port) => `http://127.0.0.1:${port}`), env: [] },
    };
  },

  listPrompts() {
    const url = { name: "url", title: undefined, description: "What to fetch", required: true, kind: undefined, default: undefined, examples: [] };
    return [{ name: "fetch", title: undefined, description: "Fetches a URL", arguments: [url], icons: [] }];
  },

  // componentize-js runs the event loop until the promise settles.
  async getPrompt(name, args, _input) {
    if (name !== "fetch") {
      throw { tag: "not-found" };
    }
    const url = args.find((argument) => argument.name === "url").value;
    try {
      const response = await fetch(url);
      const body = await response.text();
      return { tag: "reply", val: { description: undefined, messages: [text(`status ${response.status}: ${body}`)] } };
    } catch (error) {
      return { tag: "reply", val: { description: undefined, messages: [text(`error: ${error}`)] } };
    }
  },

  complete(_prompt, _argument, _value, _context) {
    return { values: [], total: undefined, hasMore: false };
  },
};
