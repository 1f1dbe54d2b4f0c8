"""Switching `FrontDoor` (and AuthMode behind the streaming door) in one deploy, read from the
difference of the transformed templates (`test_auth_mode_switch.changes`):

- a door switch leaves nothing of the other door behind (no HTTP API resource behind
  STREAMING, no REST API resource behind BUFFERED), touches neither the table nor the bucket,
  and keeps the one API function (updated in place, never replaced);
- behind STREAMING an AuthMode switch moves the stage to a deployment made for the new
  methods (a REST stage serves a snapshot: a method changed in place is not served until a
  new deployment exists), and every shape of the methods has one;
- each integration of the streaming door streams (`ResponseTransferMode: STREAM`, the
  response-streaming-invocations URI of the function's alias), and preflight is a mock.
"""

from __future__ import annotations

import itertools
from functools import cache

import pytest

from infra.test_auth_mode_switch import MODE_SHAPES, changes
from infra.test_template import TEMPLATE, Stack, build_stack
from mcp_tasks_aws.local.template import load_template

DOOR_SHAPES = {
    f"{door}-{mode}": {**shape, "FrontDoor": door}
    for door in ("BUFFERED", "STREAMING")
    for mode, shape in MODE_SHAPES.items()
    if mode in ("NONE", "JWT", "IAM", "OAUTH")
}
HTTP_API_TYPES = {"AWS::ApiGatewayV2::Api", "AWS::ApiGatewayV2::Route"}
REST_API_TYPES = {"AWS::ApiGateway::RestApi", "AWS::ApiGateway::Method"}


@cache
def shape(name: str) -> Stack:
    return build_stack(load_template(TEMPLATE), name, DOOR_SHAPES[name])


def types(stack: Stack) -> set[str]:
    return {spec["Type"] for spec in stack.resources().values()}


@pytest.mark.parametrize("mode", ["NONE", "JWT", "IAM", "OAUTH"])
def test_a_door_switch_leaves_nothing_of_the_other_door(mode: str) -> None:
    buffered, streaming = shape(f"BUFFERED-{mode}"), shape(f"STREAMING-{mode}")
    assert types(buffered) >= HTTP_API_TYPES
    assert not REST_API_TYPES & types(buffered)
    assert types(streaming) >= REST_API_TYPES
    assert not HTTP_API_TYPES & types(streaming)
    for before, after in ((buffered, streaming), (streaming, buffered)):
        diff = changes(before, after)
        assert "ApiFunction" in diff.updated, diff
        assert "ApiFunction" not in diff.replaced, diff
        assert not {"TaskTable", "ResultBucket"} & (diff.updated | diff.replaced), diff
        assert not {"TaskTable", "ResultBucket", "ApiFunction"} & diff.deleted, diff


PAIRS = list(itertools.permutations(["NONE", "JWT", "IAM", "OAUTH"], 2))


@pytest.mark.parametrize(("before", "after"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_an_auth_switch_behind_the_streaming_door_is_deployed(before: str, after: str) -> None:
    old, new = shape(f"STREAMING-{before}"), shape(f"STREAMING-{after}")
    method_before = old.choose(old.resources()["McpMethod"]["Properties"])
    method_after = new.choose(new.resources()["McpMethod"]["Properties"])
    metadata_changes = ("WellKnownMethod" in old.resources()) != (
        "WellKnownMethod" in new.resources()
    )
    if method_before == method_after and not metadata_changes:
        return  # the same methods: the deployment may stay (JWT and OAUTH: the gate)
    deployment = {
        logical
        for logical, spec in new.resources().items()
        if spec["Type"] == "AWS::ApiGateway::Deployment"
    }
    (created,) = deployment  # exactly one deployment per stack
    diff = changes(old, new)
    assert created in diff.created, diff  # a new snapshot of the new methods
    assert "RestStage" in diff.updated, diff  # ... which the stage now serves


@pytest.mark.parametrize("mode", ["NONE", "JWT", "IAM", "OAUTH"])
def test_the_streaming_door_streams_and_preflight_is_api_gateways(mode: str) -> None:
    stack = shape(f"STREAMING-{mode}")
    methods = {
        logical: stack.choose(spec["Properties"])
        for logical, spec in stack.resources("AWS::ApiGateway::Method").items()
    }
    for logical, method in methods.items():
        integration = method["Integration"]
        if method["HttpMethod"] == "OPTIONS":
            assert integration["Type"] == "MOCK", logical
            continue
        assert integration["Type"] == "AWS_PROXY", logical
        assert integration["ResponseTransferMode"] == "STREAM", logical
        uri, variables = integration["Uri"]["Fn::Sub"]
        assert uri.endswith("/2021-11-15/functions/${Alias}/response-streaming-invocations")
        assert variables == {"Alias": {"Ref": "ApiFunctionAliaslive"}}
    assert {m["HttpMethod"] for m in methods.values()} >= {"ANY", "OPTIONS"}


@pytest.mark.parametrize("mode", ["NONE", "JWT", "IAM", "OAUTH"])
def test_the_buffered_door_keeps_its_function_as_it_was(mode: str) -> None:
    # The buffered door's function: the Lambda handler, 29 s, SnapStart, no adapter.
    stack = shape(f"BUFFERED-{mode}")
    function = stack.choose(stack.resources()["ApiFunction"]["Properties"])
    assert function["Handler"] == "handlers.api.handler"
    assert function["Timeout"] == 29
    assert "Layers" not in function
    assert not any(name.startswith("AWS_L") for name in function["Environment"]["Variables"])
