"""The {{name}} prompt pack, in Python. componentize-py turns it into
{{name}}.wasm against wit/prompt-provider.wit (see README.md). The class below
is the prompt-provider interface of that WIT file; errors are raised as
Err(PromptError_...)."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.prompt_provider import (
    Argument, Completion, Content_Text, Message, Prompt, PromptArgument,
    PromptError_InvalidArguments, PromptError_NotFound, PromptReply, Role,
    TextContent,
)

LENGTHS = ["short", "medium", "long"]

SUMMARIZE = Prompt(
    name="summarize",
    title="Summarize text",
    description="Asks for a summary of a text",
    arguments=[
        PromptArgument(name="text", title=None, description="The text to summarize", required=True),
        PromptArgument(name="length", title=None, description="short, medium or long (default: short)", required=False),
    ],
    icons=[],
)


def argument(arguments: list[Argument], name: str) -> str | None:
    return next((argument.value for argument in arguments if argument.name == name), None)


class PromptProvider(exports.PromptProvider):
    def list_prompts(self) -> list[Prompt]:
        return [SUMMARIZE]

    def get_prompt(self, name: str, arguments: list[Argument]) -> PromptReply:
        if name != "summarize":
            raise Err(PromptError_NotFound())
        text = argument(arguments, "text")
        if text is None:
            raise Err(PromptError_InvalidArguments("missing required argument 'text'"))
        length = argument(arguments, "length")
        if length is None:
            length = "short"
        if length not in LENGTHS:
            raise Err(PromptError_InvalidArguments("argument 'length' must be one of: " + ", ".join(LENGTHS)))
        message = Message(
            role=Role.USER,
            content=Content_Text(TextContent(text=f"Write a {length} summary of this text:\n\n{text}", annotations=None)),
        )
        return PromptReply(description=None, messages=[message])

    def complete(self, prompt: str, argument_name: str, value: str, context: list[Argument]) -> Completion:
        if prompt != "summarize":
            raise Err(PromptError_NotFound())
        if argument_name != "length":
            return Completion(values=[], total=None, has_more=False)
        values = [length for length in LENGTHS if length.startswith(value.lower())]
        return Completion(values=values, total=len(values), has_more=False)
