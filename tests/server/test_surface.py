"""The server surface beyond tools: completions, resources and templates, inline progress,
hand-written schemas, and the startup check of a tool set."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from typing import Any

import pytest

from mcp_tasks_aws import ResourceNotFound, ToolContext, ToolDefinitionError, ToolSet
from mcp_tasks_aws.protocol.request_state import RequestStateCodec
from mcp_tasks_aws.server.methods import McpServer
from support.mcp import SECRET, McpClient

surface = ToolSet(name="surface", version="1")


@surface.prompt
def plan_trip(city: str, days: str = "3") -> str:
    """Plan a trip.

    Args:
        city: Where to.
        days: How long.
    """
    return f"Plan {days} days in {city}."


@surface.completer(prompt="plan_trip", argument="city")
def cities(value: str) -> list[str]:
    return [c for c in ("Lisbon", "London", "Lyon", "Paris") if c.lower().startswith(value.lower())]


@surface.completer(prompt="plan_trip", argument="days")
def many_days(value: str, context: dict[str, str]) -> list[str]:
    return [f"{n}" for n in range(1, 151)] if context.get("city") else []


@surface.resource("docs://readme")
def readme() -> str:
    """The readme."""
    return "Read me."


@surface.resource("docs://logo", mime_type="image/png")
def logo() -> bytes:
    """The logo."""
    return b"\x89PNG\r\n\x1a\n"


@surface.resource("users://{user}/files/{name}", mime_type="application/json")
def user_file(user: str, name: str) -> str:
    """A user's file."""
    if user == "ghost":
        raise ResourceNotFound()
    if user == "broken":
        raise RuntimeError("disk on fire: /var/secret")
    return json.dumps({"user": user, "name": name})


@surface.completer(resource="users://{user}/files/{name}", argument="name")
def file_names(value: str, context: dict[str, str]) -> list[str]:
    if context.get("user") == "crash":
        raise RuntimeError("index unavailable")
    return [f"{context.get('user', '?')}-{value}.txt"]


@surface.tool
def count_up(steps: int, ctx: ToolContext) -> str:
    """Counts up, reporting each step.

    Args:
        steps: How many steps.
    """
    for step in range(steps + 1):
        ctx.report(f"step {step}", progress=step, total=steps)
    return f"Counted to {steps}."


@surface.tool(
    input_schema={
        "type": "object",
        "properties": {
            "email": {"type": "string", "pattern": "^[^@]+@[^@]+$"},
            "age": {"type": "integer", "minimum": 0},
            "plan": {"type": "string", "enum": ["free", "pro"]},
        },
        "required": ["email"],
        "additionalProperties": False,
    }
)
def sign_up(email: str, age: int = 0, plan: str = "free") -> str:
    """Signs someone up (a hand-written schema)."""
    return f"{email} ({age}) on {plan}"


@pytest.fixture
def client(make_client: Callable[..., McpClient]) -> McpClient:
    return make_client(surface)


def _complete(client: McpClient, ref: dict[str, Any], name: str, value: str, **context: str) -> Any:
    params: dict[str, Any] = {"ref": ref, "argument": {"name": name, "value": value}}
    if context:
        params["context"] = {"arguments": context}
    return client.request("completion/complete", params)


PROMPT = {"type": "ref/prompt", "name": "plan_trip"}
TEMPLATE = {"type": "ref/resource", "uri": "users://{user}/files/{name}"}

# -- discovery -----------------------------------------------------------------------------------


def test_discover_advertises_completions_and_resources(client: McpClient) -> None:
    capabilities = client.result("server/discover")["capabilities"]
    assert capabilities["completions"] == {}
    assert capabilities["resources"] == {}
    assert capabilities["prompts"] == {}


def test_a_tool_set_without_completers_does_not_advertise_them(
    make_client: Callable[..., McpClient],
) -> None:
    bare = ToolSet()
    bare.tool(lambda: "x", name="x", description="X.")
    assert "completions" not in make_client(bare).result("server/discover")["capabilities"]


# -- completion/complete -------------------------------------------------------------------------


def test_prompt_argument_completion(client: McpClient) -> None:
    result = client.result(
        "completion/complete",
        {"ref": PROMPT, "argument": {"name": "city", "value": "l"}},
    )
    assert result == {
        "resultType": "complete",
        "completion": {"values": ["Lisbon", "London", "Lyon"], "total": 3, "hasMore": False},
    }


def test_completion_sees_the_context_and_caps_at_100(client: McpClient) -> None:
    response = _complete(client, PROMPT, "days", "", city="Paris")
    completion = response.json["result"]["completion"]
    assert len(completion["values"]) == 100
    assert completion["values"][:2] == ["1", "2"]
    assert (completion["total"], completion["hasMore"]) == (150, True)
    assert _complete(client, PROMPT, "days", "").json["result"]["completion"]["values"] == []


def test_template_variable_completion(client: McpClient) -> None:
    response = _complete(client, TEMPLATE, "name", "notes", user="ada")
    assert response.json["result"]["completion"]["values"] == ["ada-notes.txt"]


