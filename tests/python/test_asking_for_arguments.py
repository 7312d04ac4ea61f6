"""End-to-end: the official MCP Python SDK client answers the form the host
builds for a prompt's missing arguments (WIT 0.3.1's `asking`; the fixture
`typed_arguments` opts `announce` in), over Streamable HTTP, in both ways a
client is asked: as an `InputRequiredResult` (protocol 2026-07-28, which
`Client` negotiates) and as an `elicitation/create` request on the session
(2025-11-25, which `ClientSession` over `streamable_http_client`
negotiates). The form's schema is the one the declared kinds make, the
answers reach the pack as arguments, and a declined form is -32602."""

import pytest

from mcp import Client, ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult

from server import http_server

SCHEMA = {
    "type": "object",
    "properties": {
        "count": {"type": "integer", "description": "The count (an integer from 1 to 10)"},
        "urgent": {"type": "boolean", "description": "The urgent (true or false)"},
        "headline": {"type": "string", "description": "The headline (text of at most 40 characters)"},
    },
    "required": ["count", "urgent", "headline"],
}
GIVEN = {"tone": "formal", "ratio": "0.75"}


def answering(action: str, content: dict | None, asked: list):
    """An elicitation callback that records what it was asked and answers `action` with `content`."""

    async def callback(context, params):
        asked.append(params)
        return ElicitResult(action=action, content=content)

    return callback


def lines(result) -> str:
    return "\n".join(message.content.text for message in result.messages)


@pytest.mark.anyio
async def test_a_2026_client_fills_in_the_form_built_from_the_kinds():
    asked = []
    answers = {"count": 7, "urgent": False, "headline": "From Python"}
    with http_server(["typed_arguments"]) as (url, _):
        async with Client(url, elicitation_callback=answering("accept", answers, asked)) as client:
            assert client.session.protocol_version == "2026-07-28"
            result = await client.get_prompt("announce", GIVEN)
    assert lines(result) == "channel=general\ncount=7\nheadline=From Python\nratio=0.75\ntone=formal\nurgent=false"
    assert [(params.message, params.requested_schema) for params in asked] == [
        ("The prompt announce needs: count, urgent, headline", SCHEMA)
    ]


@pytest.mark.anyio
async def test_a_2026_client_that_declines_gets_the_missing_arguments_refused():
    with http_server(["typed_arguments"]) as (url, _):
        async with Client(url, elicitation_callback=answering("decline", None, [])) as client:
            with pytest.raises(MCPError) as refused:
                await client.get_prompt("announce", GIVEN)
    assert refused.value.error.code == -32602
    assert refused.value.error.message == "prompt 'announce' is missing required arguments: count, urgent, headline"


@pytest.mark.anyio
async def test_an_earlier_client_is_asked_over_its_session():
    asked = []
    answers = {"count": 2, "urgent": True, "headline": "Over elicitation"}
    with http_server(["typed_arguments"]) as (url, _):
        async with streamable_http_client(url) as (read, write), ClientSession(
            read, write, elicitation_callback=answering("accept", answers, asked)
        ) as session:
            initialized = await session.initialize()
            assert initialized.protocol_version == "2025-11-25"
            result = await session.get_prompt("announce", GIVEN)
    assert lines(result) == "channel=general\ncount=2\nheadline=Over elicitation\nratio=0.75\ntone=formal\nurgent=true"
    assert [(params.message, params.requested_schema) for params in asked] == [
        ("The prompt announce needs: count, urgent, headline", SCHEMA)
    ]
