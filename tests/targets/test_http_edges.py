"""Declared HTTP targets against a real upstream on 127.0.0.1 (`support.targets.Upstream`, which
records the raw paths and headers it read off the socket): path parameters stay one segment of
the declared route, header arguments are ones HTTP can carry, both refused (-32602 naming the
argument) before a credential is read or anything is sent."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from support.mcp import McpClient
from support.targets import (
    SECRET_ARN,
    Answer,
    FakeCalls,
    Received,
    Upstream,
    bound,
    sending_for_real,
    tool,
    write,
)

ID_SCHEMA = {
    "type": "object",
    "properties": {"id": {"type": ["string", "integer"]}, "trace": {"type": "string"}},
    "required": ["id"],
}


@pytest.fixture
def upstream() -> Iterator[Upstream]:
    server = Upstream()
    yield server
    server.close()


@pytest.fixture
def calls() -> FakeCalls:
    return sending_for_real(FakeCalls(secrets={SECRET_ARN: "s3cret"}))


@pytest.fixture
def client(
    tmp_path: Path, upstream: Upstream, calls: FakeCalls, make_client: Callable[..., McpClient]
) -> McpClient:
    target = {
        "kind": "http",
        "method": "GET",
        "url": f"{upstream.url}/v1/items/{{id}}/notes",
        "headerArguments": {"X-Trace": "trace"},
        "auth": {"type": "bearer", "secretArn": SECRET_ARN},
    }
    return make_client(bound(write(tmp_path, tool("item", target, inputSchema=ID_SCHEMA)), calls))


def test_a_plain_segment_reaches_the_declared_route_with_the_credential(
    client: McpClient, upstream: Upstream
) -> None:
    for value in ("item-7", "a.b", "...", "100%", "x y", 42):
        assert client.tool_result("item", {"id": value}).get("isError") is not True
    assert upstream.paths == [
        "/v1/items/item-7/notes",
        "/v1/items/a.b/notes",
        "/v1/items/.../notes",
        "/v1/items/100%25/notes",
        "/v1/items/x%20y/notes",
        "/v1/items/42/notes",
    ]
    assert {r.headers["authorization"] for r in upstream.received} == {"Bearer s3cret"}


LEAVING_THE_ROUTE = [
    ".",
    "..",
    "%2e",
    "%2E%2e",
    ".%2e",
    "%252e%252e",  # decoded twice by a lenient upstream
    "../admin",
    "..%2Fadmin",
    "a/../b",
    "a/b",
    "%2F",
    "a%2fb",
    "%252F",
    "a\\b",
    "..%5cadmin",
    "",
    # Servlet containers cut a segment's `;parameters` before they normalise it.
    "..;x",
    "%2e%2E;jsessionid=1",
    ".;",
    # Overlong UTF-8 of '.', '/' and '\\', which a lenient decoder reads as the character.
    "%c0%ae%c0%ae",
    "%C0%AE",
    "%e0%80%ae%e0%80%ae",
    "%c0%af",
    "a%c1%9cb",
    "%25c0%25ae%25c0%25ae",
    # Unicode that compatibility normalisation (NFKC) makes a dot-segment or a slash.
    "\uff0e\uff0e",
    "\u2025",
    "\ufe52",
    "a\uff0fb",
    "\uff3c",
    # NUL, where a C upstream ends the segment.
    "..%00",
    "..\x00x",
]


@pytest.mark.parametrize("value", LEAVING_THE_ROUTE)
def test_a_path_parameter_that_could_leave_the_route_is_refused_before_the_credential(
    client: McpClient, upstream: Upstream, calls: FakeCalls, value: str
) -> None:
    response = client.call_tool("item", {"id": value})
    assert response.status == 200
    error = client.error(response)
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid arguments for tool item: id: ")
    assert "path segment" in error["message"]
    assert upstream.received == []  # nothing left for the upstream to normalise
    assert [name for name, _ in calls.calls] == []  # not even the secret was read


@pytest.mark.parametrize(
    "value",
    ["a\r\nX-Injected: 1", "a\nb", "a\rb", "a\x00b", "a\x7fb", "snow \u2603", "\u00e9\u20ac"],
)
def test_a_header_argument_http_cannot_carry_is_refused_naming_it(
    client: McpClient,
    upstream: Upstream,
    calls: FakeCalls,
    caplog: pytest.LogCaptureFixture,
    value: str,
) -> None:
    caplog.set_level(logging.DEBUG)
    response = client.call_tool("item", {"id": "7", "trace": value})
    assert response.status == 200
    error = client.error(response)
    assert error["code"] == -32602
    assert error["message"].startswith("Invalid arguments for tool item: trace: ")
    assert upstream.received == []
    assert calls.calls == []
    assert [r for r in caplog.records if r.exc_info] == []  # no traceback anywhere


def test_a_latin_1_header_argument_is_sent_as_it_is(client: McpClient, upstream: Upstream) -> None:
    client.tool_result("item", {"id": "7", "trace": "caf\u00e9\tau lait"})
    (received,) = upstream.received
    assert received.headers["x-trace"] == "caf\u00e9\tau lait"


# -- secrets -------------------------------------------------------------------------------------


class EveryRecord(logging.Handler):
    """Every log record of every logger, as text: message, arguments, traceback and stack."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.texts: list[str] = []
        self.formatter = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        self.texts.append(self.format(record) + repr(record.args) + repr(record.__dict__))


