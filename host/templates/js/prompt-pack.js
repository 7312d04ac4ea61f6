// prompt-pack.js: prompt packs for prompt-host from templates, in
// JavaScript. The same API as the Rust SDK's templates (prompt_pack::v0_4),
// so that a pack reads alike in every language; `prompt-host new --lang js`
// copies this file into each pack unchanged. It targets WIT 0.4, world
// prompt-pack-with-content.
//
//   import skills from "./skills.js"; // skills/, embedded by embed-skills.mjs at each build
//
//   export const { promptProvider, asking, content, check } = pack({
//     name: "acme", version: "0.1.0", description: "...",
//     templates: [
//       template("summarize", "Asks for a summary of a text")
//         .argument(required("text", "The text to summarize"))
//         .argument(optional("length", "How long").choice(["short", "long"]).default("short"))
//         .user("Write a {length} summary of this text:\n\n{text}"),
//     ],
//     asksForMissing: ["summarize"],
//     skills,
//   });
//
// Everything returned to the host is a plain object shaped as WIT 0.4's
// records (wit/prompt-provider.wit): variants are { tag, val }, options are
// undefined or a value, and errors are thrown as { tag, val }.

// A declared argument. Its WIT record is kept apart from the builder
// because the record has a field named `default`, and so does the builder.
class ArgumentDeclaration {
  constructor(name, description, required) {
    this.record = { name, title: undefined, description, required, kind: undefined, default: undefined, examples: [] };
  }

  title(title) {
    this.record.title = title;
    return this;
  }

  // The kinds: the host checks every value against its kind before the
  // pack runs, and refuses one that is not (-32602), so the pack need not.
  choice(choices) {
    return this.#kind("choice", [...choices]);
  }

  boolean() {
    return this.#kind("boolean", undefined);
  }

  // WIT's s64 is a BigInt in JavaScript; authors write plain numbers.
  integer(min, max) {
    return this.#kind("integer", { min: bigint(min), max: bigint(max) });
  }

  number(min, max) {
    return this.#kind("number", { min: min ?? undefined, max: max ?? undefined });
  }

  text(maxLength, pattern) {
    return this.#kind("text", { maxLength: maxLength ?? undefined, pattern: pattern ?? undefined });
  }

  uri(schemes = []) {
    return this.#kind("uri", { schemes: [...schemes] });
  }

  // The value the host passes when a client gives none.
  default(value) {
    this.record.default = value;
    return this;
  }

  example(value) {
    this.record.examples.push(value);
    return this;
  }

  #kind(tag, val) {
    this.record.kind = val === undefined ? { tag } : { tag, val };
    return this;
  }
}

function bigint(value) {
  return value === undefined || value === null ? undefined : BigInt(value);
}

/** An argument a client must pass (any text until a kind is set). */
export function required(name, description) {
  return new ArgumentDeclaration(name, description, true);
}

/** An argument a client may leave out. */
export function optional(name, description) {
  return new ArgumentDeclaration(name, description, false);
}

// Messages, contents and replies, for templates and for replyWith.
export function message(role, content) {
  return { role, content };
}

export function text(text) {
  return { tag: "text", val: { text, annotations: undefined } };
}

export function userText(text_) {
  return message("user", text(text_));
}

export function assistantText(text_) {
  return message("assistant", text(text_));
}

/** An embedded resource with textual contents. */
export function textResource(uri, mimeType, text) {
  return { tag: "resource", val: { uri, mimeType, body: { tag: "text", val: text }, annotations: undefined } };
}

/** A link to a resource the client can fetch itself. */
export function resourceLink(uri, name) {
  const link = { uri, name, title: undefined, description: undefined, mimeType: undefined, size: undefined };
  return { tag: "resource-link", val: { ...link, annotations: undefined } };
}

export function reply(messages, description) {
  return { description, messages };
}

// What a pack carries beside its prompts (WIT 0.4): skills and static resources.

/** A skill file at `path` (`code-review/SKILL.md`) holding `bytes`: a
 *  string (written as UTF-8) or bytes. skills.js, which embed-skills.mjs
 *  writes from the skills/ folder, is a list of these. */
export function skillFile(path, bytes) {
  return { path, bytes: typeof bytes === "string" ? utf8(bytes) : Uint8Array.from(bytes) };
}

/** The first mistake in the skill files `skills` that the host would refuse
 *  the pack for, in the host's words (as the Rust SDK's check_skills says
 *  it), or null: each skill's SKILL.md must be UTF-8, start with YAML
 *  frontmatter between two lines ---, and name the skill by its folder's
 *  name (name:) and say what it does (description:). Only what a
 *  line-by-line look can tell; the host checks the rest at load. pack()'s
 *  check() runs it after the templates'. */
