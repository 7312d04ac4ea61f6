"""The {{name}} prompt pack, in Python. componentize-py turns it into
{{name}}.wasm against wit/prompt-provider.wit, WIT 0.2 (see README.md). The
class below is the prompt-provider interface of that WIT file; errors are
raised as Err(PromptError_...)."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.prompt_provider import (
    Argument, Completion, Content_Text, FieldKind_String, FieldValue_String, Form, FormField,
    FormResponse_Accept, Input, InputRequired, Message, PackInfo, Prompt, PromptAnswer,
    PromptAnswer_InputRequired, PromptAnswer_Reply, PromptArgument, PromptError_InvalidArguments,
    PromptError_NotFound, PromptReply, Role, TextContent,
)

LENGTHS = ["short", "medium", "long"]

SUMMARIZE = Prompt(
    name="summarize",
    title="Summarize text",
    description="Asks for a summary of a text",
    arguments=[
        # Optional to the client: left out, the text is asked for with a form.
        PromptArgument(name="text", title=None, description="The text to summarize", required=False),
        PromptArgument(name="length", title=None, description="short, medium or long (default: short)", required=False),
    ],
    icons=[],
)

# The form that asks for the text when the client left it out.
ASK_FOR_TEXT = Form(
    key="text",
    message="What text should be summarized?",
    fields=[FormField(name="text", title=None, description="The text to summarize", kind=FieldKind_String(None),
                      required=True)],
)


def argument(arguments: list[Argument], name: str) -> str | None:
    return next((argument.value for argument in arguments if argument.name == name), None)


def answered(input: Input | None, key: str, field: str) -> str | None:
    """The text the user filled in for `field` of the form `key`; an error if
    they declined the form; None if it was not asked yet."""
    for answer in input.answers if input else []:
        if answer.key != key:
            continue
        if not isinstance(answer.response, FormResponse_Accept):
            raise Err(PromptError_InvalidArguments(f"argument '{field}' is missing, and the user declined to give it"))
        for value in answer.response.value:
            if value.name == field and isinstance(value.value, FieldValue_String):
                return value.value.value
    return None


class PromptProvider(exports.PromptProvider):
    def describe_pack(self) -> PackInfo:
        """What the pack says it is: `prompt-host inspect` shows it.

        A pack sees nothing of the machine. Built against WIT 0.3 (the
        host's wit/0.3), it may also say what it wants, which the operator
        grants in [plugins.NAME.grants], and then read the folder with
        open("/logs/...") and the value with os.environ:
            wants=Wants(folders=[WantedFolder(name="logs", description="...")], origins=[], env=["API_TOKEN"])
        """
        return PackInfo(name="{{name}}", version="0.1.0", description="Prompts that {{name}} provides", authors=[],
                        license=None, homepage=None, repository=None)

    def list_prompts(self) -> list[Prompt]:
        return [SUMMARIZE]

    def get_prompt(self, name: str, arguments: list[Argument], input: Input | None) -> PromptAnswer:
        if name != "summarize":
            raise Err(PromptError_NotFound())
        text = argument(arguments, "text")
        if text is None:
            text = answered(input, "text", "text")
        if text is None:
            # The host asks the user, then calls again with the answer in `input`.
            return PromptAnswer_InputRequired(InputRequired(forms=[ASK_FOR_TEXT], state=b""))
        length = argument(arguments, "length")
        if length is None:
            length = "short"
        if length not in LENGTHS:
            raise Err(PromptError_InvalidArguments("argument 'length' must be one of: " + ", ".join(LENGTHS)))
        message = Message(
            role=Role.USER,
            content=Content_Text(TextContent(text=f"Write a {length} summary of this text:\n\n{text}", annotations=None)),
        )
        return PromptAnswer_Reply(PromptReply(description=None, messages=[message]))

    def complete(self, prompt: str, argument_name: str, value: str, context: list[Argument]) -> Completion:
        if prompt != "summarize":
            raise Err(PromptError_NotFound())
        if argument_name != "length":
            return Completion(values=[], total=None, has_more=False)
        values = [length for length in LENGTHS if length.startswith(value.lower())]
        return Completion(values=values, total=len(values), has_more=False)
