"""prompt_pack: prompt packs for prompt-host from templates, in Python.

The same API as the Rust SDK's templates (prompt_pack::v0_4), so that a
pack reads alike in every language; `prompt-host new --lang python` copies
this file into each pack unchanged. It targets WIT 0.4, world
`prompt-pack-with-content`. In app.py:

    PromptProvider, Asking, Content = pack(
        name="acme", version="0.1.0", description="...",
        templates=[
            template("summarize", "Asks for a summary of a text")
            .argument(required("text", "The text to summarize"))
            .argument(optional("length", "How long").choice(["short", "long"]).default("short"))
            .user("Write a {length} summary of this text:\\n\\n{text}"),
        ],
        asks_for_missing=["summarize"],
        skills=include_skills(),  # the skills/ folder beside app.py, embedded when the pack is built
    )

componentize-py looks for classes named PromptProvider, Asking and Content
in app.py that subclass the generated exports: pack() builds them. The records
returned to the host are the generated ones (wit_world, which
componentize-py writes when it builds, and `componentize-py ... bindings .`
for native tests)."""

from __future__ import annotations

import json
import os
import re
import stat
import sys
from typing import Callable, Iterable
from urllib.parse import quote

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.prompt_provider import (
    Argument, ArgumentKind_Boolean, ArgumentKind_Choice, ArgumentKind_Integer, ArgumentKind_Number, ArgumentKind_Text,
    ArgumentKind_Uri, Completion, Content, Content_ResourceLink, Content_Resource, Content_Text, EmbeddedResource,
    IntegerKind, Message, NumberKind, PackInfo, Prompt, PromptAnswer_Reply, PromptArgument, PromptError_Internal,
    PromptError_InvalidArguments, PromptError_NotFound, PromptReply, ResourceBody_Blob, ResourceBody_Text, ResourceLink,
    Role, TextContent, TextKind, UriKind, Wants,
)
from wit_world.exports.content import SkillFile, StaticResource


class ArgumentDeclaration:
    """A declared argument. Its record is built at the end because the
    record has a field named `default`, and so does the builder."""

    def __init__(self, name: str, description: str, required: bool):
        self.record = PromptArgument(name=name, title=None, description=description, required=required, kind=None,
                                     default=None, examples=[])

    def title(self, title: str) -> ArgumentDeclaration:
        self.record.title = title
        return self

    # The kinds: the host checks every value against its kind before the
    # pack runs, and refuses one that is not (-32602), so the pack need not.
    def choice(self, choices: Iterable[str]) -> ArgumentDeclaration:
        self.record.kind = ArgumentKind_Choice(list(choices))
        return self

    def boolean(self) -> ArgumentDeclaration:
        self.record.kind = ArgumentKind_Boolean()
        return self

    def integer(self, min: int | None = None, max: int | None = None) -> ArgumentDeclaration:
        self.record.kind = ArgumentKind_Integer(IntegerKind(min=min, max=max))
        return self

    def number(self, min: float | None = None, max: float | None = None) -> ArgumentDeclaration:
        self.record.kind = ArgumentKind_Number(NumberKind(min=min, max=max))
        return self

    def text(self, max_length: int | None = None, pattern: str | None = None) -> ArgumentDeclaration:
        self.record.kind = ArgumentKind_Text(TextKind(max_length=max_length, pattern=pattern))
        return self

    def uri(self, schemes: Iterable[str] = ()) -> ArgumentDeclaration:
        self.record.kind = ArgumentKind_Uri(UriKind(schemes=list(schemes)))
        return self

    def default(self, value: str) -> ArgumentDeclaration:
        """The value the host passes when a client gives none."""
        self.record.default = value
        return self

    def example(self, value: str) -> ArgumentDeclaration:
        self.record.examples.append(value)
        return self


def required(name: str, description: str) -> ArgumentDeclaration:
    """An argument a client must pass (any text until a kind is set)."""
    return ArgumentDeclaration(name, description, True)


def optional(name: str, description: str) -> ArgumentDeclaration:
    """An argument a client may leave out."""
    return ArgumentDeclaration(name, description, False)


# Messages, contents and replies, for templates and for reply_with.
def message(role: Role, content: Content) -> Message:
    return Message(role=role, content=content)


