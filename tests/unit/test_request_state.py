"""Sealing and opening requestState: integrity, binding, expiry."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable

import pytest

from mcp_tasks_aws.protocol.errors import InvalidParams
from mcp_tasks_aws.protocol.request_state import RequestStateCodec, digest

SECRET = b"s" * 32
BINDING = {"m": "tools/call", "n": "tool_a", "a": digest({"x": 1}), "p": digest("alice")}
DATA = {"journal": {"user_name": {"action": "accept", "content": {"name": "Alice"}}}}


@pytest.fixture
def codec() -> RequestStateCodec:
    return RequestStateCodec(SECRET, max_age_seconds=60)


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def test_seal_then_open_returns_the_data(codec: RequestStateCodec) -> None:
    token = codec.seal(BINDING, DATA)
    assert token.startswith("v1.")
    assert codec.open(token, dict(BINDING)) == DATA


def test_a_second_codec_with_the_same_secret_opens_the_state(codec: RequestStateCodec) -> None:
    # Lambda instances share nothing but the secret.
    token = codec.seal(BINDING, DATA)
    assert RequestStateCodec(SECRET).open(token, BINDING) == DATA


def test_a_codec_with_another_secret_refuses_it(codec: RequestStateCodec) -> None:
    token = codec.seal(BINDING, DATA)
    with pytest.raises(InvalidParams):
        RequestStateCodec(b"t" * 32).open(token, BINDING)


def test_tampered_body_is_refused(codec: RequestStateCodec) -> None:
    # Given a state whose payload is rewritten to claim another answer, keeping the MAC
    version, body, mac = codec.seal(BINDING, DATA).split(".")
    payload = json.loads(_unb64(body))
    payload["d"]["journal"]["user_name"]["content"]["name"] = "Mallory"
    forged = f"{version}.{_b64(json.dumps(payload).encode())}.{mac}"
    # When it is opened, Then it is refused
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        codec.open(forged, BINDING)


def test_tampered_mac_is_refused(codec: RequestStateCodec) -> None:
    version, body, mac = codec.seal(BINDING, DATA).split(".")
    raw = bytearray(_unb64(mac))
    raw[0] ^= 0x01
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        codec.open(f"{version}.{body}.{_b64(bytes(raw))}", BINDING)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t + "-TAMPERED",
        lambda t: t + ".extra",
        lambda t: "v2" + t[2:],
        lambda t: t.replace(".", "", 1),
        lambda t: "",
        lambda t: "v1..",
        lambda t: "v1.!!!.???",
        lambda t: "x" * (64 * 1024 + 1),
    ],
    ids=[
        "appended-TAMPERED",
        "extra-part",
        "other-version",
        "missing-separator",
        "empty",
        "empty-parts",
        "not-base64",
        "oversized",
    ],
)
def test_malformed_tokens_are_refused(
    codec: RequestStateCodec, mangle: Callable[[str], str]
) -> None:
    token = codec.seal(BINDING, DATA)
    with pytest.raises(InvalidParams):
        codec.open(mangle(token), BINDING)


@pytest.mark.parametrize(
    ("field", "other"),
    [
        ("m", "prompts/get"),
        ("n", "tool_b"),
        ("a", digest({"x": 2})),
        ("p", digest("bob")),
    ],
    ids=["other-method", "other-tool", "other-arguments", "other-principal"],
)
def test_state_is_bound_to_what_it_was_issued_for(
    codec: RequestStateCodec, field: str, other: str
) -> None:
    token = codec.seal(BINDING, DATA)
    with pytest.raises(InvalidParams, match="Invalid requestState"):
        codec.open(token, {**BINDING, field: other})


def test_expired_state_is_refused(
    codec: RequestStateCodec, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given a state sealed now
    now = time.time()
    monkeypatch.setattr(time, "time", lambda: now)
    token = codec.seal(BINDING, DATA)
    # When it is opened just within its age, Then it opens
    monkeypatch.setattr(time, "time", lambda: now + 59)
    assert codec.open(token, BINDING) == DATA
    # When it is opened after max_age_seconds, Then it is refused as expired
    monkeypatch.setattr(time, "time", lambda: now + 61)
    with pytest.raises(InvalidParams, match="expired"):
        codec.open(token, BINDING)


def test_payload_is_readable_but_holds_only_binding_data_and_time(
    codec: RequestStateCodec,
) -> None:
    _, body, _ = codec.seal(BINDING, DATA).split(".")
    payload = json.loads(_unb64(body))
    assert set(payload) == {"b", "d", "iat"}
    assert payload["b"] == BINDING
    assert payload["d"] == DATA


@pytest.mark.parametrize("secret", [b"", b"short", b"x" * 31])
def test_short_secret_is_rejected(secret: bytes) -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        RequestStateCodec(secret)


def test_digest_is_stable_and_key_order_independent() -> None:
    assert digest({"a": 1, "b": [1, 2]}) == digest({"b": [1, 2], "a": 1})
    assert digest({"a": 1}) != digest({"a": 2})
    assert digest("alice") != digest("bob")
