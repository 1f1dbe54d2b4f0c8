"""Content helpers: what they put on the wire, and the clear errors for what cannot be sent."""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest

from mcp_tasks_aws import (
    MAX_BINARY_BYTES,
    Audio,
    ContentError,
    EmbeddedResource,
    Image,
    Message,
    ResourceLink,
    Text,
    ToolContext,
    ToolResult,
    ToolSet,
)
from mcp_tasks_aws.protocol.models import ClientCapabilities
from mcp_tasks_aws.tools.invoke import run_tool

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 16
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 16
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 16
MP3 = b"ID3\x03\x00" + b"\x00" * 16


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- building blocks -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("block", "wire"),
    [
        (Text("hi"), {"type": "text", "text": "hi"}),
        (
            Text("hi", annotations={"audience": ["user"], "priority": 0.5}),
            {"type": "text", "text": "hi", "annotations": {"audience": ["user"], "priority": 0.5}},
        ),
        (
            Image(data=PNG, mime_type="image/png"),
            {"type": "image", "data": _b64(PNG), "mimeType": "image/png"},
        ),
        (Image(data=JPEG), {"type": "image", "data": _b64(JPEG), "mimeType": "image/jpeg"}),
        (Audio(data=WAV), {"type": "audio", "data": _b64(WAV), "mimeType": "audio/wav"}),
        (Audio(data=MP3), {"type": "audio", "data": _b64(MP3), "mimeType": "audio/mpeg"}),
        (
            ResourceLink("file:///r.txt", "r.txt", description="A file", mime_type="text/plain"),
            {
                "type": "resource_link",
                "uri": "file:///r.txt",
                "name": "r.txt",
                "description": "A file",
                "mimeType": "text/plain",
            },
        ),
        (
            EmbeddedResource("note://1", text="hello", mime_type="text/plain"),
            {
                "type": "resource",
                "resource": {"uri": "note://1", "mimeType": "text/plain", "text": "hello"},
            },
        ),
        (
            EmbeddedResource("blob://1", blob=b"\x00\x01"),
            {"type": "resource", "resource": {"uri": "blob://1", "blob": _b64(b"\x00\x01")}},
        ),
    ],
)
def test_blocks_have_their_wire_form(block: Any, wire: dict[str, Any]) -> None:
    assert block.to_wire() == wire


def test_image_and_audio_from_a_file_take_the_type_from_its_extension(tmp_path: Path) -> None:
    chart = tmp_path / "chart.png"
    chart.write_bytes(PNG)
    note = tmp_path / "note.wav"
    note.write_bytes(WAV)
    image = Image(path=chart)
    assert (image.mime_type, image.data, image.binary_size) == ("image/png", PNG, len(PNG))
    assert Audio(path=str(note)).mime_type == "audio/wav"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Image(data=b"just text"), "cannot tell the MIME type; pass mime_type="),
        (lambda: Image(data=PNG, mime_type="image/x-unknown"), "'image/x-unknown' is not a known"),
        (lambda: Image(data=WAV, mime_type="audio/wav"), "not a known image type"),
        (lambda: Audio(data=PNG, mime_type="image/png"), "not a known audio type"),
        (lambda: Image(), "either data=bytes or path"),
        (lambda: Image(data=PNG, path="x.png"), "either data=bytes or path"),
        (lambda: Image(data="aGk=", mime_type="image/png"), "must be bytes, not str"),
        (lambda: Image(path="/no/such/file.png"), "cannot read /no/such/file.png"),
        (lambda: EmbeddedResource("x://1"), "either text= or blob="),
        (lambda: EmbeddedResource("x://1", text="a", blob=b"b"), "either text= or blob="),
        (lambda: ResourceLink("", "name"), "needs a uri and a name"),
    ],
)
def test_blocks_that_cannot_be_sent_say_why(make: Any, message: str) -> None:
    with pytest.raises(ContentError, match=re.escape(message)):
        make()


def test_binary_over_the_budget_is_refused_before_it_is_encoded(tmp_path: Path) -> None:
    too_big = b"\x89PNG\r\n\x1a\n" + bytes(MAX_BINARY_BYTES)
    with pytest.raises(ContentError, match="at most 4 MiB"):
        Image(data=too_big)
    with pytest.raises(ContentError, match="at most 4 MiB"):
        EmbeddedResource("x://big", blob=too_big)
    huge = tmp_path / "huge.png"
    with huge.open("wb") as file:  # sparse: the size is checked before anything is read
        file.truncate(MAX_BINARY_BYTES + 1)
    with pytest.raises(ContentError, match=r"huge\.png is 4\.0 MiB"):
        Image(path=huge)


