"""Every name template.yaml gives a resource fits its service's limit for the longest stack
name CloudFormation allows (128 characters), in every parameter set (issue 19.21).

Names are evaluated offline from the transformed template: conditions decided, intrinsics
resolved over a 128-character stack name, every other resource's physical id standing in at
the longest CloudFormation generates (64 characters). Limits come from cfn-lint's resource
schemas where they declare one, else from NAME_LIMITS (the services' documented quotas); a
name property with no known limit fails the test, so a new name cannot go unchecked.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from infra.test_template import ACCOUNT, Stack
from mcp_tasks_aws.local.template import Resolver

LONGEST_STACK_NAME = "s" * 128  # CloudFormation: 1-128 characters, [a-zA-Z][-a-zA-Z0-9]*
STACK_UUID = "51af3dc0-da77-11e4-872e-1234567db123"
PHYSICAL_ID = "p" * 64  # CloudFormation's generated names are cut to fit, 64 at most here

# Documented limits the cfn-lint schemas do not declare, by (resource type, property).
NAME_LIMITS: dict[tuple[str, str], int] = {
    ("AWS::ApiGatewayV2::Api", "Name"): 128,
    ("AWS::ApiGatewayV2::Api", "Description"): 1024,
    ("AWS::ApiGatewayV2::Authorizer", "Name"): 128,
    ("AWS::ApiGatewayV2::Stage", "StageName"): 128,
    ("AWS::ApiGateway::RestApi", "Name"): 128,  # kept to the HTTP API's: a constant + the id
    ("AWS::ApiGateway::RestApi", "Description"): 1024,
    ("AWS::ApiGateway::Deployment", "Description"): 1024,
    ("AWS::ApiGateway::Stage", "StageName"): 128,
    ("AWS::Lambda::Function", "FunctionName"): 64,
    ("AWS::Lambda::EventInvokeConfig", "FunctionName"): 140,  # a name or an ARN
    ("AWS::Lambda::Alias", "FunctionName"): 140,  # a name or an ARN (AutoPublishAlias)
    ("AWS::Lambda::Version", "FunctionName"): 140,  # a name or an ARN (AutoPublishAlias)
    ("AWS::SQS::Queue", "QueueName"): 80,
    ("AWS::DynamoDB::Table", "TableName"): 255,
    ("AWS::IAM::Role", "PolicyName"): 128,
    ("AWS::DynamoDB::Table", "IndexName"): 255,
}

# The names that follow the stack's name or id: the test must see them all.
STACK_DERIVED = {
    ("HttpApi", "Name"),
    ("UserPool", "UserPoolName"),
    ("UserPoolClient", "ClientName"),
    ("UserPoolResourceServer", "Name"),
    ("UserPoolDomain", "Domain"),
    ("TaskStateMachine", "StateMachineName"),
    ("ApiFunctionLogGroup", "LogGroupName"),
}


def is_name(key: str) -> bool:
    return key.endswith("Name") or key in {"Domain", "Identifier"}


@cache
def schema_limits(type_name: str) -> dict[str, int]:
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    properties = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", type_name).schema[
        "properties"
    ]
    return {
        key: spec["maxLength"]
        for key, spec in properties.items()
        if isinstance(spec, dict) and "maxLength" in spec
    }


def limit_of(type_name: str, key: str) -> int | None:
    return NAME_LIMITS.get((type_name, key), schema_limits(type_name).get(key))


def longest_resolver(stack: Stack) -> Resolver:
    stack_id = f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/{LONGEST_STACK_NAME}/{STACK_UUID}"
    refs: dict[str, Any] = {logical: PHYSICAL_ID for logical in stack.template["Resources"]}
    refs.update(stack.values)
    refs.update(
        {
            "AWS::Partition": "aws",
            "AWS::Region": "us-east-1",
            "AWS::URLSuffix": "amazonaws.com",
            "AWS::AccountId": ACCOUNT,
            "AWS::StackName": LONGEST_STACK_NAME,
            "AWS::StackId": stack_id,
        }
    )

    def attribute(logical: str, name: str) -> str:
        return f"arn:aws:service:us-east-1:{ACCOUNT}:{logical}/{PHYSICAL_ID}"

    return Resolver(refs, attribute, stack.conditions)


def named_values(stack: Stack) -> list[tuple[str, str, str, Any]]:
    """(logical id, type, property, expression) of every name, and every description (which
    may name the stack too)."""
    found = []
    for logical, spec in stack.resources().items():
        type_name = spec["Type"]
        properties = stack.choose(spec.get("Properties", {}))
        for key, value in properties.items():
            if is_name(key) or key.endswith("Description"):
                found.append((logical, type_name, key, value))
        for policy in properties.get("Policies", []) if type_name == "AWS::IAM::Role" else []:
            found.append((logical, type_name, "PolicyName", policy["PolicyName"]))
        for index in properties.get("GlobalSecondaryIndexes", []):
            found.append((logical, type_name, "IndexName", index["IndexName"]))
    return found


def test_every_name_fits_its_limit_for_the_longest_stack_name(stack: Stack) -> None:
    resolve = longest_resolver(stack).resolve
    too_long, unknown = [], []
    for logical, type_name, key, expression in named_values(stack):
        value = resolve(expression)
        if not isinstance(value, str):
            continue  # a document or a list (policies, patterns): not a name
        limit = limit_of(type_name, key)
        if limit is None:
            unknown.append(f"{logical}.{key} ({type_name})")
        elif len(value) > limit:
            too_long.append(f"{logical}.{key}: {len(value)} > {limit} ({value[:40]}...)")
    assert not unknown, f"names without a known limit (add to NAME_LIMITS): {unknown}"
    assert not too_long, too_long


def test_the_stack_derived_names_are_all_checked(transformed: Any) -> None:
    cognito: Stack = transformed("oauth-cognito")
    checked = {(logical, key) for logical, _, key, _ in named_values(cognito)}
    assert checked >= STACK_DERIVED
    resolve = longest_resolver(cognito).resolve
    for logical, key in STACK_DERIVED:
        spec = cognito.resources()[logical]
        value = resolve(cognito.choose(spec["Properties"])[key])
        assert limit_of(spec["Type"], key) is not None, (logical, key)
        assert len(value) <= (limit_of(spec["Type"], key) or 0), (logical, key, value)


@pytest.mark.parametrize(
    ("logical", "key"),
    [("HttpApi", "Name"), ("UserPool", "UserPoolName"), ("UserPoolClient", "ClientName")],
)
def test_names_capped_at_128_do_not_grow_with_the_stack_name(
    transformed: Any, logical: str, key: str
) -> None:
    # These services allow 128 characters, as many as a stack name: a name built from the
    # stack's name and a suffix cannot fit, one from its UUID (or a constant) always does.
    cognito: Stack = transformed("oauth-cognito")
    expression = cognito.choose(cognito.resources()[logical]["Properties"])[key]
    assert "AWS::StackName" not in str(expression)
    assert len(longest_resolver(cognito).resolve(expression)) <= 128


@pytest.mark.parametrize(
    ("type_name", "key"),
    [
        ("AWS::ApiGatewayV2::Api", "Name"),
        ("AWS::Cognito::UserPool", "UserPoolName"),
        ("AWS::Cognito::UserPoolClient", "ClientName"),
    ],
)
def test_a_renamed_resource_is_updated_in_place(type_name: str, key: str) -> None:
    # An existing stack takes the new names without replacing its API (a new URL) or its
    # user pool (retained, its users left behind).
    from cfnlint.schema import PROVIDER_SCHEMA_MANAGER

    schema = PROVIDER_SCHEMA_MANAGER.get_resource_schema("us-east-1", type_name).schema
    assert f"/properties/{key}" not in schema.get("createOnlyProperties", [])
