"""The local API Gateway emulation: payload-v2 events and the unverified JWT authorizer."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from mcp_tasks_aws.edge.apigw import ANONYMOUS, principal_of, request_from_event
from mcp_tasks_aws.local.apigw_emulator import build_event, unverified_jwt_claims


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def make_jwt(claims: Any) -> str:
    header = _b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode())
    return f"{header}.{_b64url(json.dumps(claims).encode())}.signature"


CLAIMS = {"iss": "https://idp.local", "sub": "alice", "client_id": "cli", "exp": 2000000000}


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
def test_bearer_jwt_claims_are_read(scheme: str) -> None:
    assert unverified_jwt_claims(f"{scheme} {make_jwt(CLAIMS)}") == CLAIMS


def test_claims_are_read_whatever_the_signature() -> None:
    token = make_jwt(CLAIMS).rsplit(".", 1)[0] + ".forged"
    assert unverified_jwt_claims(f"Bearer {token}") == CLAIMS


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        f"Basic {make_jwt(CLAIMS)}",
        f"Token {make_jwt(CLAIMS)}",
        "Bearer opaque-access-token",
        "Bearer a.b",
        "Bearer a.b.c.d",
        "Bearer header.!!!notbase64!!!.sig",
        f"Bearer x.{_b64url(b'not json')}.sig",
        f"Bearer x.{_b64url(b'[1, 2]')}.sig",
        "Bearer x." + _b64url(b'"sub"') + ".sig",
        "Bearer x." + _b64url(b"\xff\xfe") + ".sig",
    ],
    ids=[
        "none",
        "empty",
        "scheme-only",
        "scheme-and-space",
        "basic",
        "token-scheme",
        "opaque",
        "two-parts",
        "four-parts",
        "bad-base64",
        "not-json",
        "json-array",
        "json-string",
        "not-utf8",
    ],
)
def test_anything_but_a_bearer_jwt_has_no_claims(authorization: str | None) -> None:
    assert unverified_jwt_claims(authorization) is None


# -- build_event --------------------------------------------------------------------------------


def test_build_event_has_the_payload_v2_shape() -> None:
    event = build_event(
        method="POST",
        path="/mcp?debug=1",
        headers={"Content-Type": "application/json", "Host": "127.0.0.1:9000", "X-Mixed": "V"},
        body=b'{"a": 1}',
        source_ip="127.0.0.2",
    )
    assert event["version"] == "2.0"
    assert event["routeKey"] == "POST /mcp"
    assert event["rawPath"] == "/mcp"
    assert event["rawQueryString"] == "debug=1"
    assert event["headers"] == {
        "content-type": "application/json",
        "host": "127.0.0.1:9000",
        "x-mixed": "V",
    }
    context = event["requestContext"]
    assert context["http"]["method"] == "POST"
    assert context["http"]["path"] == "/mcp"
    assert context["http"]["sourceIp"] == "127.0.0.2"
    assert context["domainName"] == "127.0.0.1:9000"
    assert context["stage"] == "$default"
    assert isinstance(context["timeEpoch"], int)
    assert "authorizer" not in context
    assert event["body"] == '{"a": 1}'
    assert event["isBase64Encoded"] is False


def test_every_event_has_its_own_request_id() -> None:
    ids = {
        build_event(method="POST", path="/mcp", headers={}, body=b"")["requestContext"]["requestId"]
        for _ in range(3)
    }
    assert len(ids) == 3


def test_binary_body_is_base64_and_survives_the_edge() -> None:
    body = b"\xff\x00binary"
    event = build_event(method="POST", path="/mcp", headers={}, body=body)
    assert event["isBase64Encoded"] is True
    assert request_from_event(event).body == body


@pytest.mark.parametrize(
    "authorization",
    [None, "Basic dXNlcjpwYXNz", "Bearer opaque-token"],
    ids=["none", "basic", "opaque-bearer"],
)
def test_no_authorizer_without_a_bearer_jwt(authorization: str | None) -> None:
    headers = {} if authorization is None else {"Authorization": authorization}
    event = build_event(method="POST", path="/mcp", headers=headers, body=b"")
    assert "authorizer" not in event["requestContext"]
    assert principal_of(event) == ANONYMOUS


def test_bearer_jwt_becomes_authorizer_claims_as_strings() -> None:
    claims = {**CLAIMS, "groups": ["a", "b"]}
    event = build_event(
        method="POST",
        path="/mcp",
        headers={"AUTHORIZATION": f"Bearer {make_jwt(claims)}"},
        body=b"",
    )
    got = event["requestContext"]["authorizer"]["jwt"]["claims"]
    assert got["sub"] == "alice"
    assert got["iss"] == "https://idp.local"
    assert got["exp"] == "2000000000"
    assert json.loads(got["groups"]) == ["a", "b"]
    assert all(isinstance(value, str) for value in got.values())


def test_two_jwt_subjects_are_two_principals() -> None:
    def principal(sub: str) -> str:
        token = make_jwt({**CLAIMS, "sub": sub})
        event = build_event(
            method="POST", path="/mcp", headers={"authorization": f"Bearer {token}"}, body=b"{}"
        )
        return request_from_event(event).principal

    alice, bob = principal("alice"), principal("bob")
    assert alice != bob
    assert "alice" in alice
    assert "bob" in bob
    assert ANONYMOUS not in (alice, bob)
    assert principal("alice") == alice
