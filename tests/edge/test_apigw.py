"""API Gateway payload-v2 events to transport requests and back; who the caller is."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import pytest

from mcp_tasks_aws.edge.apigw import (
    ANONYMOUS,
    RESPONSE_MARGIN_S,
    Unidentified,
    principal_of,
    request_from_event,
    response_to_api,
    scopes_of_authorizer,
)
from mcp_tasks_aws.protocol.errors import InvalidRequest
from mcp_tasks_aws.protocol.transport import HttpResponse

ISSUER = "https://idp.example.com"
JWT_TOKEN = "Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJldmUifQ.sig"


def _event(authorizer: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    context: dict[str, Any] = {"http": {"method": "POST", "path": "/mcp"}}
    if authorizer is not None:
        context["authorizer"] = authorizer
    return {"version": "2.0", "requestContext": context, **extra}


def _jwt(**claims: str) -> dict[str, Any]:
    return {"jwt": {"claims": claims, "scopes": None}}


@pytest.mark.parametrize(
    ("authorizer", "principal"),
    [
        (
            _jwt(iss=ISSUER, sub="alice", client_id="app-1", azp="ignored"),
            f"jwt:{ISSUER}|alice|app-1",
        ),
        (_jwt(iss=ISSUER, sub="alice", azp="web"), f"jwt:{ISSUER}|alice|web"),
        (_jwt(iss=ISSUER, sub="alice"), f"jwt:{ISSUER}|alice|"),
        (
            {"iam": {"accountId": "111122223333", "userArn": "arn:aws:iam::111122223333:user/bob"}},
            "iam:111122223333|arn:aws:iam::111122223333:user/bob",
        ),
        (
            {"iam": {"accountId": "111122223333", "callerId": "AIDAEXAMPLE"}},
            "iam:111122223333|AIDAEXAMPLE",
        ),
        ({"lambda": {"principalId": "user-7", "tenant": "t"}}, "lambda:user-7"),
        ({"lambda": {"sub": "user-8"}}, "lambda:user-8"),
    ],
    ids=[
        "jwt-client-id",
        "jwt-azp-fallback",
        "jwt-no-client",
        "iam-user-arn",
        "iam-caller-id",
        "lambda-principal-id",
        "lambda-sub",
    ],
)
def test_principal_comes_from_the_authorizer(authorizer: dict[str, Any], principal: str) -> None:
    assert principal_of(_event(authorizer)) == principal


@pytest.mark.parametrize(
    "event",
    [{}, {"requestContext": None}, _event(), _event({})],
    ids=["empty-event", "null-context", "no-authorizer", "empty-authorizer"],
)
def test_no_authorizer_is_anonymous(event: dict[str, Any]) -> None:
    assert principal_of(event) == ANONYMOUS


@pytest.mark.parametrize(
    "authorizer",
    [
        _jwt(iss=ISSUER),
        _jwt(iss=ISSUER, sub=""),
        {"jwt": "not-an-object"},
        {"jwt": {"claims": "not-an-object"}},
        {"iam": {"accountId": "1"}},
        {"lambda": {"tenant": "t"}},
        {"something": "else"},
    ],
    ids=[
        "jwt-without-sub",
        "jwt-empty-sub",
        "jwt-malformed",
        "jwt-claims-malformed",
        "iam-without-arn",
        "lambda-without-id",
        "unknown-authorizer",
    ],
)
def test_an_authorizer_that_names_no_caller_is_refused_never_anonymous(
    authorizer: dict[str, Any],
) -> None:
    # Given an authorizer vouched for the request, When no principal can be derived
    with pytest.raises(Unidentified) as refused:
        request_from_event(_event(authorizer))
    # Then the request is refused with 401, rather than sharing the anonymous callers' tasks
    assert refused.value.http_status == 401


def test_a_raw_authorization_header_without_authorizer_is_anonymous() -> None:
    # Given a request whose bearer token nothing has verified
    event = _event(headers={"authorization": JWT_TOKEN, "Authorization": JWT_TOKEN})
    # Then its claims are not trusted
    assert principal_of(event) == ANONYMOUS
    assert request_from_event(event).principal == ANONYMOUS


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (
            _jwt(iss=ISSUER, sub="alice", client_id="a"),
            _jwt(iss=ISSUER, sub="alice", client_id="b"),
        ),
        (_jwt(iss=ISSUER, sub="alice"), _jwt(iss="https://other.example", sub="alice")),
        (_jwt(iss=ISSUER, sub="alice"), _jwt(iss=ISSUER, sub="bob")),
        (_jwt(iss=ISSUER, sub="user-7"), {"lambda": {"principalId": "user-7"}}),
        (
            _jwt(iss=ISSUER, sub="auth0|alice", client_id="app1"),
            _jwt(iss=ISSUER, sub="auth0", client_id="alice|app1"),
        ),
        (_jwt(iss=f"{ISSUER}|x", sub="alice"), _jwt(iss=ISSUER, sub="x|alice")),
        (_jwt(iss=ISSUER, sub="a%7Cb"), _jwt(iss=ISSUER, sub="a|b")),
        (
            {"iam": {"accountId": "1|2", "userArn": "arn"}},
            {"iam": {"accountId": "1", "userArn": "2|arn"}},
        ),
    ],
    ids=[
        "other-client",
        "other-issuer",
        "other-subject",
        "jwt-vs-lambda",
        "separator-in-subject-vs-client",
        "separator-in-issuer-vs-subject",
        "escape-sequence-vs-separator",
        "separator-in-iam-parts",
    ],
)
def test_distinct_callers_get_distinct_principals(
    first: dict[str, Any], second: dict[str, Any]
) -> None:
    assert principal_of(_event(first)) != principal_of(_event(second))


@pytest.mark.parametrize(
    ("jwt", "scopes"),
    [
        ({"claims": {"sub": "a", "scope": "read write"}, "scopes": None}, {"read", "write"}),
        ({"claims": {"sub": "a", "scp": "[read write]"}, "scopes": None}, {"read", "write"}),
        ({"claims": {"sub": "a", "scp": '["read","write"]'}, "scopes": None}, {"read", "write"}),
        ({"claims": {"sub": "a"}, "scopes": ["deploy"]}, {"deploy"}),
        ({"claims": {"sub": "a"}, "scopes": None}, set()),
    ],
    ids=["scope-string", "scp-as-gateway-sends-lists", "scp-as-json", "authorizer-scopes", "none"],
)
def test_scopes_come_from_the_jwt_authorizer(jwt: dict[str, Any], scopes: set[str]) -> None:
    assert scopes_of_authorizer(_event({"jwt": jwt})) == scopes


def test_without_a_jwt_authorizer_there_are_no_scopes_to_check() -> None:
    assert scopes_of_authorizer(_event()) is None
    assert scopes_of_authorizer(_event({"iam": {"userArn": "arn"}})) is None


# -- request_from_event -------------------------------------------------------------------------


def test_request_from_event_takes_method_headers_body_and_principal() -> None:
    event = _event(
        _jwt(iss=ISSUER, sub="alice"),
        headers={"Content-Type": "application/json", "MCP-Protocol-Version": "2026-07-28"},
        body='{"jsonrpc": "2.0"}',
        isBase64Encoded=False,
    )
    request = request_from_event(event)
    assert request.method == "POST"
    assert request.headers == {
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
    }
    assert request.header("Content-Type") == "application/json"
    assert request.body == b'{"jsonrpc": "2.0"}'
    assert request.principal == f"jwt:{ISSUER}|alice|"


def test_base64_body_is_decoded() -> None:
    raw = json.dumps({"name": "café ☕"}).encode() + b"\x00\xff"
    event = _event(body=base64.b64encode(raw).decode(), isBase64Encoded=True)
    assert request_from_event(event).body == raw


@pytest.mark.parametrize("body", ["not base64!", "abc"])
def test_invalid_base64_body_is_invalid_request(body: str) -> None:
    with pytest.raises(InvalidRequest):
        request_from_event(_event(body=body, isBase64Encoded=True))


def test_missing_body_and_headers_are_empty() -> None:
    request = request_from_event({"requestContext": {"http": {"method": "GET"}}})
    assert request.method == "GET"
    assert request.headers == {}
    assert request.body == b""


def test_payload_v1_method_is_used_when_there_is_no_v2_context() -> None:
    assert request_from_event({"httpMethod": "DELETE"}).method == "DELETE"


# -- response_to_api ----------------------------------------------------------------------------


def test_response_to_api() -> None:
    response = HttpResponse(200, {"content-type": "application/json"}, '{"ok":"é"}'.encode())
    assert response_to_api(response) == {
        "statusCode": 200,
        "headers": {"content-type": "application/json"},
        "body": '{"ok":"é"}',
        "isBase64Encoded": False,
    }


def test_response_to_api_for_an_empty_202() -> None:
    assert response_to_api(HttpResponse(202)) == {
        "statusCode": 202,
        "headers": {},
        "body": "",
        "isBase64Encoded": False,
    }


def test_the_lambda_context_sets_the_request_deadline() -> None:
    class Context:
        def get_remaining_time_in_millis(self) -> int:
            return 10_000

    before = time.monotonic()
    request = request_from_event({"body": "{}"}, Context())
    assert request.deadline is not None
    # The time left, less a margin to send the answer.
    assert before + 10 - RESPONSE_MARGIN_S <= request.deadline <= time.monotonic() + 10
    assert request_from_event({"body": "{}"}).deadline is None