@pytest.fixture
def every_record() -> Iterator[EveryRecord]:
    handler = EveryRecord()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


ItemClient = Callable[[FakeCalls, dict[str, str]], McpClient]


@pytest.fixture
def item_with(
    tmp_path: Path, upstream: Upstream, make_client: Callable[..., McpClient]
) -> ItemClient:
    """A client of tool `item` (GET {upstream}/v1/items/{id}) given its calls and auth."""

    def serve(calls: FakeCalls, auth: dict[str, str]) -> McpClient:
        target = {"kind": "http", "method": "GET", "url": f"{upstream.url}/v1/items/{{id}}"}
        entry = tool("item", {**target, "auth": auth}, inputSchema=ID_SCHEMA)
        return make_client(bound(write(tmp_path, entry), calls))

    return serve


BEARER = {"type": "bearer", "secretArn": SECRET_ARN}


@pytest.mark.parametrize(
    ("auth", "header", "sent"),
    [
        ({"type": "bearer"}, "authorization", "Bearer hunter2-XYZZY"),
        ({"type": "apiKey", "header": "X-Key"}, "x-key", "hunter2-XYZZY"),
    ],
)
@pytest.mark.parametrize("stored", ["hunter2-XYZZY\n", "  hunter2-XYZZY \r\n", "\thunter2-XYZZY"])
def test_a_secret_stored_with_surrounding_whitespace_is_sent_stripped(
    upstream: Upstream,
    item_with: ItemClient,
    every_record: EveryRecord,
    auth: dict[str, str],
    header: str,
    sent: str,
    stored: str,
) -> None:
    calls = sending_for_real(FakeCalls(secrets={SECRET_ARN: stored}))
    client = item_with(calls, {**auth, "secretArn": SECRET_ARN})
    result = client.tool_result("item", {"id": "7"})
    assert result.get("isError") is not True, result
    (received,) = upstream.received
    assert received.headers[header] == sent
    assert not any("hunter2" in text for text in every_record.texts)


@pytest.mark.parametrize("stored", ["hunter2\nXYZZY", "hunter2\x00XYZZY", "hunter2\u2603XYZZY"])
def test_a_secret_http_cannot_carry_is_one_error_naming_its_arn_and_never_its_value(
    upstream: Upstream,
    item_with: ItemClient,
    every_record: EveryRecord,
    stored: str,
) -> None:
    calls = sending_for_real(FakeCalls(secrets={SECRET_ARN: stored}))
    client = item_with(calls, BEARER)
    responses = [client.call_tool("item", {"id": "7"}) for _ in range(2)]
    for response in responses:
        assert response.status == 200
        error = client.error(response)
        assert error["code"] == -32603
        assert error["message"].startswith(f"Tool item: Secret {SECRET_ARN}: ")
        assert "cannot be sent in an HTTP header" in error["message"]
    assert upstream.received == []
    seen = [response.body.decode() for response in responses] + every_record.texts
    for text in seen:
        assert "hunter2" not in text, text
        assert "XYZZY" not in text, text


