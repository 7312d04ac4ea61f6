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

// Warm-up: componentize-js runs this module once when it snapshots the
// engine at build time, so calling every export here puts the parsed and
// compiled functions in the snapshot instead of redoing that work in each
// fresh instance (a call took 975 µs without it, 691 µs with it; see
// BENCHMARKS.md). Keep it free of state: what it leaves behind is in every
// instance.
promptProvider.listPrompts();
promptProvider.getPrompt("code_review", [{ name: "code", value: "print(1)" }]);
promptProvider.complete("code_review", "code", "", []);
