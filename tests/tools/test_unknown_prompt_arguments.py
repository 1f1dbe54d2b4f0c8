"""A `prompts/get` naming an argument the prompt does not take is refused with -32602 in both
eras, naming the argument and the closest known name, instead of rendering without it."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws import ToolSet
from support.domain import Domain
from support.legacy import LegacyClient, messages, task_transport
from support.mcp import McpClient

INVALID_PARAMS = -32602

prompts = ToolSet(name="prompts", version="1")


@prompts.prompt
def review(language: str, focus: str = "bugs") -> str:
    """Review some code."""
    return f"Review this {language} code for {focus}."


@pytest.fixture
def domain() -> Domain:
    return Domain()


def _modern_error(domain: Domain, arguments: dict[str, str]) -> dict[str, Any]:
    client = McpClient(task_transport(domain.service, prompts))
    response = client.request("prompts/get", {"name": "review", "arguments": arguments})
    return client.error(response)


def test_a_misspelt_prompt_argument_names_the_closest_known_one(domain: Domain) -> None:
    error = _modern_error(domain, {"language": "python", "fokus": "style"})
    assert error["code"] == INVALID_PARAMS
    assert error["message"] == "Unknown argument 'fokus' for prompt review: did you mean 'focus'?"
    assert error["data"] == {"unknownArguments": ["fokus"]}


def test_the_2025_11_25_era_refuses_it_too(domain: Domain) -> None:
    legacy = LegacyClient(task_transport(domain.service, prompts))
    legacy.initialize()
    response = legacy.request(
        "prompts/get", {"name": "review", "arguments": {"language": "go", "colour": "red"}}
    )
    final = messages(response)[-1]
    assert final["error"]["code"] == INVALID_PARAMS
    assert final["error"]["message"] == (
        "Unknown argument 'colour' for prompt review: it takes language, focus"
    )


def test_known_prompt_arguments_still_render(domain: Domain) -> None:
    client = McpClient(task_transport(domain.service, prompts))
    result = client.result("prompts/get", {"name": "review", "arguments": {"language": "rust"}})
    assert result["messages"][0]["content"]["text"] == "Review this rust code for bugs."
