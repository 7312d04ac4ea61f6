"""A pack in Python (WIT 0.3) that asks for a folder, a value and HTTP
origins: it reads the folder and the value with Python's own open() and
os.environ, which componentize-py implements on the standard
wasi:filesystem and wasi:cli/environment, and calls an origin through the
standard wasi:http/outgoing-handler's own bindings (Python's urllib needs
sockets, which a pack has none of). The host gives only what is asked for
here and granted (tests/python/test_other_languages.py). Built by
tests/build-packs with componentize-py, against a world that includes
wit/0.3's prompt-pack and imports wasi:http/outgoing-handler."""

import os

from componentize_py_types import Err, Ok
from wit_world import exports
from wit_world.imports import outgoing_handler, streams
from wit_world.imports import types as http
from wit_world.exports.prompt_provider import (
    Content_Text, Message, PackInfo, Prompt, PromptAnswer_Reply, PromptArgument, PromptReply, Role, TextContent,
    Wants, WantedFolder, Completion, PromptError_NotFound,
)


def text(value):
    return Message(role=Role.USER, content=Content_Text(TextContent(text=value, annotations=None)))


def fetch(authority, path):
    """GET http://AUTHORITY/PATH: `status N: BODY`, or `error: CODE`."""
    request = http.OutgoingRequest(http.Fields())
    request.set_scheme(http.Scheme_Http())
    request.set_authority(authority)
    request.set_path_with_query(path)
    try:
        future = outgoing_handler.handle(request, None)
    except Err as error:
        return f"error: {error.value}"
    future.subscribe().block()
    answer = future.get()
    if not isinstance(answer, Ok) or not isinstance(answer.value, Ok):
        return f"error: {answer}"
    # A stream is dropped before its body, a body before its response
    # (the host traps otherwise): hence the nesting.
    with answer.value.value as response, response.consume() as incoming, incoming.stream() as stream:
        body = b""
        while True:
            try:
                body += stream.blocking_read(65536)
            except Err as error:
                if isinstance(error.value, streams.StreamError_Closed):
                    break
                return f"error: {error.value}"
        return f"status {response.status()}: {body.decode()}"


class PromptProvider(exports.PromptProvider):
    def describe_pack(self):
        return PackInfo(
            name="py-grants-reader", version="0.1.0", description="Reads the folder and value it is granted",
            authors=[], license=None, homepage=None, repository=None,
            wants=Wants(
                folders=[WantedFolder(name="logs", description="log files to read")],
                origins=[f"http://127.0.0.1:{port}" for port in range(47801, 47809)],
                env=["GREETING"],
            ),
        )

    def list_prompts(self):
        def argument(name):
            return PromptArgument(name=name, title=None, description=name, required=True, kind=None, default=None, examples=[])
        return [
            Prompt(name="read", title=None, description="Reads a file", arguments=[argument("path")], icons=[]),
            Prompt(name="env", title=None, description="Reads a value", arguments=[argument("name")], icons=[]),
            Prompt(name="fetch-path", title=None, description="Fetches a path of a loopback origin",
                   arguments=[argument("port"), argument("path")], icons=[]),
        ]

    def get_prompt(self, name, arguments, input):
        values = {argument.name: argument.value for argument in arguments}
        if name == "read":
            try:
                with open(values["path"]) as file:
                    answer = "read: " + file.read()
            except OSError as error:
                answer = f"error: {type(error).__name__}"
        elif name == "fetch-path":
            answer = fetch(f"127.0.0.1:{values['port']}", values["path"])
        elif name == "env":
            answer = f"{values['name']}={os.environ.get(values['name'], '(not set)')}"
        else:
            raise Err(PromptError_NotFound())
        return PromptAnswer_Reply(PromptReply(description=None, messages=[text(answer)]))

    def complete(self, prompt, argument, value, context):
        return Completion(values=[], total=None, has_more=False)
