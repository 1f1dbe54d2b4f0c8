"""The registry: tool schemas from type hints and docstrings, and registration rules."""

from __future__ import annotations

import base64
from typing import Any, Literal

import jsonschema
import pytest
from pydantic import BaseModel, Field

from mcp_tasks_aws import TaskPolicy, ToolContext, ToolResult, ToolSet
from mcp_tasks_aws.tools import resources
from mcp_tasks_aws.tools.signature import ToolDefinitionError


def _spec(fn: Any, **options: Any) -> Any:
    toolset = ToolSet()
    toolset.tool(**options)(fn)
    return toolset.tools[options.get("name") or fn.__name__]


# -- input schemas ------------------------------------------------------------------------------


def book_flight(
    origin: str,
    destination: str,
    passengers: int = 1,
    cabin: Literal["economy", "business", "first"] = "economy",
    flexible: bool = False,
    tags: list[str] | None = None,
) -> str:
    """Book a flight between two airports.

    Some more detail about booking that stays in the description.

    Args:
        origin: IATA code of the departure airport.
        destination (str): IATA code of the arrival
            airport, continued on a second line.
        passengers: How many people travel.
        cabin: Which cabin to book.

    Returns:
        A booking reference.
    """
    return "ABC123"


def test_required_parameters_are_those_without_defaults() -> None:
    schema = _spec(book_flight).input_schema
    assert schema["type"] == "object"
    assert schema["required"] == ["origin", "destination"]
    assert list(schema["properties"]) == [
        "origin",
        "destination",
        "passengers",
        "cabin",
        "flexible",
        "tags",
    ]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("origin", {"type": "string"}),
        ("passengers", {"type": "integer", "default": 1}),
        ("flexible", {"type": "boolean", "default": False}),
        ("cabin", {"enum": ["economy", "business", "first"], "type": "string"}),
    ],
)
def test_types_defaults_and_enums_come_from_hints(name: str, expected: dict[str, Any]) -> None:
    prop = _spec(book_flight).input_schema["properties"][name]
    for key, value in expected.items():
        assert prop[key] == value
    assert "title" not in prop


def test_optional_list_parameter_accepts_a_list_or_null() -> None:
    schema = _spec(book_flight).input_schema
    jsonschema.validate({"origin": "A", "destination": "B", "tags": ["x"]}, schema)
    jsonschema.validate({"origin": "A", "destination": "B", "tags": None}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"origin": "A", "destination": "B", "tags": [1]}, schema)