def test_an_argument_without_a_completer_completes_to_nothing(client: McpClient) -> None:
    response = _complete(client, TEMPLATE, "user", "a")
    assert response.json["result"]["completion"] == {"values": [], "total": 0, "hasMore": False}


@pytest.mark.parametrize(
    ("ref", "argument", "message"),
    [
        ({"type": "ref/prompt", "name": "nope"}, "city", "Unknown prompt: nope"),
        (PROMPT, "country", "plan_trip has no argument 'country'"),
        ({"type": "ref/resource", "uri": "users://x"}, "user", "Unknown resource template"),
        ({"type": "ref/resource", "uri": "docs://readme"}, "x", "has no argument 'x'"),
        ({"type": "ref/tool", "name": "count_up"}, "steps", "Invalid params"),
    ],
)
def test_completion_of_something_unknown_is_invalid_params(
    client: McpClient, ref: dict[str, Any], argument: str, message: str
) -> None:
    error = client.error(_complete(client, ref, argument, ""))
    assert error["code"] == -32602
    assert message in error["message"]


def test_a_completer_that_raises_is_an_internal_error_and_the_server_stays_up(
    client: McpClient,
) -> None:
    response = _complete(client, TEMPLATE, "name", "x", user="crash")
    assert response.status == 200
    error = client.error(response)
    assert error["code"] == -32603
    assert error["message"] == (
        "Completing argument 'name' of resource template 'users://{user}/files/{name}' failed"
    )
    assert b"index unavailable" not in response.body
    assert _complete(client, TEMPLATE, "name", "x", user="ok").status == 200


# -- resources -----------------------------------------------------------------------------------


def test_static_text_and_binary_resources(client: McpClient) -> None:
    text = client.result("resources/read", {"uri": "docs://readme"})["contents"]
    assert text == [{"uri": "docs://readme", "mimeType": "text/plain", "text": "Read me."}]
    blob = client.result("resources/read", {"uri": "docs://logo"})["contents"][0]
    assert blob == {"uri": "docs://logo", "mimeType": "image/png", "blob": "iVBORw0KGgo="}


def test_templates_are_listed_and_read_with_their_variables(client: McpClient) -> None:
    templates = client.result("resources/templates/list")["resourceTemplates"]
    assert templates == [
        {
            "uriTemplate": "users://{user}/files/{name}",
            "name": "user_file",
            "description": "A user's file.",
            "mimeType": "application/json",
        }
    ]
    listed = [r["uri"] for r in client.result("resources/list")["resources"]]
    assert listed == ["docs://readme", "docs://logo"]  # templates are not resources
    contents = client.result("resources/read", {"uri": "users://ada/files/a%20b.txt"})["contents"]
    assert contents[0]["uri"] == "users://ada/files/a%20b.txt"
    assert json.loads(contents[0]["text"]) == {"user": "ada", "name": "a b.txt"}


@pytest.mark.parametrize(
    "uri",
    [
        "docs://nothing",
        "users://ada/files",  # the template needs a name
        "users://ada/files/a/b",  # a variable is one segment
        "users://ghost/files/x",  # the reader says it does not exist
    ],
)
def test_a_uri_that_names_nothing_is_invalid_params_with_the_uri(
    client: McpClient, uri: str
) -> None:
    response = client.request("resources/read", {"uri": uri})
    assert response.status == 200
    error = client.error(response)
    assert (error["code"], error["data"]) == (-32602, {"uri": uri})
    assert uri in error["message"]


def test_a_reader_that_raises_is_an_internal_error_naming_the_uri(client: McpClient) -> None:
    uri = "users://broken/files/x"
    response = client.request("resources/read", {"uri": uri})
    error = client.error(response)
    assert error == {
        "code": -32603,
        "message": f"Resource {uri} could not be read",
        "data": {"uri": uri},
    }
    assert b"disk on fire" not in response.body
    assert client.request("resources/read", {"uri": "docs://readme"}).status == 200


# -- inline progress -----------------------------------------------------------------------------


def _events(body: bytes) -> list[dict[str, Any]]:
    return [
        json.loads(line[len("data:") :])
        for line in body.decode().split("\n")
        if line.startswith("data:")
    ]


def test_progress_goes_out_on_the_stream_before_the_result(client: McpClient) -> None:
    response = client.request(
        "tools/call",
        {"name": "count_up", "arguments": {"steps": 3}},
        meta={
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
            "progressToken": "tok-1",
        },
    )
    *notifications, last = _events(response.body)
    assert last["result"]["content"][0]["text"] == "Counted to 3."
    params = [n["params"] for n in notifications]
    assert all(n["method"] == "notifications/progress" for n in notifications)
    # Reports run back to back: the throttle lets the first and the final one through.
    assert params == [
        {"progressToken": "tok-1", "progress": 0, "total": 3, "message": "step 0"},
        {"progressToken": "tok-1", "progress": 3, "total": 3, "message": "step 3"},
    ]


def test_no_progress_without_a_token(client: McpClient) -> None:
    response = client.call_tool("count_up", {"steps": 3})
    assert response.headers["content-type"] == "application/json"
    assert response.json["result"]["content"][0]["text"] == "Counted to 3."


