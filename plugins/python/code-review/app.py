"""The `code_review` prompt pack in Python, built into a component with
componentize-py against the same WIT as the Rust packs (see
tests/build-packs). It answers exactly as plugins/code-review does."""

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.prompt_provider import (
    Argument, Completion, Content_Text, Message, Prompt, PromptArgument,
    PromptError_InvalidArguments, PromptError_NotFound, PromptReply, Role,
    TextContent,
)


class PromptProvider(exports.PromptProvider):
    def list_prompts(self) -> list[Prompt]:
        return [
            Prompt(
                name="code_review",
                title="Request Code Review",
                description="Asks the LLM to analyze code quality and suggest improvements",
                arguments=[PromptArgument(name="code", title=None, description="The code to review", required=True)],
                icons=[],
            )
        ]

    def get_prompt(self, name: str, arguments: list[Argument]) -> PromptReply:
        if name != "code_review":
            raise Err(PromptError_NotFound())
        code = next((argument.value for argument in arguments if argument.name == "code"), None)
        if code is None:
            raise Err(PromptError_InvalidArguments("missing required argument 'code'"))
        text = TextContent(text="Please review this Python code:\n" + code, annotations=None)
        return PromptReply(description="Code review prompt", messages=[Message(role=Role.USER, content=Content_Text(text))])

    def complete(self, prompt: str, argument: str, value: str, context: list[Argument]) -> Completion:
        return Completion(values=[], total=None, has_more=False)
