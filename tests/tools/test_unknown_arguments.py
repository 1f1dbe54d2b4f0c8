"""A `tools/call` naming an argument the tool does not take is refused with -32602, in both eras,
before it runs or becomes a task; the error names the argument and the closest known name.

A hand-written schema decides for itself: `additionalProperties: false` refuses other names,
anything else lets them through to the tool (as JSON Schema does).
"""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws import TaskPolicy, ToolSet
from mcp_tasks_aws.protocol.argument_names import closest_name, unknown_argument_message
from support.domain import Domain
from support.legacy import LegacyClient, task_transport
from support.mcp import TASKS_EXTENSION, McpClient

INVALID_PARAMS = -32602
WITH_TASKS: dict[str, Any] = {"extensions": {TASKS_EXTENSION: {}}}

typos = ToolSet(name="typos", version="1")


@typos.tool
def sparkline(values: list[float], height: int = 32) -> str:
    """Draws numbers."""
    return f"{len(values)} values, {height} px"


@typos.tool(task=TaskPolicy.REQUIRED)
def build_report(pages: int = 3) -> str:
    """A task only."""
    return f"{pages} pages"


OPEN_SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}}


@typos.tool(input_schema=OPEN_SCHEMA)
def search(query: str = "") -> str:
    """Its schema allows other properties (JSON Schema's default)."""
    return f"searched {query!r}"


@typos.tool(
    input_schema={
        "type": "object",
        "properties": {"email": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "string"}},
        "additionalProperties": False,
    }
)
def sign_up(email: str = "") -> str:
    """A closed schema, with a pattern of extra names it takes."""
    return f"signed up {email}"


@pytest.fixture
def domain() -> Domain:
    return Domain()


@pytest.fixture
def client(domain: Domain) -> McpClient:
    return McpClient(task_transport(domain.service, typos))


@pytest.fixture
def legacy(domain: Domain) -> LegacyClient:
    legacy = LegacyClient(task_transport(domain.service, typos))
    legacy.initialize()
    return legacy


def _error(client: McpClient, name: str, arguments: dict[str, Any], **kwargs: Any) -> Any:
    response = client.call_tool(name, arguments, **kwargs)
    return client.error(response)


def test_a_misspelt_argument_names_the_closest_known_one(client: McpClient) -> None:
    error = _error(client, "sparkline", {"values": [1, 2], "heigth": 100})
    assert error["code"] == INVALID_PARAMS
    assert (
        error["message"] == "Unknown argument 'heigth' for tool sparkline: did you mean 'height'?"
    )
    assert error["data"] == {"unknownArguments": ["heigth"]}


def test_without_a_close_name_the_error_lists_what_the_tool_takes(client: McpClient) -> None:
    error = _error(client, "sparkline", {"values": [1], "colour_scheme": "dark"})
    assert error["message"] == (
        "Unknown argument 'colour_scheme' for tool sparkline: it takes values, height"
    )


def test_several_unknown_arguments_are_named_together(client: McpClient) -> None:
    error = _error(client, "sparkline", {"valuse": [1], "zzz": 1})
    assert error["message"] == (
        "Unknown arguments 'valuse' (did you mean 'values'?), 'zzz' for tool sparkline: "
        "it takes values, height"
    )


def test_a_task_is_not_created_for_a_misspelt_argument(client: McpClient, domain: Domain) -> None:
    error = _error(client, "build_report", {"page": 2}, capabilities=WITH_TASKS)
    assert (
        error["message"] == "Unknown argument 'page' for tool build_report: did you mean 'pages'?"
    )
    assert domain.store.all_records() == []


def test_the_2025_11_25_era_refuses_it_too_with_or_without_a_task(
    legacy: LegacyClient, domain: Domain
) -> None:
    for params in (
        {"name": "sparkline", "arguments": {"values": [1], "Height": 8}},
        {"name": "build_report", "arguments": {"Pages": 2}, "task": {}},
    ):
        response = legacy.request("tools/call", params)
        assert response.status == 200, response.body
        error = response.json["error"]
        assert error["code"] == INVALID_PARAMS
        assert "did you mean" in error["message"]
    assert domain.store.all_records() == []  # no task was created


def test_an_open_handwritten_schema_lets_other_names_through(client: McpClient) -> None:
    result = client.tool_result("search", {"query": "q", "limit": 5})
    assert result["content"][0]["text"] == "searched 'q'"


def test_a_closed_handwritten_schema_refuses_other_names_but_its_patterns(
    client: McpClient,
) -> None:
    error = _error(client, "sign_up", {"emial": "a@b"})
    assert error["message"] == "Unknown argument 'emial' for tool sign_up: did you mean 'email'?"
    result = client.tool_result("sign_up", {"email": "a@b", "x-source": "web"})
    assert result["content"][0]["text"] == "signed up a@b"


def test_known_arguments_still_reach_the_tool(client: McpClient) -> None:
    result = client.tool_result("sparkline", {"values": [1, 2], "height": 8})
    assert result["content"][0]["text"] == "2 values, 8 px"


@pytest.mark.parametrize(
    ("name", "known", "expected"),
    [
        ("heigth", ["values", "height"], "height"),
        ("HEIGHT", ["values", "height"], "height"),
        ("colour", ["values", "height"], None),
        ("x", [], None),
    ],
)
def test_closest_name(name: str, known: list[str], expected: str | None) -> None:
    assert closest_name(name, known) == expected


def test_a_tool_without_parameters_says_so() -> None:
    schema = {"type": "object", "properties": {}}
    assert unknown_argument_message("ping", schema, ["x"]) == (
        "Unknown argument 'x' for tool ping: it takes no arguments"
    )