export function checkSkills(skills) {
  for (const file of skills) {
    if (!file.path.endsWith("/SKILL.md")) {
      continue;
    }
    const folder = file.path.slice(0, -"/SKILL.md".length);
    const name = folder.split("/").pop();
    const at = (problem) => `skill ${JSON.stringify(folder)}: ${problem}`;
    let text;
    try {
      text = decodeUtf8(file.bytes);
    } catch {
      return at("its SKILL.md is not UTF-8 text");
    }
    const body = text.startsWith("---\n") ? text.slice(4) : text.startsWith("---\r\n") ? text.slice(5) : null;
    if (body === null) {
      return at("its SKILL.md: its first line is not --- : a SKILL.md starts with YAML frontmatter between two lines ---");
    }
    const lines = body.split(/\r?\n/);
    const closing = lines.findIndex((line) => line.trimEnd() === "---");
    if (closing < 0) {
      return at("its SKILL.md: its frontmatter has no closing --- line: end it with a line --- before the markdown");
    }
    const value = (key) => {
      const line = lines.slice(0, closing).find((line) => line.startsWith(`${key}:`));
      return line === undefined ? undefined : line.slice(key.length + 1).trim();
    };
    const named = value("name");
    if (named === undefined) {
      return at("its SKILL.md: its frontmatter has no name: add a line name: followed by the skill's folder name");
    }
    const unquoted = named.replace(/^["']+|["']+$/g, "");
    if (unquoted !== name) {
      return at(`its SKILL.md names it ${JSON.stringify(unquoted)}, and a skill's name must be its folder's name`);
    }
    if (value("description") === undefined) {
      return at("its SKILL.md: its frontmatter has no description: add one saying what the skill does and when to use it");
    }
  }
  return null;
}

// UTF-8 by hand, as utf8() encodes it (QuickJS has no TextDecoder); throws
// on bytes that are not UTF-8.
function decodeUtf8(bytes) {
  let text = "";
  for (let at = 0; at < bytes.length; ) {
    const first = bytes[at];
    const length = first < 0x80 ? 1 : first >> 5 === 6 ? 2 : first >> 4 === 14 ? 3 : first >> 3 === 30 ? 4 : 0;
    if (length === 0 || at + length > bytes.length) {
      throw new Error("not UTF-8");
    }
    let point = length === 1 ? first : first & (0xff >> (length + 1));
    for (let next = 1; next < length; next++) {
      if (bytes[at + next] >> 6 !== 2) {
        throw new Error("not UTF-8");
      }
      point = (point << 6) | (bytes[at + next] & 63);
    }
    const shortest = [0, 0, 0x80, 0x800, 0x10000][length];
    if (point < shortest || point > 0x10ffff || (point >= 0xd800 && point <= 0xdfff)) {
      throw new Error("not UTF-8");
    }
    text += String.fromCodePoint(point);
    at += length;
  }
  return text;
}

/** A static resource of text, which a client reads with resources/read. */
export function textStaticResource(uri, name, mimeType, text) {
  return staticResource(uri, name, mimeType, { tag: "text", val: text });
}

/** A static resource of bytes. */
export function blobStaticResource(uri, name, mimeType, bytes) {
  return staticResource(uri, name, mimeType, { tag: "blob", val: Uint8Array.from(bytes) });
}

function staticResource(uri, name, mimeType, body) {
  return { uri, name, title: undefined, description: undefined, mimeType, body };
}

// UTF-8 by hand: QuickJS, the engine `npm run build` uses, has no TextEncoder.
function utf8(text) {
  const bytes = [];
  for (const character of text) {
    const point = character.codePointAt(0);
    if (point < 0x80) {
      bytes.push(point);
    } else if (point < 0x800) {
      bytes.push(0xc0 | (point >> 6), 0x80 | (point & 63));
    } else if (point < 0x10000) {
      bytes.push(0xe0 | (point >> 12), 0x80 | ((point >> 6) & 63), 0x80 | (point & 63));
    } else {
      bytes.push(0xf0 | (point >> 18), 0x80 | ((point >> 12) & 63), 0x80 | ((point >> 6) & 63), 0x80 | (point & 63));
    }
  }
  return Uint8Array.from(bytes);
}

/** Thrown from replyWith: the user's arguments are unacceptable (-32602). */
export function invalidArguments(why) {
  return { tag: "invalid-arguments", val: why };
}

/** Thrown from replyWith: the pack could not answer, for a reason of its
 *  own, not the user's (-32603, naming the pack and saying why). */
export function internal(why) {
  return { tag: "internal", val: why };
}

// The MCP limit on the suggestions of one completion.
const MAX_COMPLETIONS = 100;

/** Every option that starts with what was typed, ignoring ASCII case (as
 *  the Rust SDK does), in order. */
export function completeFrom(options, typed) {
  const folded = asciiLowercase(typed);
  return capped(options.filter((option) => asciiLowercase(option).startsWith(folded)));
}

// At most MAX_COMPLETIONS of `values`, saying how many there were.
function capped(values) {
  return { values: values.slice(0, MAX_COMPLETIONS), total: values.length, hasMore: values.length > MAX_COMPLETIONS };
}

function asciiLowercase(text) {
  return text.replace(/[A-Z]/g, (letter) => letter.toLowerCase());
}

// Every character but RFC 3986's unreserved ones (A-Z a-z 0-9 - . _ ~)
// percent-encoded, as UTF-8: the Rust SDK's and the Python library's too.
function percentEncoded(value) {
  return encodeURIComponent(value).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

// Whether a URI template starts with a scheme (https:) before any placeholder.
function startsWithScheme(uri) {
  return /^[A-Za-z][A-Za-z0-9+.-]*:/.test(uri);
}

// Whether a media type is type/subtype (parameters after ";" allowed), as
// the host checks it: each an RFC 9110 token.
function isMediaType(mimeType) {
  const essence = typeof mimeType === "string" ? mimeType.split(";")[0].trim() : "";
  return /^[A-Za-z0-9!#$%&'*+.^_`|~-]+\/[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(essence);
}

export function noCompletions() {
  return { values: [], total: undefined, hasMore: false };
}

/** Starts a template for prompt `name`: declare it once, and the pack's
 *  listing, replies and completions come from the declaration. */
export function template(name, description) {
  return new Template(name, description);
}

class Template {
  constructor(name, description) {
    this.prompt = { name, title: undefined, description, arguments: [], icons: [] };
    // Each block is a message: its role, and the template texts of its content.
    this.blocks = [];
    this.replyDescription = undefined;
    this.replyFunction = undefined;
    this.completeFunction = undefined;
  }

  title(title) {
    this.prompt.title = title;
    return this;
  }

  argument(argument) {
    this.prompt.arguments.push(argument instanceof ArgumentDeclaration ? argument.record : argument);
    return this;
  }

  // Texts name arguments in braces, {code}; {{ and }} are literal braces.
  user(text) {
    return this.#block("user", "text", { text });
  }

  assistant(text) {
    return this.#block("assistant", "text", { text });
  }

  resource(uri, mimeType, text) {
    return this.#block("user", "resource", { uri, text }, mimeType);
  }

  link(uri, name) {
    return this.#block("user", "link", { uri, name });
  }

  described(description) {
    this.replyDescription = description;
    return this;
  }

  // A prompt written in code: fn gets the arguments as { name: value }
  // (checked, defaults filled in) and returns a reply. The declaration
  // stays the template's, so check() still checks it.
  replyWith(fn) {
    this.replyFunction = fn;
    return this;
  }

  // fn(argumentName, typed) returns a completion, or a list of values (the
  // first 100 are sent). The host completes choices and booleans itself,
  // and calls fn for the other arguments.
  completeWith(fn) {
    this.completeFunction = fn;
    return this;
  }

  // Each text is split into pieces here, when the pack's module runs: the
  // build's snapshot holds them, so that a call does not split them again.
  #block(role, type, texts, mimeType) {
    const pieces = Object.fromEntries(Object.entries(texts).map(([key, text]) => [key, parse(text)]));
    this.blocks.push({ role, type, texts, pieces, mimeType });
    return this;
  }

  /** The prompt as list-prompts declares it. */
  declaration() {
    return { ...this.prompt, arguments: this.prompt.arguments.map((argument) => ({ ...argument })) };
  }

  /** The first mistake in the template, naming the prompt, or null. The
   *  words are the Rust SDK's (Template::check), so the three languages
   *  report a mistake alike. */
  check() {
    const at = `template of prompt '${this.prompt.name}'`;
    const declared = (name) => this.prompt.arguments.find((argument) => argument.name === name);
    for (const block of this.blocks) {
      for (const text of Object.values(block.texts)) {
        const pieces = parse(text);
        if (typeof pieces === "string") {
          return `${at}: ${pieces}`;
        }
        for (const { argument: name } of pieces.filter((piece) => piece.argument !== undefined)) {
          const argument = declared(name);
          if (!argument) {
            return `${at} uses {${name}}, which is not one of its arguments`;
          }
          if (!argument.required && argument.default === undefined) {
            return (
              `${at} uses {${name}}, an optional argument with no default, which would leave a gap in the text ` +
              `when left out: give it a default (optional("${name}", ...).default(...), "" if the gap is meant), ` +
              `or make it required`
            );
          }
        }
      }
    }
    for (const { name, required, default: fallback } of this.prompt.arguments) {
      if (required && fallback !== undefined) {
        return `${at} sets a default for '${name}', which is required: it would never be used`;
      }
    }
    for (const { name, kind } of this.prompt.arguments) {
      if (kind?.tag === "choice" && kind.val.length === 0) {
        return `${at} offers no choices for '${name}': give at least one`;
      }
    }
    for (const { name, kind, default: fallback } of this.prompt.arguments) {
      if (kind?.tag === "choice" && fallback !== undefined && !kind.val.includes(fallback)) {
        return `${at} defaults '${name}' to ${JSON.stringify(fallback)}, which is not one of its choices`;
      }
    }
    // What the host would refuse in every reply.
    for (const { type, texts, mimeType } of this.blocks) {
      if (type === "text") {
        continue;
      }
      if (type === "resource" && !isMediaType(mimeType)) {
        return `${at} has the media type ${JSON.stringify(mimeType)}, which is not of the form type/subtype`;
      }
      if (!startsWithScheme(texts.uri)) {
        return (
          `${at} has the URI ${JSON.stringify(texts.uri)}, which does not start with a scheme (such as https: or ` +
          `file:) before its first placeholder: a URI must be absolute, and values are percent-encoded into it`
        );
      }
      if (type === "link" && !parse(texts.name).some((piece) => piece.text !== undefined)) {
        return `${at} has a link whose name has no text of its own: an empty value would leave it without a name`;
      }
    }
    // Last, so that a mistake in the declaration is named first.
    if (this.blocks.length === 0 && !this.replyFunction) {
      return `${at} has no messages: give it one (.user(...)), or reply in code (.replyWith(...))`;
    }
    if (this.blocks.length > 0 && this.replyFunction) {
      return `${at} has messages and replies in code (.replyWith): its messages would never be used`;
    }
    return null;
  }

  /** The reply to these arguments (a list of { name, value }). The host has
   *  checked them for a 0.3 pack; they are checked again for native tests. */
  render(args) {
    const values = new Map();
    for (const { name, required, kind, default: fallback } of this.prompt.arguments) {
      const given = args.find((argument) => argument.name === name)?.value;
      if (given === undefined && fallback === undefined && required) {
        throw invalidArguments(`missing required argument '${name}'`);
      }
      if (given !== undefined && kind?.tag === "choice" && !kind.val.includes(given)) {
        throw invalidArguments(`argument '${name}' must be one of: ${kind.val.join(", ")}`);
      }
      // undefined: an optional argument left out with no default.
      values.set(name, given ?? fallback);
    }
    if (this.replyFunction) {
      // An optional argument left out with no default stays absent, as code expects.
      return this.replyFunction(Object.fromEntries([...values].filter(([, value]) => value !== undefined)));
    }
    // In a text, an argument left out with no default is empty; in a URI,
    // each value is percent-encoded, so that it cannot add a path segment,
    // a query or a fragment, and . and .. are refused (encoded, they still
    // name another path). check() finds the mistakes thrown here first; a
    // native test may not have run it.
    const fillAs = (pieces, inUri) => {
      if (typeof pieces === "string") {
        throw { tag: "internal", val: pieces };
      }
      const value = (name) => {
        if (!values.has(name)) {
          unknown(name);
        }
        const given = values.get(name) ?? "";
        if (inUri && (given === "." || given === "..")) {
          throw invalidArguments(
            `argument '${name}' cannot be ${JSON.stringify(given)}: it goes into a URI, where it would name another path`,
          );
        }
        return inUri ? percentEncoded(given) : given;
      };
      return pieces.map((piece) => piece.text ?? value(piece.argument)).join("");
    };
    const fill = (pieces) => fillAs(pieces, false);
    const fillUri = (pieces) => fillAs(pieces, true);
    const unknown = (name) => {
      throw { tag: "internal", val: `{${name}} is not an argument` };
    };
    const messages = this.blocks.map(({ role, type, pieces, mimeType }) => {
      switch (type) {
        case "text":
          return message(role, text(fill(pieces.text)));
        case "resource":
          return message(role, textResource(fillUri(pieces.uri), mimeType, fill(pieces.text)));
        default:
          return message(role, resourceLink(fillUri(pieces.uri), fill(pieces.name)));
      }
    });
    return reply(messages, this.replyDescription);
  }

  /** The completion of `argument`, given what the user typed so far. (On
   *  WIT 0.3 the host completes choices and booleans itself, and calls the
   *  pack for the other arguments only.) */
  complete(argument, typed) {
    if (this.completeFunction) {
      const completion = this.completeFunction(argument, typed);
      return Array.isArray(completion) ? capped(completion) : completion;
    }
    const kind = this.prompt.arguments.find(({ name }) => name === argument)?.kind;
    return kind?.tag === "choice" ? completeFrom(kind.val, typed) : noCompletions();
  }
}

// Splits a template text into literal text ({ text }) and placeholders
// ({ argument }); a string is the mistake that stopped it.
function parse(template) {
  const pieces = [];
  let rest = template;
  for (let index = rest.search(/[{}]/); index >= 0; index = rest.search(/[{}]/)) {
    if (index > 0) {
      pieces.push({ text: rest.slice(0, index) });
    }
    if (rest.startsWith("{{", index) || rest.startsWith("}}", index)) {
      pieces.push({ text: rest[index] });
      rest = rest.slice(index + 2);
    } else if (rest[index] === "}") {
      return `a lone '}' in ${JSON.stringify(template)}: write '}}' for a literal brace`;
    } else {
      const end = rest.indexOf("}", index + 1);
      if (end < 0) {
        return `an unclosed '{' in ${JSON.stringify(template)}: write '{{' for a literal brace`;
      }
      pieces.push({ argument: rest.slice(index + 1, end) });
      rest = rest.slice(end + 1);
    }
  }
  if (rest) {
    pieces.push({ text: rest });
  }
  return pieces;
}

/** The first mistake in these templates, or null: each template's own
 *  (Template.check), and prompts or arguments that share a name. */
export function check(templates) {
  for (const [index, template] of templates.entries()) {
    const name = template.prompt.name;
    if (templates.slice(0, index).some((earlier) => earlier.prompt.name === name)) {
      return `prompt '${name}' is declared more than once: give each prompt a name of its own`;
    }
    const args = template.prompt.arguments;
    for (const [position, argument] of args.entries()) {
      if (args.slice(0, position).some((earlier) => earlier.name === argument.name)) {
        return `template of prompt '${name}' declares argument '${argument.name}' twice`;
      }
    }
    const mistake = template.check();
    if (mistake) {
      return mistake;
    }
  }
  return null;
}

/** The pack: the three interfaces the component exports (promptProvider,
 *  asking, content), and check(), for the pack's own tests. The host
 *  checks the skills and static resources when it loads the pack
 *  (`prompt-host inspect` names every problem, with a hint). */
export function pack({
  name,
  version,
  description,
  authors = [],
  license,
  homepage,
  repository,
  wants = {},
  templates,
  asksForMissing = [],
  skills = [],
  staticResources = [],
}) {
  const find = (prompt) => {
    const found = templates.find((template) => template.prompt.name === prompt);
    if (!found) {
      throw { tag: "not-found" };
    }
    return found;
  };
  const promptProvider = {
    describePack() {
      return {
        name,
        version,
        description,
        authors,
        license,
        homepage,
        repository,
        wants: { folders: [], origins: [], env: [], ...wants },
      };
    },

    // A mistake stops the listing, which the host calls at load: it
    // refuses the pack with this message, as it does a Rust pack's, from
    // the line a Rust panic writes (the host reads a pack's last words in
    // that form).
    listPrompts() {
      const mistake = check(templates);
      if (mistake) {
        // The note ends the message for the host, before what the engine
        // writes next. (QuickJS has no console: its runtime's own panic
        // line carries the exception's message.)
        globalThis.console?.error(`thread '<unnamed>' panicked at pack.js:\n${mistake}\nnote: refused by prompt-pack.js`);
        throw new Error(mistake);
      }
      return templates.map((template) => template.declaration());
    },

    getPrompt(prompt, args, _input) {
      return { tag: "reply", val: find(prompt).render(args) };
    },

    complete(prompt, argument, value, _context) {
      return find(prompt).complete(argument, value);
    },
  };
  const asking = {
    promptsThatAsk() {
      return [...asksForMissing];
    },
  };
  const content = {
    skillFiles() {
      return [...skills];
    },

    staticResources() {
      return [...staticResources];
    },
  };
  return { promptProvider, asking, content, check: () => check(templates) ?? checkSkills(skills) };
}