def test_a_block_exactly_at_the_budget_is_accepted() -> None:
    image = Image(data=b"\x89PNG\r\n\x1a\n" + bytes(MAX_BINARY_BYTES - 8))
    assert image.binary_size == MAX_BINARY_BYTES


# -- tools returning content ---------------------------------------------------------------------


def _run(fn: Any) -> dict[str, Any]:
    tools = ToolSet()
    tools.tool(fn)
    spec = tools.tools[fn.__name__]
    ctx = ToolContext(capabilities=ClientCapabilities.model_validate({}), principal="p")
    return run_tool(spec, {}, ctx)


def test_a_tool_returning_one_block_answers_with_it() -> None:
    def picture() -> Image:
        """A picture."""
        return Image(data=PNG)

    assert _run(picture) == {"content": [Image(data=PNG).to_wire()]}


def test_a_list_mixes_blocks_strings_and_wire_dicts() -> None:
    def report() -> list[Any]:
        """A report."""
        return ["Summary:", Image(data=PNG), {"type": "text", "text": "raw"}]

    assert _run(report)["content"] == [
        {"type": "text", "text": "Summary:"},
        Image(data=PNG).to_wire(),
        {"type": "text", "text": "raw"},
    ]


def test_content_annotations_give_no_output_schema() -> None:
    tools = ToolSet()

    @tools.tool
    def mixed() -> list[Text | Image]:
        """Mixed."""
        return []

    @tools.tool
    def link() -> ResourceLink | None:
        """Link."""
        return None

    assert tools.tools["mixed"].output_schema is None
    assert tools.tools["link"].output_schema is None


def test_tool_result_accepts_helpers_with_structured_content() -> None:
    def chart() -> ToolResult:
        """A chart."""
        return ToolResult(content=[Text("chart"), Image(data=PNG)], structured_content={"n": 1})

    result = _run(chart)
    assert result["content"][1]["type"] == "image"
    assert result["structuredContent"] == {"n": 1}


def test_a_result_over_the_budget_becomes_a_tool_error() -> None:
    half = b"\x89PNG\r\n\x1a\n" + bytes(MAX_BINARY_BYTES // 2)

    def album() -> list[Image]:
        """Two large images: each fits, together they do not."""
        return [Image(data=half), Image(data=half)]

    result = _run(album)
    assert result["isError"] is True
    assert "album returned content it cannot send" in result["content"][0]["text"]
    assert "at most 4 MiB" in result["content"][0]["text"]


def test_a_block_the_tool_cannot_build_is_a_tool_error_with_the_reason() -> None:
    def broken() -> Image:
        """Builds an image of an unknown type."""
        return Image(data=b"????")

    result = _run(broken)
    assert result["isError"] is True
    assert "cannot tell the MIME type" in result["content"][0]["text"]


# -- prompts returning content -------------------------------------------------------------------


def test_prompt_messages_take_strings_blocks_and_messages() -> None:
    tools = ToolSet()

    @tools.prompt
    def look(uri: str) -> list[Any]:
        """Look at something."""
        return [
            Message(EmbeddedResource(uri, text="body")),
            Image(data=PNG),
            Message("Answer briefly.", role="assistant"),
            "Thanks.",
        ]

    messages = tools.prompts["look"].structure(look("doc://1"))["messages"]
    assert messages == [
        {"role": "user", "content": EmbeddedResource("doc://1", text="body").to_wire()},
        {"role": "user", "content": Image(data=PNG).to_wire()},
        {"role": "assistant", "content": {"type": "text", "text": "Answer briefly."}},
        {"role": "user", "content": {"type": "text", "text": "Thanks."}},
    ]


def test_a_prompt_returning_one_block_is_one_user_message() -> None:
    tools = ToolSet()

    @tools.prompt
    def show() -> Image:
        """Show."""
        return Image(data=PNG)

    assert tools.prompts["show"].structure(show()) == {
        "messages": [{"role": "user", "content": Image(data=PNG).to_wire()}]
    }
