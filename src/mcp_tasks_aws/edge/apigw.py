"""API Gateway HTTP API (payload format 2.0) events to `HttpRequest`, and back.

The caller's principal comes only from what API Gateway's authorizer put in
`requestContext.authorizer` (JWT claims, IAM caller, or a Lambda authorizer's context). A raw
`Authorization` header is never read here: API Gateway has already verified it, or nothing has.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Protocol

from mcp_tasks_aws.protocol.errors import InvalidRequest
from mcp_tasks_aws.protocol.transport import HttpRequest, HttpResponse

ANONYMOUS = "anonymous"


def principal_of(event: dict[str, Any]) -> str:
    """A stable string naming the authenticated caller, or `anonymous` without an authorizer.

    JWT: issuer, subject and client (`client_id`, else `azp`), so one user's tasks made through
    two OAuth clients stay apart. IAM: the caller's ARN. Lambda authorizer: its `principalId`
    (or `sub`) from the authorizer context.
    """
    authorizer = (event.get("requestContext") or {}).get("authorizer") or {}
    jwt = authorizer.get("jwt")
    if isinstance(jwt, dict):
        claims = jwt.get("claims") or {}
        subject = claims.get("sub")
        if subject:
            client = claims.get("client_id") or claims.get("azp") or ""
            return f"jwt:{claims.get('iss', '')}|{subject}|{client}"
    iam = authorizer.get("iam")
    if isinstance(iam, dict):
        arn = iam.get("userArn") or iam.get("callerId")
        if arn:
            return f"iam:{iam.get('accountId', '')}|{arn}"
    custom = authorizer.get("lambda")
    if isinstance(custom, dict):
        subject = custom.get("principalId") or custom.get("sub")
        if subject:
            return f"lambda:{subject}"
    return ANONYMOUS


def request_from_event(event: dict[str, Any]) -> HttpRequest:
    """Build the transport's request from a payload-v2 event."""
    context = event.get("requestContext") or {}
    method = (context.get("http") or {}).get("method") or event.get("httpMethod") or "GET"
    headers = {str(k).lower(): str(v) for k, v in (event.get("headers") or {}).items()}
    raw = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            body = base64.b64decode(raw, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise InvalidRequest("Invalid base64 body") from exc
    else:
        body = raw.encode()
    return HttpRequest(method=method, headers=headers, body=body, principal=principal_of(event))


class ResponseStream(Protocol):
    """A sink an invoker may offer on the Lambda context to receive a response as it is made.

    Python Lambda functions behind API Gateway cannot stream, so deployed there is none and
    streamed responses are buffered; the embedded stack's invoker offers one.
    """

    def begin(self, status: int, headers: dict[str, str]) -> None: ...

    def write(self, chunk: bytes) -> None: ...


def response_to_api(response: HttpResponse, context: Any = None) -> dict[str, Any]:
    """The payload-v2 response API Gateway expects (text bodies, never base64 here)."""
    sink: ResponseStream | None = getattr(context, "response_stream", None)
    if response.stream is not None and sink is not None:
        sink.begin(response.status, response.headers)
        for chunk in response.stream:
            sink.write(chunk)
        return {
            "statusCode": response.status,
            "headers": response.headers,
            "body": "",
            "isBase64Encoded": False,
            "streamed": True,
        }
    return {
        "statusCode": response.status,
        "headers": response.headers,
        "body": response.read_all().decode(),
        "isBase64Encoded": False,
    }
