"""Switching AuthMode in one deploy (issue 19.22), for every ordered pair of modes: the
difference between the two transformed templates says what CloudFormation would create,
update, replace and delete, and no switch may

- delete an authorizer a route referred to before the switch: a route moved from JWT to
  AWS_IAM is reported to keep its authorizer attached upstream, whatever the template says,
  and DeleteAuthorizer then fails ("is referenced in route"), failing the deploy;
- replace (or delete without retaining) a resource that holds data: the task table, the
  result bucket, the user pool.

Checked on the templates, not on moto: moto's CloudFormation has no ApiGatewayV2 resources
(its apigatewayv2 backend has no CloudFormation model) and no model of the attached-
authorizer conflict, so a stack update there would pass whatever the template did.

Replacement follows the create-only properties of cfn-lint's resource schemas (plus
EXTRA_CREATE_ONLY), and propagates: a replaced resource's new id changes every property
that refers to it.
"""

from __future__ import annotations

import copy
import itertools
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from infra.test_template import ACCOUNT, TEMPLATE, Stack, build_stack
from mcp_tasks_aws.local.template import Resolver, load_template

ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example"

# Each AuthMode as one deploy's parameters; the rest stays at the template's defaults. An
# operator switching away from JWT may keep the issuer and audience, or clear them.
MODE_SHAPES: dict[str, dict[str, str]] = {
    "NONE": {"AuthMode": "NONE"},
    "JWT": {"AuthMode": "JWT", "JwtIssuer": ISSUER, "JwtAudience": "client-a,client-b"},
    "IAM": {"AuthMode": "IAM"},
    "IAM-issuer-kept": {
        "AuthMode": "IAM",
        "JwtIssuer": ISSUER,
        "JwtAudience": "client-a,client-b",
    },
    "OAUTH": {"AuthMode": "OAUTH", "JwtIssuer": "https://id.example.com", "OAuthScopes": "mcp"},
    "OAUTH-cognito": {"AuthMode": "OAUTH", "CreateUserPool": "true"},
}

# Resources whose replacement or deletion loses what they hold.
DATA_TYPES = {"AWS::DynamoDB::Table", "AWS::S3::Bucket", "AWS::Cognito::UserPool"}
# Create-only as CloudFormation documents it where the registry schema does not say so.
EXTRA_CREATE_ONLY = {"AWS::DynamoDB::Table": ["/properties/KeySchema"]}


@cache
def shape(name: str) -> Stack:
    return build_stack(load_template(TEMPLATE), name, MODE_SHAPES[name])


@cache
def create_only(type_name: str) -> tuple[str, ...]:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", type_name).schema
    return tuple(schema.get("createOnlyProperties", [])) + tuple(
        EXTRA_CREATE_ONLY.get(type_name, [])
    )


def at(properties: dict[str, Any], pointer: str) -> Any:
    value: Any = properties
    for part in pointer.removeprefix("/properties/").split("/"):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


@dataclass(frozen=True)
class Changes:
    created: frozenset[str]
    deleted: frozenset[str]
    updated: frozenset[str]
    replaced: frozenset[str]


def settled(stack: Stack, replaced: set[str], generation: int) -> dict[str, dict[str, Any]]:
    """Each resource's properties as CloudFormation would send them: conditions decided,
    parameters and pseudo parameters filled in, other resources by their physical id (a
    replaced resource gets a new one)."""
    tag = {
        logical: f"{logical}#{generation if logical in replaced else 0}"
        for logical in stack.template["Resources"]
    }
    refs: dict[str, Any] = dict(tag)
    refs.update(stack.values)
    refs.update(
        {
            "AWS::Partition": "aws",
            "AWS::Region": "us-east-1",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::AccountId": ACCOUNT,
            "AWS::StackName": "stk",
            "AWS::StackId": f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/stk/uuid",
        }
    )
    resolver = Resolver(refs, lambda logical, name: f"{tag[logical]}.{name}", stack.conditions)
    return {
        logical: resolver.resolve(stack.choose(spec.get("Properties", {})))
        for logical, spec in stack.resources().items()
    }