# -- what the upstream says back -----------------------------------------------------------------


def echoing(status: int) -> Callable[[Received], Answer]:
    """An upstream that quotes the request's headers back, as JSON and as plain text."""

    def answer(received: Received) -> Answer:
        quoted = json.dumps({"error": "denied", "headers": received.headers}).encode()
        plain = f"; you sent {received.headers.get('authorization')}".encode("latin-1")
        return status, {"Content-Type": "application/json"}, [quoted, plain]

    return answer


@pytest.mark.parametrize("status", [401, 500, 200])
@pytest.mark.parametrize("stored", ["hunter2-XYZZY", 'hunter2"XYZZY\\'])
def test_a_credential_the_upstream_echoes_is_redacted_from_the_result(
    upstream: Upstream,
    item_with: ItemClient,
    every_record: EveryRecord,
    status: int,
    stored: str,
) -> None:
    upstream.answer = echoing(status)
    calls = sending_for_real(FakeCalls(secrets={SECRET_ARN: stored}))
    client = item_with(calls, BEARER)
    response = client.call_tool("item", {"id": "7"})
    (received,) = upstream.received
    assert received.headers["authorization"] == f"Bearer {stored}"  # it was sent, and echoed
    body = response.body.decode()
    assert "[redacted]" in body
    for text in [body, *every_record.texts]:
        assert "hunter2" not in text, text
        assert "XYZZY" not in text, text


def other_encoders(secret: str) -> list[bytes]:
    """`secret` as other JSON and URL encoders write it: PHP's json_encode (`\\/`), Go's
    encoding/json (`<`, `>`, `&` as `\\u003c`...), .NET's System.Text.Json (uppercase
    `\\u00E9`, `\\u002B`), lowercase percent-encoding, and a mix of them."""

    def escaped(char: str, upper: bool = False) -> str:
        code = f"{ord(char):04x}"
        return "\\u" + (code.upper() if upper else code)

    php = "".join("\\/" if c == "/" else escaped(c) if ord(c) > 0x7E else c for c in secret)
    go = "".join(escaped(c) if c in "<>&" else c for c in secret)
    dotnet = "".join(c if c.isalnum() and c.isascii() else escaped(c, True) for c in secret)

    def percent_of(char: str) -> str:
        return "".join(f"%{b:02x}" for b in char.encode())

    plain = [c.isascii() and c.isalnum() for c in secret]
    percent = "".join(c if keep else percent_of(c) for c, keep in zip(secret, plain, strict=True))
    mixed = "".join(
        c if plain[i] else escaped(c, True) if i % 2 else percent_of(c)
        for i, c in enumerate(secret)
    )
    return [form.encode() for form in (php, go, dotnet, percent, mixed)]


@pytest.mark.parametrize("status", [403, 200])
def test_a_credential_echoed_as_other_encoders_write_it_is_redacted(
    upstream: Upstream, item_with: ItemClient, status: int
) -> None:
    stored = "hunter2/XY+&Z<\u00e9>"

    def answer(received: Received) -> Answer:
        return status, {"Content-Type": "text/plain"}, [b" | ".join(other_encoders(stored))]

    upstream.answer = answer
    client = item_with(sending_for_real(FakeCalls(secrets={SECRET_ARN: stored})), BEARER)
    body = client.call_tool("item", {"id": "7"}).body.decode()
    assert body.count("[redacted]") == 5, body
    assert "hunter2" not in body, body


def test_a_sigv4_signature_the_upstream_echoes_is_redacted(
    upstream: Upstream, item_with: ItemClient
) -> None:
    upstream.answer = echoing(403)
    sigv4 = {"type": "sigv4", "region": "eu-west-1"}
    client = item_with(sending_for_real(FakeCalls()), sigv4)
    result = client.tool_result("item", {"id": "7"})
    (received,) = upstream.received
    assert received.headers["authorization"].startswith("AWS4-HMAC-SHA256")
    assert result["isError"] is True
    assert "AWS4-HMAC-SHA256" not in json.dumps(result)
