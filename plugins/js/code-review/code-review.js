// The `code_review` prompt pack in JavaScript, built into a component with
// `jco componentize` against the same WIT as the Rust packs (see
// tests/build-packs). It answers exactly as plugins/code-review does.

export const promptProvider = {
  listPrompts() {
    return [
      {
        name: "code_review",
        title: "Request Code Review",
        description: "Asks the LLM to analyze code quality and suggest improvements",
        arguments: [{ name: "code", title: undefined, description: "The code to review", required: true }],
        icons: [],
      },
    ];
  },

  getPrompt(name, args) {
    if (name !== "code_review") {
      throw { tag: "not-found" };
    }
    const code = args.find((argument) => argument.name === "code")?.value;
    if (code === undefined) {
      throw { tag: "invalid-arguments", val: "missing required argument 'code'" };
    }
    return {
      description: "Code review prompt",
      messages: [
        {
          role: "user",
          content: { tag: "text", val: { text: "Please review this Python code:\n" + code, annotations: undefined } },
        },
      ],
    };
  },

  complete(_prompt, _argument, _value, _context) {
    return { values: [], total: undefined, hasMore: false };
  },
};