def text(text: str) -> Content:
    return Content_Text(TextContent(text=text, annotations=None))


def user_text(text_: str) -> Message:
    return message(Role.USER, text(text_))


def assistant_text(text_: str) -> Message:
    return message(Role.ASSISTANT, text(text_))


def text_resource(uri: str, mime_type: str, text: str) -> Content:
    """An embedded resource with textual contents."""
    return Content_Resource(EmbeddedResource(uri=uri, mime_type=mime_type, body=ResourceBody_Text(text),
                                             annotations=None))


def resource_link(uri: str, name: str) -> Content:
    """A link to a resource the client can fetch itself."""
    return Content_ResourceLink(ResourceLink(uri=uri, name=name, title=None, description=None, mime_type=None, size=None,
                                             annotations=None))


def reply(messages: Iterable[Message], description: str | None = None) -> PromptReply:
    return PromptReply(description=description, messages=list(messages))


# What a pack carries beside its prompts (WIT 0.4): skills and static resources.
def skill_file(path: str, data: bytes | str) -> SkillFile:
    """A skill file at `path` (`code-review/SKILL.md`) holding `data`."""
    return SkillFile(path=path, bytes=data.encode() if isinstance(data, str) else bytes(data))


def include_skills(folder: str = "skills") -> list[SkillFile]:
    """Every file beneath `folder` (relative to the file that calls this, so
    `skills/` beside app.py unless told otherwise), as skill files with
    paths relative to it, hidden ones (whose names start with `.`) left
    out. Called at module level, it runs when componentize-py builds the
    pack, whose snapshot then holds the bytes: the pack reads no file when
    the host calls it (it is granted none). A missing folder, a symlink to a
    folder, or anything but a regular file or a folder (a FIFO, a socket)
    stops the build, naming it; a symlink to a file is read as the file."""
    caller = sys._getframe(1).f_globals.get("__file__")
    root = os.path.join(os.path.dirname(os.path.abspath(caller)) if caller else os.getcwd(), folder)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"include_skills: there is no folder {root}: create it, or carry no skills")
    files = []
    for directory, folders, names in os.walk(root, onerror=_raise):
        for name in folders:
            if not name.startswith(".") and os.path.islink(os.path.join(directory, name)):
                raise ValueError(f"include_skills: {os.path.join(directory, name)} is a symlink to a folder: copy the folder in")
        folders[:] = [name for name in folders if not name.startswith(".")]
        for name in names:
            if name.startswith("."):
                continue
            path = os.path.join(directory, name)
            if not stat.S_ISREG(os.stat(path).st_mode):
                raise ValueError(f"include_skills: {path} is not a regular file")
            with open(path, "rb") as file:
                files.append(skill_file(os.path.relpath(path, root).replace(os.sep, "/"), file.read()))
    # Sorted by bytes, as the Rust SDK sorts, whatever the file system's order.
    return sorted(files, key=lambda file: file.path.encode())


def check_skills(skills: Iterable[SkillFile]) -> str | None:
    """The first mistake in the skill files that the host would refuse the
    pack for, in the host's words (as the Rust SDK's check_skills says it),
    or None: each skill's SKILL.md must be UTF-8, start with YAML
    frontmatter between two lines ---, and name the skill by its folder's
    name (name:) and say what it does (description:). Only what a
    line-by-line look can tell; the host checks the rest at load.
    PromptProvider.check() runs it after the templates'."""
    for file in skills:
        if not file.path.endswith("/SKILL.md"):
            continue
        folder = file.path[: -len("/SKILL.md")]
        name = folder.split("/")[-1]

        def at(problem: str) -> str:
            return f"skill {json.dumps(folder, ensure_ascii=False)}: {problem}"

        try:
            text = bytes(file.bytes).decode("utf-8")
        except UnicodeDecodeError:
            return at("its SKILL.md is not UTF-8 text")
        body = text[4:] if text.startswith("---\n") else text[5:] if text.startswith("---\r\n") else None
        if body is None:
            return at("its SKILL.md: its first line is not --- : a SKILL.md starts with YAML frontmatter between two lines ---")
        lines = re.split(r"\r?\n", body)
        closing = next((index for index, line in enumerate(lines) if line.rstrip() == "---"), None)
        if closing is None:
            return at("its SKILL.md: its frontmatter has no closing --- line: end it with a line --- before the markdown")

        def value(key: str) -> str | None:
            return next((line[len(key) + 1:].strip() for line in lines[:closing] if line.startswith(f"{key}:")), None)

        named = value("name")
        if named is None:
            return at("its SKILL.md: its frontmatter has no name: add a line name: followed by the skill's folder name")
        unquoted = named.strip("\"'")
        if unquoted != name:
            return at(f"its SKILL.md names it {json.dumps(unquoted, ensure_ascii=False)}, "
                      "and a skill's name must be its folder's name")
        if value("description") is None:
            return at("its SKILL.md: its frontmatter has no description: add one saying what the skill does and when to use it")
    return None


