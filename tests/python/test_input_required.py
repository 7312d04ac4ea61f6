"""End-to-end: the official MCP Python SDK client (mcp 2.3, which negotiates
2026-07-28 by default and drives `InputRequiredResult`s through its
elicitation callback) against an input-required prompt of a WIT 0.2 pack,
over Streamable HTTP: the first call, the form, the retry, the final
messages; a tampered `requestState` refused; an answer that violates the
form refused with -32602."""

import pytest

from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import ElicitResult, InputRequiredResult

from server import http_server

PROMPT = "test_input_required_result_prompt"


def answering(content: dict, asked: list):
    """An elicitation callback that records what it was asked and answers `content`."""

    async def callback(context, params):
        asked.append(params)
        return ElicitResult(action="accept", content=content)

    return callback


@pytest.mark.anyio
async def test_the_sdk_fills_in_the_form_and_gets_the_messages():
    asked = []
    with http_server(["conformance"]) as (url, _):
        async with Client(url, elicitation_callback=answering({"context": "from python"}, asked)) as client:
            result = await client.get_prompt(PROMPT)
    assert [message.content.text for message in result.messages] == ["Prompt with context: 'from python'"]
    assert len(asked) == 1
    assert asked[0].message == "What context should the prompt use?"
    assert asked[0].requested_schema == {
        "type": "object",
        "properties": {"context": {"type": "string"}},
        "required": ["context"],
    }


async def first_round(client) -> InputRequiredResult:
    first = await client.session.get_prompt(PROMPT, allow_input_required=True)
    assert isinstance(first, InputRequiredResult)
    assert list(first.input_requests) == ["user_context"]
    return first


@pytest.mark.anyio
async def test_a_tampered_request_state_is_refused():
    with http_server(["conformance"]) as (url, _):
        async with Client(url, elicitation_callback=answering({}, [])) as client:
            first = await first_round(client)
            answer = {"user_context": ElicitResult(action="accept", content={"context": "x"})}
            with pytest.raises(MCPError) as refused:
                await client.session.get_prompt(
                    PROMPT, input_responses=answer, request_state=first.request_state + "-TAMPERED",
                    allow_input_required=True,
                )
    assert refused.value.error.code == -32602
    assert refused.value.error.message == (
        f"prompt '{PROMPT}': the requestState was not issued by this server to this user for this prompt and these "
        "arguments, or has expired: send the request again without requestState and inputResponses"
    )


@pytest.mark.anyio
async def test_an_answer_that_violates_the_form_is_refused_naming_the_field():
    with http_server(["conformance"]) as (url, _):
        async with Client(url, elicitation_callback=answering({"context": 5}, [])) as client:
            with pytest.raises(MCPError) as refused:
                await client.get_prompt(PROMPT)
    assert refused.value.error.code == -32602
    assert refused.value.error.message == (
        f"prompt '{PROMPT}': inputResponses[\"user_context\"]: field \"context\" must be a string, not a number"
    )
    assert refused.value.error.data == {"prompt": PROMPT, "form": "user_context", "field": "context"}