def changes(old: Stack, new: Stack) -> Changes:
    before_ids, after_ids = set(old.resources()), set(new.resources())
    common = before_ids & after_ids
    replaced: set[str] = set()
    while True:  # until no replacement causes another
        before, after = settled(old, set(), 0), settled(new, replaced, 1)
        updated, replacing = set(), set()
        for logical in common:
            old_type = old.resources()[logical]["Type"]
            new_type = new.resources()[logical]["Type"]
            if before[logical] != after[logical] or old_type != new_type:
                updated.add(logical)
            if old_type != new_type or any(
                at(before[logical], pointer) != at(after[logical], pointer)
                for pointer in create_only(new_type)
            ):
                replacing.add(logical)
        if replacing <= replaced:
            break
        replaced |= replacing
    return Changes(
        created=frozenset(after_ids - before_ids),
        deleted=frozenset(before_ids - after_ids),
        updated=frozenset(updated),
        replaced=frozenset(replaced),
    )


def authorizers_in_use(stack: Stack) -> set[str]:
    """The authorizers the stack's routes refer to."""
    used = set()
    for spec in stack.resources("AWS::ApiGatewayV2::Route").values():
        authorizer = stack.choose(spec["Properties"]).get("AuthorizerId")
        if isinstance(authorizer, dict) and "Ref" in authorizer:
            used.add(authorizer["Ref"])
    return used


PAIRS = list(itertools.permutations(MODE_SHAPES, 2))


@pytest.mark.parametrize(("before", "after"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_no_switch_deletes_an_authorizer_a_route_used(before: str, after: str) -> None:
    old, new = shape(before), shape(after)
    diff = changes(old, new)
    assert not authorizers_in_use(old) & diff.deleted, diff
    # Nor is an authorizer still in use replaced (a new id under a route that keeps the old)
    assert not authorizers_in_use(old) & diff.replaced - authorizers_in_use(new), diff


@pytest.mark.parametrize(("before", "after"), PAIRS, ids=[f"{a}->{b}" for a, b in PAIRS])
def test_no_switch_replaces_or_drops_what_holds_data(before: str, after: str) -> None:
    old, new = shape(before), shape(after)
    diff = changes(old, new)
    types = {logical: spec["Type"] for logical, spec in old.resources().items()}
    assert not {r for r in diff.replaced if types[r] in DATA_TYPES}, diff
    for logical in diff.deleted:
        if types[logical] in DATA_TYPES:  # the pool of CreateUserPool=true: kept, detached
            assert old.template["Resources"][logical].get("DeletionPolicy") == "Retain"
    # The task table and the result bucket are not even touched
    assert not {"TaskTable", "ResultBucket"} & diff.updated, diff


@pytest.mark.parametrize("name", sorted(MODE_SHAPES))
def test_a_route_that_may_use_an_authorizer_is_deleted_before_it(name: str) -> None:
    # Deleting the stack, or any later switch: CloudFormation deletes a resource after those
    # that depend on it, so a route still attached upstream goes before its authorizer.
    stack = shape(name)
    ever_used = set().union(*(authorizers_in_use(shape(other)) for other in MODE_SHAPES))
    assert ever_used, "no mode uses an authorizer"
    for logical, spec in stack.resources("AWS::ApiGatewayV2::Route").items():
        if logical != "McpRoute":
            continue
        depends = spec.get("DependsOn", [])
        depends = [depends] if isinstance(depends, str) else depends
        for authorizer in ever_used:
            assert authorizer in stack.resources(), (name, authorizer)
            assert authorizer in depends or authorizer in authorizers_in_use(stack), (
                name,
                authorizer,
            )


def test_the_difference_sees_replacements_and_what_they_touch() -> None:
    # The checks above are only as good as `changes`: a create-only change is a replacement,
    # and the replaced resource's new id updates whatever refers to it.
    template = load_template(TEMPLATE)
    old = build_stack(template, "old", MODE_SHAPES["NONE"])
    rekeyed = copy.deepcopy(template)
    rekeyed["Resources"]["TaskTable"]["Properties"]["KeySchema"][0]["AttributeName"] = "owner"
    new = build_stack(rekeyed, "new", MODE_SHAPES["NONE"])
    diff = changes(old, new)
    assert "TaskTable" in diff.replaced
    assert {"ApiFunction", "ApiFunctionRole", "WorkerFunctionRole"} <= diff.updated
    assert not diff.created | diff.deleted
    # A switch to JWT is seen too: the route and the authorizer change, and only the API
    # function's configuration revision and its published version are replaced (the function
    # is published again: test_published_versions.py)
    jwt = changes(old, shape("JWT"))
    assert {"McpRoute", "JwtAuthorizer"} <= jwt.updated
    version = next(r for r in jwt.replaced if r.startswith("ApiFunctionVersion"))
    assert jwt.replaced == {"ApiConfiguration", version}
    assert not jwt.deleted | jwt.created