def _raise(error: OSError):
    """os.walk's onerror: a folder that cannot be read stops the build,
    rather than leaving its skills out."""
    raise error


def text_static_resource(uri: str, name: str, mime_type: str, text: str) -> StaticResource:
    """A static resource of text, which a client reads with resources/read."""
    return StaticResource(uri=uri, name=name, title=None, description=None, mime_type=mime_type,
                          body=ResourceBody_Text(text))


def blob_static_resource(uri: str, name: str, mime_type: str, data: bytes) -> StaticResource:
    """A static resource of bytes."""
    return StaticResource(uri=uri, name=name, title=None, description=None, mime_type=mime_type,
                          body=ResourceBody_Blob(bytes(data)))


def invalid_arguments(why: str) -> Err:
    """Raised from reply_with: the user's arguments are unacceptable (-32602)."""
    return Err(PromptError_InvalidArguments(why))


def internal(why: str) -> Err:
    """Raised from reply_with: the pack could not answer, for a reason of its
    own, not the user's (-32603, naming the pack and saying why)."""
    return Err(PromptError_Internal(why))


# The MCP limit on the suggestions of one completion.
MAX_COMPLETIONS = 100


def complete_from(options: Iterable[str], typed: str) -> Completion:
    """Every option that starts with what was typed, ignoring ASCII case (as
    the Rust SDK does), in order."""
    folded = _ascii_lowercase(typed)
    return _capped([option for option in options if _ascii_lowercase(option).startswith(folded)])


def _capped(values: list[str]) -> Completion:
    """At most MAX_COMPLETIONS of `values`, saying how many there were."""
    return Completion(values=values[:MAX_COMPLETIONS], total=len(values), has_more=len(values) > MAX_COMPLETIONS)


def _ascii_lowercase(text: str) -> str:
    return re.sub("[A-Z]", lambda letter: letter.group().lower(), text)


def _percent_encoded(value: str) -> str:
    """Every character but RFC 3986's unreserved ones (A-Z a-z 0-9 - . _ ~)
    percent-encoded, as UTF-8: the Rust SDK's and the JavaScript library's too."""
    return quote(value, safe="")


def _starts_with_scheme(uri: str) -> bool:
    """Whether a URI template starts with a scheme (https:) before any placeholder."""
    return re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", uri) is not None


