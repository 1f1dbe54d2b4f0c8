"""The request-state secret in Secrets Manager (moto): read on first use, cached, both values
accepted during a rotation; and the API side wired to it from `MCP_TASKS_STATE_SECRET_ARN`."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from mcp_tasks_aws.app import build_transport, state_secrets
from mcp_tasks_aws.aws.secrets import SecretsManagerSecrets
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.protocol.request_state import RequestStateCodec, SealedRound, StaticSecrets
from support.clock import Clock
from support.mcp import McpClient

OLD, NEW = "o" * 40, "n" * 40
BINDING = {"m": "tools/call", "n": "t", "a": "x", "p": "y"}
ROUND = SealedRound(answers={"k": {"action": "accept"}}, outstanding=frozenset({"q"}))


class CountingClient:
    """The Secrets Manager client, with its reads counted."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.reads: list[str] = []
        self.fail = False

    def get_secret_value(self, **kwargs: Any) -> Any:
        self.reads.append(kwargs.get("VersionStage", "AWSCURRENT"))
        if self.fail:
            raise ConnectionError("endpoint unreachable")
        return self.client.get_secret_value(**kwargs)


@pytest.fixture
def secretsmanager() -> Iterator[Any]:
    from moto import mock_aws

    saved = dict(os.environ)
    os.environ.update(  # moto's fakes, and the region Lambda sets
        {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
        }
    )
    try:
        with mock_aws():
            import boto3

            yield boto3.client("secretsmanager", region_name="us-east-1")
    finally:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture
def secret_arn(secretsmanager: Any) -> str:
    arn: str = secretsmanager.create_secret(Name="state", SecretString=OLD)["ARN"]
    return arn


def _source(secretsmanager: Any, arn: str, clock: Clock) -> tuple[SecretsManagerSecrets, Any]:
    client = CountingClient(secretsmanager)
    return SecretsManagerSecrets(arn, lambda: client, clock=clock), client


def test_the_secret_is_read_on_first_use_then_cached(secretsmanager: Any, secret_arn: str) -> None:
    clock = Clock()
    source, client = _source(secretsmanager, secret_arn, clock)
    assert client.reads == []  # building it reads nothing: a cold start pays nothing
    assert list(source.secrets()) == [OLD.encode()]
    clock.now += 60
    assert list(source.secrets()) == [OLD.encode()]
    assert client.reads == ["AWSCURRENT"]


def test_the_cache_ages_out(secretsmanager: Any, secret_arn: str) -> None:
    clock = Clock()
    source, client = _source(secretsmanager, secret_arn, clock)
    source.secrets()
    secretsmanager.put_secret_value(SecretId=secret_arn, SecretString=NEW)
    clock.now += 601
    assert list(source.secrets()) == [NEW.encode()]
    assert client.reads == ["AWSCURRENT", "AWSCURRENT"]


def test_a_refresh_during_a_rotation_reads_both_values(
    secretsmanager: Any, secret_arn: str
) -> None:
    # Given a function that read the secret before it was rotated
    clock = Clock()
    source, client = _source(secretsmanager, secret_arn, clock)
    assert list(source.secrets()) == [OLD.encode()]
    secretsmanager.put_secret_value(SecretId=secret_arn, SecretString=NEW)
    # When a state sealed under an unknown key makes it refresh
    refreshed = source.secrets(refresh=True)
    # Then it seals with the new value and still accepts the old one
    assert list(refreshed) == [NEW.encode(), OLD.encode()]
    assert client.reads == ["AWSCURRENT", "AWSCURRENT", "AWSPREVIOUS"]


def test_refreshes_are_rate_limited(secretsmanager: Any, secret_arn: str) -> None:
    clock = Clock()
    source, client = _source(secretsmanager, secret_arn, clock)
    source.secrets()
    source.secrets(refresh=True)  # the first refresh reads at once
    reads = len(client.reads)
    for _ in range(5):  # forged key ids, one after another
        source.secrets(refresh=True)
    assert len(client.reads) == reads
    clock.now += 31
    source.secrets(refresh=True)
    assert len(client.reads) > reads


def test_a_never_rotated_secret_has_no_previous_value(secretsmanager: Any, secret_arn: str) -> None:
    source, _ = _source(secretsmanager, secret_arn, Clock())
    assert list(source.secrets(refresh=True)) == [OLD.encode()]


def test_a_failed_read_keeps_the_cached_value(secretsmanager: Any, secret_arn: str) -> None:
    clock = Clock()
    source, client = _source(secretsmanager, secret_arn, clock)
    source.secrets()
    client.fail = True
    clock.now += 601
    assert list(source.secrets()) == [OLD.encode()]


def test_a_failed_first_read_raises(secretsmanager: Any, secret_arn: str) -> None:
    source, client = _source(secretsmanager, secret_arn, Clock())
    client.fail = True
    with pytest.raises(ConnectionError):
        source.secrets()


def test_states_sealed_before_a_rotation_open_after_it(
    secretsmanager: Any, secret_arn: str
) -> None:
    # Given a state sealed by a function that read the old value
    clock = Clock()
    before, _ = _source(secretsmanager, secret_arn, clock)
    token = RequestStateCodec(before).seal(BINDING, ROUND)
    # When the secret rotates and another function (which reads the new value) opens it
    secretsmanager.put_secret_value(SecretId=secret_arn, SecretString=NEW)
    after, _ = _source(secretsmanager, secret_arn, clock)
    codec = RequestStateCodec(after)
    # Then it opens (the unknown key id made it read both values), and new states use the new
    assert codec.open(token, BINDING) == ROUND
    fresh = codec.seal(BINDING, ROUND)
    assert RequestStateCodec(NEW.encode()).open(fresh, BINDING) == ROUND


# -- wiring -----------------------------------------------------------------------------------


def test_an_arn_setting_reads_the_secret_from_secrets_manager() -> None:
    source = state_secrets(Settings(state_secret_arn="arn:aws:secretsmanager:r:1:secret:s"))
    assert isinstance(source, SecretsManagerSecrets)
    assert source.secret_id == "arn:aws:secretsmanager:r:1:secret:s"


def test_a_local_secret_is_used_as_given() -> None:
    source = state_secrets(Settings(state_secret=b"l" * 32))
    assert isinstance(source, StaticSecrets)
    assert list(source.secrets()) == [b"l" * 32]


def test_no_secret_at_all_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="MCP_TASKS_STATE_SECRET_ARN"):
        state_secrets(Settings())


def test_an_inline_round_trip_with_the_deployed_configuration(
    secretsmanager: Any, secret_arn: str
) -> None:
    # Given the API side configured as deployed: an ARN, no secret value, a deployment id
    settings = Settings(
        tools_module="conformance", state_secret_arn=secret_arn, deployment_id="stack-1"
    )
    client = McpClient(build_transport(settings))
    # When a tool asks a question and the client answers with the state
    tool = "test_input_required_result_elicitation"
    first = client.tool_result(tool)
    answer = {"user_name": {"action": "accept", "content": {"name": "Ada"}}}
    second = client.tool_result(
        tool, extra_params={"requestState": first["requestState"], "inputResponses": answer}
    )
    # Then the call completes, and another deployment with the same secret refuses the state
    assert second["content"][0]["text"] == "Hello, Ada!"
    other = McpClient(build_transport(Settings(**{**settings.__dict__, "deployment_id": "b"})))
    refused = other.call_tool(
        tool, {}, extra_params={"requestState": first["requestState"], "inputResponses": answer}
    )
    assert refused.json["error"]["code"] == -32602
