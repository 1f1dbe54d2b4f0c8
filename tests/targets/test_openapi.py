"""OpenAPI documents as tools: parameters and JSON bodies become the inputSchema, the 2xx
response the outputSchema, and an operation without an operationId is refused in one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mcp_tasks_aws.targets.declaration import DeclarationError, load_declaration
from mcp_tasks_aws.targets.models import HttpTarget
from support.targets import EXAMPLE, write


def declaration_with(tmp_path: Path, document: dict[str, Any], **source: Any) -> Path:
    (tmp_path / "api.yaml").write_text(yaml.safe_dump(document))
    return write(tmp_path, openapi=[{"document": "api.yaml", **source}])


def test_the_examples_three_operations_become_tools() -> None:
    tools = {t.name: t for t in load_declaration(EXAMPLE).tools if t.target.kind == "http"}
    assert sorted(tools) == ["add_item", "get_item", "list_items"]
    get_item = tools["get_item"]
    assert get_item.input_schema == {
        "type": "object",
        "properties": {"itemId": {"type": "string"}},
        "required": ["itemId"],
    }
    assert isinstance(get_item.target, HttpTarget)
    assert get_item.target.url == "https://inventory.example.com/v1/items/{itemId}"
    assert get_item.annotations == {"readOnlyHint": True}
    # $refs are inlined and OpenAPI 3.0's nullable is JSON Schema 2020-12.
    assert get_item.output_schema is not None
    assert get_item.output_schema["properties"]["note"] == {"type": ["string", "null"]}
    add_item = tools["add_item"]
    assert add_item.input_schema["required"] == ["body"]
    assert add_item.input_schema["properties"]["body"]["required"] == ["name", "quantity"]
    assert isinstance(add_item.target, HttpTarget)
    assert add_item.target.body_argument == "body"
    list_items = tools["list_items"]
    assert isinstance(list_items.target, HttpTarget)
    assert list_items.target.query == ("limit",)
    assert list_items.title == "List items"


DOCUMENT: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "t", "version": "1"},
    "servers": [{"url": "https://{host}/api", "variables": {"host": {"default": "x.example"}}}],
    "paths": {
        "/things/{id}": {
            "parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}}],
            "get": {
                "operationId": "get_thing",
                "parameters": [
                    {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                    {"name": "verbose", "in": "query", "schema": {"type": "boolean"}},
                ],
                "responses": {"200": {"description": "ok"}},
            },
            "delete": {"operationId": "drop_thing", "responses": {"204": {"description": "gone"}}},
        }
    },
}


def test_path_query_and_header_parameters_and_server_variables(tmp_path: Path) -> None:
    tools = {t.name: t for t in load_declaration(declaration_with(tmp_path, DOCUMENT)).tools}
    thing = tools["get_thing"]
    assert isinstance(thing.target, HttpTarget)
    assert thing.target.url == "https://x.example/api/things/{id}"
    assert thing.target.header_arguments == {"X-Trace": "X-Trace"}
    assert thing.target.query == ("verbose",)
    assert thing.input_schema["required"] == ["id"]
    assert thing.output_schema is None  # no JSON response: JSON text
    assert tools["drop_thing"].annotations == {"destructiveHint": True}


def test_only_the_operations_asked_for(tmp_path: Path) -> None:
    path = declaration_with(tmp_path, DOCUMENT, operations=["drop_thing"])
    assert [t.name for t in load_declaration(path).tools] == ["drop_thing"]
    wrong = declaration_with(tmp_path, DOCUMENT, operations=["nope"])
    with pytest.raises(DeclarationError, match="has no operation 'nope'"):
        load_declaration(wrong)


def test_an_operation_without_an_operation_id_is_one_line_naming_it(tmp_path: Path) -> None:
    document = yaml.safe_load(yaml.safe_dump(DOCUMENT))
    del document["paths"]["/things/{id}"]["delete"]["operationId"]
    with pytest.raises(DeclarationError) as caught:
        load_declaration(declaration_with(tmp_path, document))
    assert str(caught.value) == (
        f"{tmp_path / 'api.yaml'}: tool 'DELETE /things/{{id}}': "
        "paths./things/{id}.delete.operationId: missing (each operation becomes a tool named by "
        "its operationId)"
    )


def test_a_relative_server_needs_a_base_url(tmp_path: Path) -> None:
    document = {**DOCUMENT, "servers": [{"url": "/api"}]}
    with pytest.raises(DeclarationError, match="is relative: give baseUrl"):
        load_declaration(declaration_with(tmp_path, document))
    based = declaration_with(tmp_path, document, baseUrl="https://api.example.com")
    target = load_declaration(based).tools[0].target
    assert isinstance(target, HttpTarget)
    assert target.url == "https://api.example.com/things/{id}"


def test_an_operation_twice_with_a_declared_tool_is_refused(tmp_path: Path) -> None:
    (tmp_path / "api.yaml").write_text(yaml.safe_dump(DOCUMENT))
    entry = {
        "name": "get_thing",
        "description": "d",
        "inputSchema": {"type": "object"},
        "target": {"kind": "lambda", "function": "f"},
    }
    path = write(tmp_path, entry, openapi=[{"document": "api.yaml"}])
    with pytest.raises(DeclarationError, match="tool 'get_thing': name: two tools have this name"):
        load_declaration(path)


def test_cookies_and_form_bodies_are_refused(tmp_path: Path) -> None:
    document = yaml.safe_load(yaml.safe_dump(DOCUMENT))
    operation = document["paths"]["/things/{id}"]["get"]
    operation["parameters"].append({"name": "s", "in": "cookie", "schema": {"type": "string"}})
    with pytest.raises(DeclarationError, match="parameters in 'cookie' are not supported"):
        load_declaration(declaration_with(tmp_path, document))
    operation["parameters"].pop()
    operation["requestBody"] = {"content": {"text/plain": {"schema": {"type": "string"}}}}
    with pytest.raises(DeclarationError, match="only application/json request bodies"):
        load_declaration(declaration_with(tmp_path, document))


def test_not_an_openapi_document(tmp_path: Path) -> None:
    with pytest.raises(DeclarationError, match=r"not an OpenAPI 3\.0 or 3\.1 document"):
        load_declaration(declaration_with(tmp_path, {"swagger": "2.0"}))


NAME_RULE = (
    "use 1-128 letters, digits, '_', '-' or '.' (or leave the operation out with operations)"
)


@pytest.mark.parametrize(
    ("operation_id", "problem"),
    [
        *[
            (name, f"invalid tool name {name!r}: {NAME_RULE}")
            for name in ["get thing", "things/get", "x" * 129, "getThing?"]
        ],
        # YAML reads these as no text at all
        *[
            (value, f"{value!r} is not text (each operation becomes a tool named by it)")
            for value in [["get_thing"], {"name": "get_thing"}, True]
        ],
    ],
)
def test_an_operation_id_that_is_not_a_tool_name_is_one_line_naming_it(
    tmp_path: Path, operation_id: object, problem: str
) -> None:
    document = yaml.safe_load(yaml.safe_dump(DOCUMENT))
    document["paths"]["/things/{id}"]["get"]["operationId"] = operation_id
    with pytest.raises(DeclarationError) as caught:
        load_declaration(declaration_with(tmp_path, document))
    assert str(caught.value) == (
        f"{tmp_path / 'api.yaml'}: tool 'GET /things/{{id}}': "
        f"paths./things/{{id}}.get.operationId: {problem}"
    )
    # An operation left out is not served, so its name does not matter.
    kept = declaration_with(tmp_path, document, operations=["drop_thing"])
    assert [t.name for t in load_declaration(kept).tools] == ["drop_thing"]


def with_header(name: str) -> dict[str, Any]:
    document = yaml.safe_load(yaml.safe_dump(DOCUMENT))
    parameter = {"name": name, "in": "header", "required": True, "schema": {"type": "string"}}
    document["paths"]["/things/{id}"]["get"]["parameters"].append(parameter)
    return document


@pytest.mark.parametrize("name", ["Authorization", "content-type", "ACCEPT"])
def test_the_header_parameters_openapi_says_to_ignore_are_ignored(
    tmp_path: Path, name: str
) -> None:
    # The target's auth and its own accept and content-type set these; the model never does.
    tools = {
        t.name: t for t in load_declaration(declaration_with(tmp_path, with_header(name))).tools
    }
    thing = tools["get_thing"]
    assert isinstance(thing.target, HttpTarget)
    assert thing.target.header_arguments == {"X-Trace": "X-Trace"}
    assert name not in thing.input_schema["properties"]
    assert thing.input_schema["required"] == ["id"]


@pytest.mark.parametrize("name", ["Host", "Content-Length", "transfer-encoding", "Connection"])
def test_a_header_that_frames_or_routes_the_request_is_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(DeclarationError, match=f"'{name}' is set by the HTTP client"):
        load_declaration(declaration_with(tmp_path, with_header(name)))
