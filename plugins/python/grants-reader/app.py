"""A pack in Python (WIT 0.3) that asks for a folder and a value and reads
them with Python's own open() and os.environ, which componentize-py
implements on the standard wasi:filesystem and wasi:cli/environment: the
host gives only what is asked for here and granted
(tests/python/test_other_languages.py). Built by tests/build-packs with
componentize-py against wit/0.3."""

import os

from componentize_py_types import Err
from wit_world import exports
from wit_world.exports.prompt_provider import (
    Content_Text, Message, PackInfo, Prompt, PromptAnswer_Reply, PromptArgument, PromptReply, Role, TextContent,
    Wants, WantedFolder, Completion, PromptError_NotFound,
)


def text(value):
    return Message(role=Role.USER, content=Content_Text(TextContent(text=value, annotations=None)))


class PromptProvider(exports.PromptProvider):
    def describe_pack(self):
        return PackInfo(
            name="py-grants-reader", version="0.1.0", description="Reads the folder and value it is granted",
            authors=[], license=None, homepage=None, repository=None,
            wants=Wants(folders=[WantedFolder(name="logs", description="log files to read")], origins=[], env=["GREETING"]),
        )

    def list_prompts(self):
        def argument(name):
            return PromptArgument(name=name, title=None, description=name, required=True, kind=None, default=None, examples=[])
        return [
            Prompt(name="read", title=None, description="Reads a file", arguments=[argument("path")], icons=[]),
            Prompt(name="env", title=None, description="Reads a value", arguments=[argument("name")], icons=[]),
        ]

    def get_prompt(self, name, arguments, input):
        values = {argument.name: argument.value for argument in arguments}
        if name == "read":
            try:
                with open(values["path"]) as file:
                    answer = "read: " + file.read()
            except OSError as error:
                answer = f"error: {type(error).__name__}"
        elif name == "env":
            answer = f"{values['name']}={os.environ.get(values['name'], '(not set)')}"
        else:
            raise Err(PromptError_NotFound())
        return PromptAnswer_Reply(PromptReply(description=None, messages=[text(answer)]))

    def complete(self, prompt, argument, value, context):
        return Completion(values=[], total=None, has_more=False)
