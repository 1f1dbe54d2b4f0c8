"""AuthMode OAUTH keeps the API function lean: `cryptography` is imported only once a token is
actually checked, and a request without a token fetches no keys (a fresh interpreter with the
deployed function's environment, as the Lambda runtime would start it)."""

from __future__ import annotations

from mcp_tasks_aws.local.apigw_emulator import build_event
from support.lambdas import API_CHILD_PRELUDE, api_job, deployed_environment, run_child

CHILD = (
    API_CHILD_PRELUDE
    + """
statuses = [api.handler(event, context)["statusCode"] for event in job["events"]]
print(json.dumps({"statuses": statuses, "crypto": "cryptography" in sys.modules}))
"""
)


def run_child_oauth(events: list[dict[str, object]]) -> dict[str, object]:
    env = deployed_environment(
        MCP_TASKS_AUTH_MODE="oauth",
        MCP_TASKS_RESOURCE_URL="https://mcp.example/mcp",
        # Nothing listens here: a key fetch would fail, and the token below would get a 503.
        MCP_TASKS_OAUTH_ISSUER="http://127.0.0.1:9",
    )
    result: dict[str, object] = run_child(CHILD, api_job(events=events), env)
    return result


def event(headers: dict[str, str]) -> dict[str, object]:
    return build_event(
        method="POST",
        path="/mcp",
        headers={"content-type": "application/json", **headers},
        body=b"{}",
        jwt_authorizer=False,
    )


def test_requests_without_a_token_never_import_crypto_nor_fetch_keys() -> None:
    metadata = build_event(
        method="GET",
        path="/.well-known/oauth-protected-resource/mcp",
        headers={},
        body=b"",
        jwt_authorizer=False,
    )
    result = run_child_oauth([event({}), metadata, event({"authorization": "Basic eA=="})])
    assert result == {"statuses": [401, 200, 401], "crypto": False}


def test_an_unreachable_issuer_is_503_and_no_signature_is_checked() -> None:
    # Given a well-formed token, When the issuer's keys cannot be fetched
    token = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln"
    result = run_child_oauth([event({"authorization": f"Bearer {token}"}), event({})])
    # Then the answer is an outage (not a verdict on the token), and nothing was verified, so
    # nothing was imported for it; the function still answers the next request
    assert result == {"statuses": [503, 401], "crypto": False}
