"""The one mapper from exceptions to JSON-RPC error objects and HTTP statuses."""

from __future__ import annotations

import pytest

from mcp_tasks_aws.protocol.errors import (
    HeaderMismatch,
    InternalError,
    InvalidMeta,
    InvalidParams,
    InvalidRequest,
    McpError,
    MethodNotFound,
    MissingClientCapability,
    ParseError,
    UnsupportedProtocolVersion,
    to_error_object,
)


@pytest.mark.parametrize(
    ("exc", "code", "status"),
    [
        (ParseError("bad json"), -32700, 400),
        (InvalidRequest("bad request"), -32600, 400),
        (MethodNotFound("no such method"), -32601, 404),
        (InvalidParams("bad params"), -32602, 200),
        (InvalidMeta("bad meta"), -32602, 400),
        (InternalError("broken"), -32603, 500),
        (HeaderMismatch("mismatch"), -32020, 400),
    ],
)
def test_mcp_errors_map_to_their_code_message_and_status(
    exc: McpError, code: int, status: int
) -> None:
    error, http_status = to_error_object(exc)
    assert error == {"code": code, "message": exc.message}
    assert http_status == status


def test_data_is_carried_when_given() -> None:
    error, _ = to_error_object(InvalidParams("bad", data={"field": "x"}))
    assert error["data"] == {"field": "x"}


def test_falsy_data_other_than_none_is_kept() -> None:
    error, _ = to_error_object(InvalidParams("bad", data=[]))
    assert error["data"] == []


def test_missing_capability_names_the_required_capabilities() -> None:
    error, status = to_error_object(MissingClientCapability({"sampling": {}}))
    assert status == 400
    assert error["code"] == -32021
    assert error["data"] == {"requiredCapabilities": {"sampling": {}}}
    assert error["message"]


def test_missing_capability_accepts_a_custom_message() -> None:
    error, _ = to_error_object(MissingClientCapability({"roots": {}}, "needs roots"))
    assert error["message"] == "needs roots"


def test_unsupported_version_lists_requested_and_supported() -> None:
    error, status = to_error_object(UnsupportedProtocolVersion("1999-01-01", ["2026-07-28"]))
    assert status == 400
    assert error["code"] == -32022
    assert error["data"] == {"requested": "1999-01-01", "supported": ["2026-07-28"]}
    assert "1999-01-01" in error["message"]


@pytest.mark.parametrize(
    "exc",
    [
        ValueError("password=hunter2 in /srv/secret.txt"),
        KeyError("aws_secret_access_key"),
        RuntimeError("boto3 said: AccessDenied for arn:aws:iam::123:role/x"),
        Exception(),
    ],
)
def test_unknown_exceptions_become_a_bare_internal_error(exc: Exception) -> None:
    # The exact equality also proves nothing of the original text reaches the wire.
    error, status = to_error_object(exc)
    assert error == {"code": -32603, "message": "Internal error"}
    assert status == 500