def _is_media_type(mime_type: str | None) -> bool:
    """Whether a media type is type/subtype (parameters after ";" allowed),
    as the host checks it: each an RFC 9110 token."""
    essence = mime_type.split(";")[0].strip() if isinstance(mime_type, str) else ""
    return re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+/[A-Za-z0-9!#$%&'*+.^_`|~-]+", essence) is not None


def no_completions() -> Completion:
    return Completion(values=[], total=None, has_more=False)


ReplyFunction = Callable[[dict[str, str]], PromptReply]
CompleteFunction = Callable[[str, str], "Completion | list[str]"]


def template(name: str, description: str) -> Template:
    """Starts a template for prompt `name`: declare it once, and the pack's
    listing, replies and completions come from the declaration."""
    return Template(name, description)


class Template:
    def __init__(self, name: str, description: str):
        self.prompt = Prompt(name=name, title=None, description=description, arguments=[], icons=[])
        # Each block is a message: its role, its kind, the template texts of
        # its content, a resource's media type, and the texts split into pieces.
        self.blocks: list[tuple[Role, str, dict[str, str], str | None, dict[str, list[tuple[str, str]] | str]]] = []
        self.reply_description: str | None = None
        self.reply_function: ReplyFunction | None = None
        self.complete_function: CompleteFunction | None = None

    def title(self, title: str) -> Template:
        self.prompt.title = title
        return self

    def argument(self, argument: ArgumentDeclaration | PromptArgument) -> Template:
        self.prompt.arguments.append(argument.record if isinstance(argument, ArgumentDeclaration) else argument)
        return self

    # Texts name arguments in braces, {code}; {{ and }} are literal braces.
    def user(self, text: str) -> Template:
        return self._block(Role.USER, "text", {"text": text}, None)

    def assistant(self, text: str) -> Template:
        return self._block(Role.ASSISTANT, "text", {"text": text}, None)

    def resource(self, uri: str, mime_type: str, text: str) -> Template:
        return self._block(Role.USER, "resource", {"uri": uri, "text": text}, mime_type)

    def link(self, uri: str, name: str) -> Template:
        return self._block(Role.USER, "link", {"uri": uri, "name": name}, None)

    def _block(self, role: Role, kind: str, texts: dict[str, str], mime_type: str | None) -> Template:
        """Each text is split into pieces here, when the pack's module runs:
        the build's snapshot holds them, so that a call does not split them
        again."""
        pieces = {key: parse(text) for key, text in texts.items()}
        self.blocks.append((role, kind, texts, mime_type, pieces))
        return self

    def described(self, description: str) -> Template:
        self.reply_description = description
        return self

    def reply_with(self, function: ReplyFunction) -> Template:
        """A prompt written in code: function gets the arguments as a dict
        (checked, defaults filled in) and returns a reply. The declaration
        stays the template's, so check() still checks it."""
        self.reply_function = function
        return self

    def complete_with(self, function: CompleteFunction) -> Template:
        """function(argument_name, typed) returns a completion, or a list of
        values (the first 100 are sent). The host completes choices and
        booleans itself, and calls function for the other arguments."""
        self.complete_function = function
        return self

    def declaration(self) -> Prompt:
        """The prompt as list-prompts declares it."""
        return self.prompt

    def check(self) -> str | None:
        """The first mistake in the template, naming the prompt, or None. The
        words are the Rust SDK's (Template::check), so the three languages
        report a mistake alike."""
        at = f"template of prompt '{self.prompt.name}'"
        declared = {argument.name: argument for argument in reversed(self.prompt.arguments)}
        for _, _, texts, _, _ in self.blocks:
            for text in texts.values():
                pieces = parse(text)
                if isinstance(pieces, str):
                    return f"{at}: {pieces}"
                for kind, name in pieces:
                    if kind != "argument":
                        continue
                    argument = declared.get(name)
                    if argument is None:
                        return f"{at} uses {{{name}}}, which is not one of its arguments"
                    if not argument.required and argument.default is None:
                        return (f"{at} uses {{{name}}}, an optional argument with no default, which would leave a gap "
                                f"in the text when left out: give it a default (optional(\"{name}\", ...).default(...), "
                                f"\"\" if the gap is meant), or make it required")
        for argument in self.prompt.arguments:
            if argument.required and argument.default is not None:
                return f"{at} sets a default for '{argument.name}', which is required: it would never be used"
        for argument in self.prompt.arguments:
            if isinstance(argument.kind, ArgumentKind_Choice) and not argument.kind.value:
                return f"{at} offers no choices for '{argument.name}': give at least one"
        for argument in self.prompt.arguments:
            if (isinstance(argument.kind, ArgumentKind_Choice) and argument.default is not None
                    and argument.default not in argument.kind.value):
                return (f"{at} defaults '{argument.name}' to {json.dumps(argument.default, ensure_ascii=False)}, "
                        f"which is not one of its choices")
        # What the host would refuse in every reply.
        for _, kind, texts, mime_type, _ in self.blocks:
            if kind == "text":
                continue
            if kind == "resource" and not _is_media_type(mime_type):
                return (f"{at} has the media type {json.dumps(mime_type, ensure_ascii=False)}, which is not of the form "
                        f"type/subtype")
            if not _starts_with_scheme(texts["uri"]):
                return (f"{at} has the URI {json.dumps(texts['uri'], ensure_ascii=False)}, which does not start with a "
                        f"scheme (such as https: or file:) before its first placeholder: a URI must be absolute, and "
                        f"values are percent-encoded into it")
            if kind == "link" and not any(piece == "text" for piece, _ in parse(texts["name"])):
                return f"{at} has a link whose name has no text of its own: an empty value would leave it without a name"
        # Last, so that a mistake in the declaration is named first.
        if not self.blocks and self.reply_function is None:
            return f"{at} has no messages: give it one (.user(...)), or reply in code (.reply_with(...))"
        if self.blocks and self.reply_function is not None:
            return f"{at} has messages and replies in code (.reply_with): its messages would never be used"
        return None

    def render(self, arguments: list[Argument]) -> PromptReply:
        """The reply to these arguments. The host has checked them for a 0.3
        pack; they are checked again for native tests."""
        given = {argument.name: argument.value for argument in arguments}
        # None: an optional argument left out with no default.
        values: dict[str, str | None] = {}
        for argument in self.prompt.arguments:
            value = given.get(argument.name)
            if value is None and argument.default is None and argument.required:
                raise invalid_arguments(f"missing required argument '{argument.name}'")
            choices = argument.kind.value if isinstance(argument.kind, ArgumentKind_Choice) else None
            if value is not None and choices is not None and value not in choices:
                raise invalid_arguments(f"argument '{argument.name}' must be one of: {', '.join(choices)}")
            values[argument.name] = value if value is not None else argument.default
        if self.reply_function is not None:
            # An optional argument left out with no default stays absent, as code expects.
            return self.reply_function({name: value for name, value in values.items() if value is not None})

        # In a text, an argument left out with no default is empty; in a
        # URI, each value is percent-encoded, so that it cannot add a path
        # segment, a query or a fragment, and . and .. are refused (encoded,
        # they still name another path). check() finds the mistakes raised
        # here first; a native test may not have run it.
        def fill_as(pieces: list[tuple[str, str]] | str, in_uri: bool) -> str:
            if isinstance(pieces, str):
                raise Err(PromptError_Internal(pieces))
            filled = []
            for kind, piece in pieces:
                if kind == "argument" and piece not in values:
                    raise Err(PromptError_Internal(f"{{{piece}}} is not an argument"))
                if kind == "argument":
                    value = values[piece] or ""
                    if in_uri and value in (".", ".."):
                        raise invalid_arguments(f"argument '{piece}' cannot be {json.dumps(value)}: it goes into a URI, "
                                                f"where it would name another path")
                    filled.append(_percent_encoded(value) if in_uri else value)
                else:
                    filled.append(piece)
            return "".join(filled)

        def fill(pieces: list[tuple[str, str]] | str) -> str:
            return fill_as(pieces, False)

        def fill_uri(pieces: list[tuple[str, str]] | str) -> str:
            return fill_as(pieces, True)

        messages = []
        for role, kind, _, mime_type, pieces in self.blocks:
            if kind == "text":
                content = text(fill(pieces["text"]))
            elif kind == "resource":
                content = text_resource(fill_uri(pieces["uri"]), mime_type, fill(pieces["text"]))
            else:
                content = resource_link(fill_uri(pieces["uri"]), fill(pieces["name"]))
            messages.append(message(role, content))
        return reply(messages, self.reply_description)

    def complete(self, argument: str, typed: str) -> Completion:
        """The completion of `argument`, given what the user typed so far."""
        if self.complete_function is not None:
            completion = self.complete_function(argument, typed)
            if isinstance(completion, Completion):
                return completion
            return _capped(list(completion))
        kind = next((declared.kind for declared in self.prompt.arguments if declared.name == argument), None)
        return complete_from(kind.value, typed) if isinstance(kind, ArgumentKind_Choice) else no_completions()


def parse(template: str) -> list[tuple[str, str]] | str:
    """Splits a template text into ("text", ...) and ("argument", name)
    pieces; a string is the mistake that stopped it."""
    pieces = []
    rest = template
    while (index := next((i for i, c in enumerate(rest) if c in "{}"), -1)) >= 0:
        if index > 0:
            pieces.append(("text", rest[:index]))
        if rest.startswith("{{", index) or rest.startswith("}}", index):
            pieces.append(("text", rest[index]))
            rest = rest[index + 2:]
        elif rest[index] == "}":
            return f"a lone '}}' in {json.dumps(template, ensure_ascii=False)}: write '}}}}' for a literal brace"
        else:
            end = rest.find("}", index + 1)
            if end < 0:
                return f"an unclosed '{{' in {json.dumps(template, ensure_ascii=False)}: write '{{{{' for a literal brace"
            pieces.append(("argument", rest[index + 1:end]))
            rest = rest[end + 1:]
    if rest:
        pieces.append(("text", rest))
    return pieces


def check(templates: list[Template]) -> str | None:
    """The first mistake in these templates, or None: each template's own
    (Template.check), and prompts or arguments that share a name."""
    for index, template in enumerate(templates):
        name = template.prompt.name
        if any(earlier.prompt.name == name for earlier in templates[:index]):
            return f"prompt '{name}' is declared more than once: give each prompt a name of its own"
        arguments = template.prompt.arguments
        for position, argument in enumerate(arguments):
            if any(earlier.name == argument.name for earlier in arguments[:position]):
                return f"template of prompt '{name}' declares argument '{argument.name}' twice"
        mistake = template.check()
        if mistake is not None:
            return mistake
    return None


def pack(*, name: str, version: str, templates: list[Template], description: str | None = None,
         asks_for_missing: Iterable[str] = (), wants: Wants | None = None, authors: Iterable[str] = (),
         license: str | None = None, homepage: str | None = None, repository: str | None = None,
         skills: Iterable[SkillFile] = (), static_resources: Iterable[StaticResource] = ()):
    """The pack: the classes PromptProvider, Asking and Content that
    componentize-py exports, to assign at module level of app.py.
    PromptProvider.check() is check(templates), for the pack's own tests.
    The host checks the skills and static resources when it loads the pack
    (`prompt-host inspect` names every problem, with a hint)."""
    asks_for_missing = list(asks_for_missing)
    authors = list(authors)
    skills = list(skills)
    static_resources = list(static_resources)

    def find(prompt: str) -> Template:
        found = next((template for template in templates if template.prompt.name == prompt), None)
        if found is None:
            raise Err(PromptError_NotFound())
        return found

    class PromptProvider(exports.PromptProvider):
        def describe_pack(self) -> PackInfo:
            return PackInfo(name=name, version=version, description=description, authors=authors, license=license,
                            homepage=homepage, repository=repository,
                            wants=wants or Wants(folders=[], origins=[], env=[]))

        def list_prompts(self) -> list[Prompt]:
            # A mistake stops the listing, which the host calls at load: it
            # refuses the pack with this message, as it does a Rust pack's,
            # from the line a Rust panic writes (the host reads a pack's
            # last words in that form).
            mistake = check(templates)
            if mistake is not None and sys.platform == "wasi":
                print(f"thread '<unnamed>' panicked at app.py:\n{mistake}\nnote: refused by prompt_pack.py", file=sys.stderr,
                      flush=True)
                # Ended here, in the component: an exception would end in
                # componentize-py's own panic line, which names no mistake.
                os._exit(101)
            if mistake is not None:
                raise ValueError(mistake)
            return [template.declaration() for template in templates]

        def get_prompt(self, name: str, arguments: list[Argument], input) -> PromptAnswer_Reply:
            return PromptAnswer_Reply(find(name).render(arguments))

        def complete(self, prompt: str, argument_name: str, value: str, context: list[Argument]) -> Completion:
            return find(prompt).complete(argument_name, value)

        @staticmethod
        def check() -> str | None:
            return check(templates) or check_skills(skills)

    class Asking(exports.Asking):
        def prompts_that_ask(self) -> list[str]:
            return list(asks_for_missing)

    class Content(exports.Content):
        def skill_files(self) -> list[SkillFile]:
            return list(skills)

        def static_resources(self) -> list[StaticResource]:
            return list(static_resources)

    return PromptProvider, Asking, Content
