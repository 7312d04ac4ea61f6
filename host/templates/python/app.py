"""The {{name}} prompt pack, in Python. componentize-py turns it into
{{name}}.wasm against wit/prompt-provider.wit, WIT 0.3, world
prompt-pack-that-asks (see README.md). The classes below are the interfaces
of that WIT file; errors are raised as Err(PromptError_...)."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.prompt_provider import (
    Argument, ArgumentKind, ArgumentKind_Boolean, ArgumentKind_Choice, ArgumentKind_Integer, ArgumentKind_Number,
    ArgumentKind_Text, ArgumentKind_Uri, Completion, Content_Text, Input, IntegerKind, Message, NumberKind, PackInfo,
    Prompt, PromptAnswer, PromptAnswer_Reply, PromptArgument, PromptError_NotFound, PromptReply, Role, TextContent,
    TextKind, UriKind, Wants,
)


def arg(name: str, description: str, required: bool = False, kind: ArgumentKind | None = None,
        default: str | None = None, examples: tuple[str, ...] = ()) -> PromptArgument:
    """One argument in one line: its kind, default and examples are checked,
    completed and shown to clients by the host, before the pack runs."""
    return PromptArgument(name=name, title=None, description=description, required=required, kind=kind,
                          default=default, examples=list(examples))


# The kinds: text, a whole number, a number, true or false, one of these, a URI.
def text(max_length: int | None = None, pattern: str | None = None) -> ArgumentKind:
    return ArgumentKind_Text(TextKind(max_length=max_length, pattern=pattern))


def integer(min: int | None = None, max: int | None = None) -> ArgumentKind:
    return ArgumentKind_Integer(IntegerKind(min=min, max=max))


def number(min: float | None = None, max: float | None = None) -> ArgumentKind:
    return ArgumentKind_Number(NumberKind(min=min, max=max))


def boolean() -> ArgumentKind:
    return ArgumentKind_Boolean()


def choice(*choices: str) -> ArgumentKind:
    return ArgumentKind_Choice(list(choices))


def uri(*schemes: str) -> ArgumentKind:
    return ArgumentKind_Uri(UriKind(schemes=list(schemes)))


SUMMARIZE = Prompt(
    name="summarize",
    title="Summarize text",
    description="Asks for a summary of a text",
    arguments=[
        # Left out, the text is asked for: the host shows the user a form
        # (this prompt is named in Asking below).
        arg("text", "The text to summarize", required=True),
        arg("length", "How long the summary is", kind=choice("short", "medium", "long"), default="short"),
    ],
    icons=[],
)


def argument(arguments: list[Argument], name: str) -> str | None:
    return next((argument.value for argument in arguments if argument.name == name), None)


class PromptProvider(exports.PromptProvider):
    def describe_pack(self) -> PackInfo:
        """What the pack says it is: `prompt-host inspect` shows it.

        A pack sees nothing of the machine. It may ask to see a folder (read
        with open("/logs/...")), call an origin or read a value (os.environ),
        which the operator grants in [plugins.NAME.grants]:
            wants=Wants(folders=[WantedFolder(name="logs", description="...")], origins=[], env=["API_TOKEN"])
        """
        return PackInfo(name="{{name}}", version="0.1.0", description="Prompts that {{name}} provides", authors=[],
                        license=None, homepage=None, repository=None, wants=Wants(folders=[], origins=[], env=[]))

    def list_prompts(self) -> list[Prompt]:
        return [SUMMARIZE]

    def get_prompt(self, name: str, arguments: list[Argument], input: Input | None) -> PromptAnswer:
        """The host calls this only with every required argument, each value
        of its kind, and the defaults filled in."""
        if name != "summarize":
            raise Err(PromptError_NotFound())
        summary = f"Write a {argument(arguments, 'length')} summary of this text:\n\n{argument(arguments, 'text')}"
        message = Message(role=Role.USER, content=Content_Text(TextContent(text=summary, annotations=None)))
        return PromptAnswer_Reply(PromptReply(description=None, messages=[message]))

    def complete(self, prompt: str, argument_name: str, value: str, context: list[Argument]) -> Completion:
        """The host completes `length` (a choice) itself; nothing else completes."""
        if prompt != "summarize":
            raise Err(PromptError_NotFound())
        return Completion(values=[], total=None, has_more=False)


class Asking(exports.Asking):
    def prompts_that_ask(self) -> list[str]:
        """The prompts whose missing required arguments the host asks the user for."""
        return ["summarize"]
