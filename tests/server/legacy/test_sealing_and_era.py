"""Pure pieces of the dual era: sealed tokens, the era of a request, version negotiation,
what a session keeps of declared capabilities, and the legacy shapes."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tasks_aws.protocol.era import Era, era_of, negotiate
from mcp_tasks_aws.protocol.errors import InvalidParams, SessionNotFound
from mcp_tasks_aws.protocol.legacy import (
    SessionCodec,
    envelope,
    legacy_capabilities,
    legacy_result,
    session_capabilities,
)
from mcp_tasks_aws.protocol.sealing import Sealer, Unsealable
from mcp_tasks_aws.server.legacy.methods import task_support
from mcp_tasks_aws.tools.registry import TaskPolicy
from support.clock import Clock

SECRET = b"k" * 32


# -- sealing ------------------------------------------------------------------------------------


def test_a_sealed_payload_opens_as_its_kind_until_it_expires() -> None:
    clock = Clock(1_800_000_000)
    sealer = Sealer(SECRET, "test", clock=clock)
    token = sealer.seal("s1", {"a": [1, "b"]}, expires_at=int(clock.now) + 10)
    assert sealer.open("s1", token) == {"a": [1, "b"], "exp": int(clock.now) + 10}
    with pytest.raises(Unsealable):
        sealer.open("q1", token)
    clock.now += 10
    with pytest.raises(Unsealable):
        sealer.open("s1", token)


@pytest.mark.parametrize(
    "mangle",
    [
        lambda t: t + "x",
        lambda t: t[:-1] + ("A" if t[-1] != "A" else "B"),
        lambda t: t.replace(".", "..", 1),
        lambda t: "s1." + t.split(".")[1] + ".",
        lambda t: "",
        lambda t: "s1.!!!.???",
        lambda t: "s1." + "A" * 9000 + ".x",
    ],
    ids=["suffix", "mac-bit", "extra-dot", "no-mac", "empty", "bad-base64", "huge"],
)
def test_a_mangled_token_does_not_open(mangle: Any) -> None:
    sealer = Sealer(SECRET, "test")
    token = sealer.seal("s1", {"a": 1}, expires_at=sealer.now() + 60)
    with pytest.raises(Unsealable):
        sealer.open("s1", mangle(token))


def test_another_secret_or_purpose_does_not_open_a_token() -> None:
    sealer = Sealer(SECRET, "legacy-sessions")
    token = sealer.seal("s1", {"a": 1}, expires_at=sealer.now() + 60)
    for other in (Sealer(b"o" * 32, "legacy-sessions"), Sealer(SECRET, "something-else")):
        with pytest.raises(Unsealable):
            other.open("s1", token)


def test_a_short_secret_is_refused() -> None:
    with pytest.raises(ValueError, match="32 bytes"):
        Sealer(b"short", "test")


# -- sessions -----------------------------------------------------------------------------------


def test_a_session_opens_for_its_caller_only() -> None:
    codec = SessionCodec(Sealer(SECRET, "legacy-sessions"))
    token, issued = codec.issue("2025-06-18", {"sampling": {}}, "jwt:iss|alice|app")
    opened = codec.open(token, "jwt:iss|alice|app")
    assert opened == issued
    assert "alice" not in token  # the caller is in it as a fingerprint only
    with pytest.raises(SessionNotFound):
        codec.open(token, "jwt:iss|bob|app")


def test_a_session_expires_after_its_lifetime() -> None:
    clock = Clock(1_800_000_000)
    codec = SessionCodec(Sealer(SECRET, "legacy-sessions", clock=clock), ttl_seconds=60)
    token, _ = codec.issue("2025-11-25", {}, "anonymous")
    clock.now += 59
    codec.open(token, "anonymous")
    clock.now += 1
    with pytest.raises(SessionNotFound):
        codec.open(token, "anonymous")


def test_oversized_capabilities_are_refused_at_issue() -> None:
    codec = SessionCodec(Sealer(SECRET, "legacy-sessions"))
    with pytest.raises(InvalidParams):
        codec.issue("2025-11-25", {"experimental": {"x": {"y": "z" * 5000}}}, "anonymous")


@pytest.mark.parametrize(
    ("declared", "kept"),
    [
        ({}, {}),
        (
            {"sampling": {}, "roots": {"listChanged": True}},
            {"sampling": {}, "roots": {"listChanged": True}},
        ),
        (
            {"elicitation": {"form": {}}, "tasks": {"list": {}}},
            {"elicitation": {"form": {}}, "tasks": {"list": {}}},
        ),
        ({"extensions": {"io.modelcontextprotocol/tasks": {}}}, {}),
        ({"sampling": True, "whatever": {}}, {}),
    ],
    ids=["none", "sampling-roots", "elicitation-tasks", "no-extensions", "malformed"],
)
def test_a_session_keeps_the_2025_capabilities_it_was_declared(
    declared: dict[str, Any], kept: dict[str, Any]
) -> None:
    assert session_capabilities(declared) == kept


# -- eras ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "header", "era"),
    [
        ({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}, None, Era.MODERN),
        ({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25"}}, None, Era.MODERN),
        ({}, "2026-07-28", Era.MODERN),
        ({}, " 2026-07-28 ", Era.MODERN),
        ({"_meta": "junk"}, "2026-07-28", Era.MODERN),
        ({}, "2025-11-25", Era.LEGACY),
        ({}, None, Era.LEGACY),
        (None, None, Era.LEGACY),
        ({"_meta": {"progressToken": 1}}, "1999-01-01", Era.LEGACY),
    ],
)
def test_the_era_of_a_request(params: Any, header: str | None, era: Era) -> None:
    assert era_of(params, header) is era


@pytest.mark.parametrize(
    ("asked", "answered"),
    [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),
        (None, "2025-11-25"),
        (20251125, "2025-11-25"),
    ],
)
def test_negotiation(asked: Any, answered: str) -> None:
    assert negotiate(asked) == answered


# -- shapes -------------------------------------------------------------------------------------


def test_a_legacy_request_gets_its_sessions_envelope_whatever_its_meta_says() -> None:
    codec = SessionCodec(Sealer(SECRET, "legacy-sessions"))
    _, session = codec.issue("2025-06-18", {"sampling": {}}, "anonymous")
    client_meta = {
        "progressToken": "p1",
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {}},
        "io.modelcontextprotocol/logLevel": "debug",
    }
    meta = envelope(session, client_meta, log_level="warning", version="2025-11-25")
    assert meta == {
        "progressToken": "p1",
        "io.modelcontextprotocol/protocolVersion": "2025-06-18",
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
        "io.modelcontextprotocol/logLevel": "warning",
    }


def test_legacy_results_and_capabilities_drop_2026_only_fields() -> None:
    modern = {"resultType": "complete", "ttlMs": 5, "cacheScope": "public", "tools": []}
    assert legacy_result(modern) == {"tools": []}
    capabilities = {
        "tools": {"listChanged": True},
        "prompts": {},
        "logging": {},
        "extensions": {"io.modelcontextprotocol/tasks": {}},
    }
    assert legacy_capabilities(capabilities) == {"tools": {}, "prompts": {}, "logging": {}}


@pytest.mark.parametrize(
    ("policy", "legacy_tasks", "support"),
    [
        (TaskPolicy.INLINE, False, "forbidden"),
        (TaskPolicy.INLINE, True, "forbidden"),
        (TaskPolicy.OPTIONAL, False, "forbidden"),
        (TaskPolicy.OPTIONAL, True, "optional"),
        (TaskPolicy.REQUIRED, False, "required"),
        (TaskPolicy.REQUIRED, True, "required"),
    ],
)
def test_task_support_follows_the_policy(
    policy: TaskPolicy, legacy_tasks: bool, support: str
) -> None:
    assert task_support(policy, legacy_tasks) == support