# -- hand-written schemas ------------------------------------------------------------------------


def test_a_handwritten_schema_is_listed_unchanged(client: McpClient) -> None:
    tools = {t["name"]: t for t in client.result("tools/list")["tools"]}
    assert tools["sign_up"]["inputSchema"] == surface.tools["sign_up"].handwritten_schema


@pytest.mark.parametrize(
    ("arguments", "problems"),
    [
        ({}, "arguments: missing email"),
        ({"email": "nobody"}, "email: must match ^[^@]+@[^@]+$"),
        ({"email": "a@b", "age": -1}, "age: must be at least 0"),
        ({"email": "a@b", "age": "old"}, "age: must be of type integer"),
        ({"email": "a@b", "plan": "gold"}, "plan: must be one of 'free', 'pro'"),
    ],
)
def test_a_handwritten_schema_is_enforced_with_our_wording(
    client: McpClient, arguments: dict[str, Any], problems: str
) -> None:
    result = client.tool_result("sign_up", arguments)
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"Invalid arguments for tool sign_up: {problems}"


def test_a_name_a_closed_schema_does_not_know_is_a_protocol_error(client: McpClient) -> None:
    # additionalProperties: false: refused before the schema is checked (tools/test_unknown_...)
    error = client.error(client.call_tool("sign_up", {"email": "a@b", "coupon": "X"}))
    assert (error["code"], error["message"]) == (
        -32602,
        "Unknown argument 'coupon' for tool sign_up: it takes email, age, plan",
    )


def test_a_valid_call_reaches_the_function(client: McpClient) -> None:
    result = client.tool_result("sign_up", {"email": "a@b", "age": 30, "plan": "pro"})
    assert result["content"][0]["text"] == "a@b (30) on pro"


# -- the startup check ---------------------------------------------------------------------------


def _server(tools: ToolSet) -> McpServer:
    return McpServer(tools, state_codec=RequestStateCodec(SECRET))


def test_an_undescribable_parameter_stops_the_server_naming_tool_and_parameter() -> None:
    tools = ToolSet()

    @tools.tool
    def connect(host: str, sock: socket.socket) -> str:
        """Connects."""
        return host

    with pytest.raises(ToolDefinitionError, match=r"tool 'connect': parameter 'sock' is typed"):
        _server(tools)


def test_an_undescribable_return_type_stops_the_server() -> None:
    tools = ToolSet()

    @tools.tool
    def opener() -> socket.socket:
        """Opens."""
        raise NotImplementedError

    with pytest.raises(ToolDefinitionError, match="tool 'opener': its return type socket"):
        _server(tools)


@pytest.mark.parametrize(
    ("schema", "why"),
    [
        ({"type": "array"}, '"type": "object"'),
        ({"type": "object", "properties": {}}, "parameter 'email' is not among"),
        (
            {"type": "object", "properties": {"email": {"type": "string"}}},
            "must list it in required",
        ),
        (
            {
                "type": "object",
                "properties": {"email": {"type": "strung"}},
                "required": ["email"],
            },
            "not a valid JSON Schema 2020-12",
        ),
    ],
)
def test_a_handwritten_schema_that_does_not_fit_the_function_stops_the_server(
    schema: dict[str, Any], why: str
) -> None:
    tools = ToolSet()

    def register(email: str) -> str:
        """Registers."""
        return email

    tools.tool(input_schema=schema)(register)
    with pytest.raises(ToolDefinitionError, match=why):
        _server(tools)


@pytest.mark.parametrize(
    ("options", "why"),
    [
        ({"prompt": "missing", "argument": "x"}, "no such prompt"),
        ({"prompt": "greet", "argument": "nobody"}, "no such argument \\(it has: name\\)"),
        ({"resource": "t://{a}", "argument": "b"}, "no such argument \\(it has: a\\)"),
        ({"resource": "t://{zzz}", "argument": "zzz"}, "no such resource"),
    ],
)
def test_a_completer_for_nothing_stops_the_server(options: dict[str, Any], why: str) -> None:
    tools = ToolSet()

    @tools.prompt
    def greet(name: str) -> str:
        """Greets."""
        return name

    @tools.resource("t://{a}")
    def thing(a: str) -> str:
        """A thing."""
        return a

    tools.completer(**options)(lambda value: [])
    with pytest.raises(ToolDefinitionError, match=why):
        _server(tools)


@pytest.mark.parametrize(
    ("uri", "why"),
    [
        ("t://{+path}", "not a level 1 expression"),
        ("t://{a}{b}", "something between them"),
        ("t://{a}/{a}", "appears twice"),
        ("t://{a", "not allowed outside"),
    ],
)
def test_templates_beyond_level_1_are_refused_at_registration(uri: str, why: str) -> None:
    with pytest.raises(ToolDefinitionError, match=why):
        ToolSet().resource(uri, description="Bad.")(lambda **kwargs: "")


def test_template_variables_must_be_the_function_parameters() -> None:
    def read(user: str) -> str:
        """Reads."""
        return user

    with pytest.raises(ToolDefinitionError, match="must be exactly the template's variables"):
        ToolSet().resource("users://{id}")(read)
