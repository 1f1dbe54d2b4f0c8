"""What API Gateway does in front of the API function, emulated for the embedded stack.

Builds the HTTP API payload-v2 event from a raw HTTP request, including an emulated JWT
authorizer: a bearer token's claims are read **without checking its signature** (local use
only), so two local callers can be told apart. Nothing here is deployed.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Any


def unverified_jwt_claims(authorization: str | None) -> dict[str, Any] | None:
    """Claims of a `Bearer <jwt>` header, signature NOT verified; None if it is not a JWT."""
    if not authorization or not authorization.lower().startswith("bearer "):
        return None
    parts = authorization[7:].strip().split(".")
    if len(parts) != 3:
        return None
    try:
        payload = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(payload)
    except ValueError:
        return None
    return claims if isinstance(claims, dict) else None


def build_event(
    *,
    method: str,
    path: str,
    headers: dict[str, str],
    body: bytes,
    source_ip: str = "127.0.0.1",
    jwt_authorizer: bool = True,
) -> dict[str, Any]:
    """An API Gateway HTTP API (payload 2.0) event as the deployed function receives it.

    With `jwt_authorizer`, a bearer JWT's claims become `requestContext.authorizer.jwt` as the
    JWT authorizer would put them (unverified here); without it (AuthMode OAUTH, whose route
    has no authorizer) the header reaches the function untouched.
    """
    lowered = {k.lower(): v for k, v in headers.items()}
    raw_path, _, query = path.partition("?")
    context: dict[str, Any] = {
        "accountId": "123456789012",
        "apiId": "local",
        "domainName": lowered.get("host", "127.0.0.1"),
        "http": {
            "method": method,
            "path": raw_path,
            "protocol": "HTTP/1.1",
            "sourceIp": source_ip,
            "userAgent": lowered.get("user-agent", ""),
        },
        "requestId": str(uuid.uuid4()),
        "routeKey": f"{method} {raw_path}",
        "stage": "$default",
        "time": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime()),
        "timeEpoch": int(time.time() * 1000),
    }
    claims = unverified_jwt_claims(lowered.get("authorization")) if jwt_authorizer else None
    if claims is not None:
        context["authorizer"] = {
            "jwt": {
                "claims": {
                    k: v if isinstance(v, str) else json.dumps(v) for k, v in claims.items()
                },
                "scopes": None,
            }
        }
    text_body = True
    try:
        decoded = body.decode()
    except UnicodeDecodeError:
        text_body = False
    return {
        "version": "2.0",
        "routeKey": context["routeKey"],
        "rawPath": raw_path,
        "rawQueryString": query,
        "headers": lowered,
        "requestContext": context,
        "body": decoded if text_body else base64.b64encode(body).decode(),
        "isBase64Encoded": not text_body,
    }


@dataclass
class LocalLambdaContext:
    """The attributes of a Lambda context object that Powertools reads."""

    function_name: str = "mcp-tasks-aws-api"
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 512
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:mcp-tasks-aws-api"
    log_group_name: str = "/aws/lambda/mcp-tasks-aws-api"
    log_stream_name: str = "local"
    response_stream: Any = None
    """A sink for streamed responses (see `edge.apigw.ResponseStream`); Lambda has none."""
    timeout_s: float = 30.0
    """The function's timeout (the template's `Timeout`); the time left counts down from it."""
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self.started + self.timeout_s - time.monotonic()) * 1000))