@pytest.mark.parametrize(
    "arguments",
    [
        {"origin": "A"},
        {"origin": "A", "destination": "B", "cabin": "coach"},
        {"origin": "A", "destination": "B", "passengers": "two"},
    ],
)
def test_schema_rejects_what_the_function_cannot_take(arguments: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(arguments, _spec(book_flight).input_schema)


def test_docstring_args_become_property_descriptions() -> None:
    props = _spec(book_flight).input_schema["properties"]
    assert props["origin"]["description"] == "IATA code of the departure airport."
    assert props["destination"]["description"] == (
        "IATA code of the arrival airport, continued on a second line."
    )
    assert props["cabin"]["description"] == "Which cabin to book."
    assert "description" not in props["flexible"]


def test_description_is_the_docstring_without_args_and_returns() -> None:
    description = _spec(book_flight).description
    assert description.startswith("Book a flight between two airports.")
    assert "stays in the description" in description
    assert "Args:" not in description
    assert "IATA" not in description
    assert "booking reference" not in description


def test_explicit_description_and_title_win() -> None:
    spec = _spec(book_flight, name="book", description="Books.", title="Book a flight")
    wire = spec.to_wire()
    assert wire["name"] == "book"
    assert wire["description"] == "Books."
    assert wire["title"] == "Book a flight"


def test_tool_without_parameters_has_an_empty_object_schema() -> None:
    def ping() -> str:
        """Ping."""
        return "pong"

    assert _spec(ping).input_schema == {"type": "object", "properties": {}}


# -- the injected context -----------------------------------------------------------------------


def test_tool_context_parameter_is_not_in_the_schema() -> None:
    async def ask(question: str, ctx: ToolContext, retries: int = 2) -> str:
        """Ask something."""
        return question

    spec = _spec(ask)
    assert spec.context_param == "ctx"
    assert set(spec.input_schema["properties"]) == {"question", "retries"}
    assert spec.input_schema["required"] == ["question"]
    assert "ctx" not in spec.arguments_model.model_fields
    assert spec.is_async


def test_context_parameter_may_have_any_name() -> None:
    def work(context: ToolContext) -> str:
        """Work."""
        return "done"

    spec = _spec(work)
    assert spec.context_param == "context"
    assert spec.input_schema["properties"] == {}


def test_variadic_parameters_cannot_be_described() -> None:
    def anything(*args: int, **kwargs: int) -> str:
        """Takes anything."""
        return ""

    with pytest.raises(ToolDefinitionError, match=r"tool 'anything': \*args"):
        _ = _spec(anything).input_schema


# -- registration rules -------------------------------------------------------------------------


def test_missing_description_raises() -> None:
    def undocumented(x: int) -> int:
        return x

    toolset = ToolSet()
    with pytest.raises(ValueError, match="description"):
        toolset.tool(undocumented)
    assert toolset.tools == {}


def test_blank_docstring_is_no_description() -> None:
    def blank() -> str:
        """ """
        return ""

    with pytest.raises(ValueError, match="description"):
        ToolSet().tool(blank)


def test_description_argument_replaces_a_missing_docstring() -> None:
    def undocumented() -> str:
        return ""

    assert _spec(undocumented, description="Does nothing.").description == "Does nothing."


def test_prompt_and_resource_need_descriptions_too() -> None:
    def undocumented() -> str:
        return ""

    with pytest.raises(ValueError, match="description"):
        ToolSet().prompt(undocumented)
    with pytest.raises(ValueError, match="description"):
        ToolSet().resource("x://y")(undocumented)


def test_duplicate_tool_name_raises() -> None:
    toolset = ToolSet()

    def first() -> str:
        """First."""
        return "1"

    def second() -> str:
        """Second."""
        return "2"

    toolset.tool(name="same")(first)
    with pytest.raises(ValueError, match="twice"):
        toolset.tool(name="same")(second)
    assert toolset.tools["same"].fn is first


@pytest.mark.parametrize(
    "name",
    ["has space", "a" * 129, "semi;colon", "slash/name", "ünïcode", "trailing\n", "tab\tname"],
    ids=["space", "too-long", "semicolon", "slash", "unicode", "trailing-newline", "tab"],
)
def test_invalid_tool_name_raises(name: str) -> None:
    def fn() -> str:
        """A tool."""
        return ""

    with pytest.raises(ValueError, match="invalid"):
        ToolSet().tool(name=name)(fn)
    with pytest.raises(ValueError, match="invalid"):
        ToolSet().prompt(name=name)(fn)


@pytest.mark.parametrize("name", ["a", "get_weather", "files.read-v2", "A" * 128])
def test_valid_tool_names_are_accepted(name: str) -> None:
    def fn() -> str:
        """A tool."""
        return ""

    assert _spec(fn, name=name).name == name


def test_task_policy_accepts_its_string_values_only() -> None:
    def job() -> str:
        """A job."""
        return ""

    assert _spec(job, task="optional").task is TaskPolicy.OPTIONAL
    assert _spec(job).task is TaskPolicy.INLINE
    with pytest.raises(ValueError, match="sometimes"):
        ToolSet().tool(task="sometimes")(job)


# -- output schemas and structuring -------------------------------------------------------------


class Weather(BaseModel):
    city: str
    celsius: float = Field(description="Temperature")
    conditions: Literal["sun", "rain"]


def test_model_return_gives_an_object_output_schema() -> None:
    def weather(city: str) -> Weather:
        """Weather."""
        return Weather(city=city, celsius=20, conditions="sun")

    spec = _spec(weather)
    schema = spec.output_schema
    assert schema["type"] == "object"
    assert set(schema["required"]) == {"city", "celsius", "conditions"}
    assert spec.to_wire()["outputSchema"] == schema
    structured = spec.structure(Weather(city="Oslo", celsius=-3.5, conditions="rain"))
    assert structured["structuredContent"] == {
        "city": "Oslo",
        "celsius": -3.5,
        "conditions": "rain",
    }
    jsonschema.validate(structured["structuredContent"], schema)


@pytest.mark.parametrize(
    ("annotation", "value", "structured"),
    [
        (int, 3, {"result": 3}),
        (list[str], ["a"], {"result": ["a"]}),
        (bool, False, {"result": False}),
    ],
)
def test_non_object_returns_are_wrapped(annotation: Any, value: Any, structured: Any) -> None:
    def fn() -> Any:
        """A tool."""
        return value

    fn.__annotations__["return"] = annotation
    spec = _spec(fn)
    assert spec.output_schema["required"] == ["result"]
    result = spec.structure(value)
    assert result["structuredContent"] == structured
    jsonschema.validate(result["structuredContent"], spec.output_schema)


@pytest.mark.parametrize("annotation", [str, type(None), ToolResult, Any, None])
def test_unstructured_returns_have_no_output_schema(annotation: Any) -> None:
    def fn() -> Any:
        """A tool."""
        return "x"

    if annotation is None:
        del fn.__annotations__["return"]
    else:
        fn.__annotations__["return"] = annotation
    spec = _spec(fn)
    assert spec.output_schema is None
    assert "outputSchema" not in spec.to_wire()


def test_tool_result_passes_through() -> None:
    def fn() -> ToolResult:
        """A tool."""
        return ToolResult()

    result = ToolResult(
        content=[{"type": "text", "text": "partial"}], structured_content={"n": 1}, is_error=True
    )
    assert _spec(fn).structure(result) == {
        "content": [{"type": "text", "text": "partial"}],
        "structuredContent": {"n": 1},
        "isError": True,
    }


def test_none_and_text_returns() -> None:
    def fn() -> str:
        """A tool."""
        return ""

    spec = _spec(fn)
    assert spec.structure(None) == {"content": []}
    assert spec.structure("hi") == {"content": [{"type": "text", "text": "hi"}]}


# -- prompts and resources ----------------------------------------------------------------------


def test_prompt_arguments_and_rendering() -> None:
    toolset = ToolSet()

    @toolset.prompt
    def summarise(ctx: ToolContext, text: str, style: str = "short") -> str:
        """Summarise a text.

        Args:
            text: What to summarise.
        """
        return text

    spec = toolset.prompts["summarise"]
    assert spec.context_param == "ctx"
    assert spec.arguments == [
        {"name": "text", "required": True, "description": "What to summarise."},
        {"name": "style", "required": False},
    ]
    assert spec.structure("hello") == {
        "messages": [{"role": "user", "content": {"type": "text", "text": "hello"}}]
    }
    messages = [{"role": "assistant", "content": {"type": "text", "text": "x"}}]
    assert spec.structure(messages) == {"messages": messages}
    with pytest.raises(TypeError):
        spec.structure(42)


def test_binary_resource_is_base64_blob() -> None:
    toolset = ToolSet()

    @toolset.resource("data://logo", mime_type="image/png")
    def logo() -> bytes:
        """The logo."""
        return b"\x89PNG"

    spec = toolset.resources["data://logo"]
    content = resources.read(spec, "data://logo", {})["contents"][0]
    assert base64.b64decode(content["blob"]) == b"\x89PNG"
    assert "text" not in content
    assert spec.to_wire() == {
        "uri": "data://logo",
        "name": "logo",
        "description": "The logo.",
        "mimeType": "image/png",
    }
