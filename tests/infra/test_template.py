"""template.yaml deploys, checked offline (no network, no credentials).

- The SAM transform (aws-sam-translator) succeeds for every parameter set (each AuthMode and
  the other condition branches), creates the expected resources, and every reference still
  resolves once CloudFormation applies the conditions; the template Rules refuse a JWT stack
  without issuer or audience; cfn-lint is clean.
- The resources carry the settings the design depends on: table TTL/PITR/SSE, a private
  encrypted bucket whose results outlive any task, state machine logging and tracing, the
  lost-execution rule for this machine, the outputs a client needs.
- The ASL files in infra/ parse with moto's parser after substitution, use JSONPath only (no
  JSONata, no variables) and match DefinitionSubstitutions both ways.
- Least privilege, read from the TRANSFORMED template: no wildcard action; a "*" resource only
  for the Sids in STAR_RESOURCE, managed policies only from MANAGED_POLICIES (each with its
  reason); each function allowed exactly the calls its code makes (EXPECTED_ACTIONS, also
  derived from the source).

The transform is given the template as `sam package` leaves it (code and definitions in S3)
and a stub managed-policy loader (the template names no managed policy).
"""

from __future__ import annotations

import ast
import copy
import inspect
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from mcp_tasks_aws.aws.s3 import RETENTION_DAYS, S3ResultStore
from mcp_tasks_aws.config import Settings
from mcp_tasks_aws.local.template import Resolver, load_template

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
PACKAGE = ROOT / "src" / "mcp_tasks_aws"
REGION = "us-east-1"

# Parameter sets every stack shape is checked with: each AuthMode, and the other branches.
PARAMETER_SETS: dict[str, dict[str, Any]] = {
    "none": {"AuthMode": "NONE"},
    "jwt": {
        "AuthMode": "JWT",
        "JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example",
        "JwtAudience": "client-a,client-b",
        "Tracing": "Disabled",
    },
    "oauth": {
        "AuthMode": "OAUTH",
        "JwtIssuer": "https://id.example.com",
        "OAuthScopes": "mcp",
    },
    "oauth-cognito": {"AuthMode": "OAUTH", "CreateUserPool": "true"},
    "iam": {
        "AuthMode": "IAM",
        "StateSecretArn": "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-abc123",
        "AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:alarms",
        "ApiConcurrency": "0",
        "WorkerConcurrency": "0",
    },
    # The STREAMING front door (a REST API, the function under the Lambda Web Adapter), in
    # every AuthMode.
    "streaming": {"FrontDoor": "STREAMING"},
    "streaming-jwt": {
        "FrontDoor": "STREAMING",
        "AuthMode": "JWT",
        "JwtIssuer": "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_example",
        "JwtAudience": "client-a,client-b",
    },
    "streaming-oauth": {
        "FrontDoor": "STREAMING",
        "AuthMode": "OAUTH",
        "JwtIssuer": "https://id.example.com",
        "OAuthScopes": "mcp",
    },
    "streaming-oauth-cognito": {
        "FrontDoor": "STREAMING",
        "AuthMode": "OAUTH",
        "CreateUserPool": "true",
    },
    "streaming-iam": {"FrontDoor": "STREAMING", "AuthMode": "IAM", "ApiConcurrency": "0"},
}


class StubPolicyLoader:
    """What `sam deploy` asks IAM for (managed policy name -> ARN), answered offline."""

    def __init__(self) -> None:
        self.calls = 0

    def load(self) -> dict[str, str]:
        self.calls += 1
        return {}


def packaged(template: dict[str, Any]) -> dict[str, Any]:
    """The template as `sam package` leaves it: code and definitions in S3."""
    result = copy.deepcopy(template)
    function_globals = result.get("Globals", {}).get("Function", {})
    if "CodeUri" in function_globals:
        function_globals["CodeUri"] = "s3://artifacts/code.zip"
    for spec in result["Resources"].values():
        properties = spec.get("Properties", {})
        if spec["Type"] == "AWS::Serverless::Function" and "CodeUri" in properties:
            properties["CodeUri"] = "s3://artifacts/code.zip"
        if spec["Type"] == "AWS::Serverless::StateMachine" and isinstance(
            properties.get("DefinitionUri"), str
        ):
            properties["DefinitionUri"] = {"Bucket": "artifacts", "Key": "definition.asl.json"}
    return result


def transform(template: dict[str, Any], parameters: dict[str, Any]) -> dict[str, Any]:
    from samtranslator.parser.parser import Parser
    from samtranslator.translator.translator import Translator

    loader = StubPolicyLoader()
    # The translator reads only `region_name` from its boto3 session.
    session: Any = SimpleNamespace(region_name=REGION)
    translator = Translator(None, Parser(), boto_session=session)
    transformed = translator.translate(
        packaged(template),
        parameter_values=dict(parameters),
        get_managed_policy_map=loader.load,
    )
    # A round trip through JSON: plain data, as CloudFormation receives it.
    result: dict[str, Any] = json.loads(json.dumps(transformed))
    return result


def parameter_values(template: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    """Every parameter's value as CloudFormation sees it (defaults filled, lists split)."""
    values: dict[str, Any] = {}
    for name, spec in template.get("Parameters", {}).items():
        value = given.get(name, spec.get("Default", ""))
        if spec["Type"] == "CommaDelimitedList":
            value = [part.strip() for part in str(value).split(",")]
        else:
            value = str(value)  # CloudFormation hands every scalar parameter over as a string
        values[name] = value
    return values


def evaluate(expression: Any, values: dict[str, Any], conditions: dict[str, Any]) -> Any:
    """Evaluates a condition or rule expression (Equals, Not, And, Or, Contains, Join, Ref)."""
    if not isinstance(expression, dict):
        return expression
    ((key, arg),) = expression.items()

    def ev(value: Any) -> Any:
        return evaluate(value, values, conditions)

    if key == "Ref":
        return values[arg]
    if key == "Condition":
        return ev(conditions[arg])
    if key == "Fn::Equals":
        return ev(arg[0]) == ev(arg[1])
    if key == "Fn::Not":
        return not ev(arg[0])
    if key == "Fn::And":
        return all(ev(a) for a in arg)
    if key == "Fn::Or":
        return any(ev(a) for a in arg)
    if key == "Fn::Contains":
        return ev(arg[1]) in ev(arg[0])
    if key == "Fn::Join":
        items = ev(arg[1])
        return str(arg[0]).join(str(ev(item)) for item in items)
    raise AssertionError(f"cannot evaluate {key} here")


@dataclass
class Stack:
    """One deployable shape: the transformed template and the values it is deployed with."""

    name: str
    template: dict[str, Any]
    values: dict[str, Any]
    conditions: dict[str, bool]

    def active(self, logical_id: str) -> bool:
        condition = self.template["Resources"][logical_id].get("Condition")
        return condition is None or self.conditions[condition]

    def resources(self, type_name: str | None = None) -> dict[str, dict[str, Any]]:
        """The resources CloudFormation creates for these values (conditions applied)."""
        return {
            logical: spec
            for logical, spec in self.template["Resources"].items()
            if self.active(logical) and (type_name is None or spec["Type"] == type_name)
        }

    def choose(self, value: Any) -> Any:
        """`value` with every Fn::If decided (AWS::NoValue drops the key or item)."""
        if isinstance(value, list):
            chosen = [self.choose(v) for v in value]
            return [v for v in chosen if v is not _NO_VALUE]
        if not isinstance(value, dict):
            return value
        if list(value) == ["Fn::If"]:
            condition, when_true, when_false = value["Fn::If"]
            return self.choose(when_true if self.conditions[condition] else when_false)
        if value == {"Ref": "AWS::NoValue"}:
            return _NO_VALUE
        chosen_items = {k: self.choose(v) for k, v in value.items()}
        return {k: v for k, v in chosen_items.items() if v is not _NO_VALUE}


_NO_VALUE = object()


def build_stack(template: dict[str, Any], name: str, given: dict[str, Any]) -> Stack:
    """The stack `template` becomes when deployed with the parameters `given`."""
    output = transform(template, given)
    values = parameter_values(template, given)
    conditions: dict[str, Any] = dict(output.get("Conditions", {}))
    decided = {c: bool(evaluate(expr, values, conditions)) for c, expr in conditions.items()}
    return Stack(name, output, values, decided)


@pytest.fixture(scope="session")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE)


@pytest.fixture(scope="session")
def transformed(template: dict[str, Any]) -> Callable[[str], Stack]:
    """`transformed(name)`: the stack for PARAMETER_SETS[name], transformed once."""
    cache: dict[str, Stack] = {}

    def get(name: str) -> Stack:
        if name not in cache:
            cache[name] = build_stack(template, name, PARAMETER_SETS[name])
        return cache[name]

    return get


@pytest.fixture(params=sorted(PARAMETER_SETS))
def stack(request: pytest.FixtureRequest, transformed: Callable[[str], Stack]) -> Stack:
    """Each parameter set's stack in turn."""
    result: Stack = transformed(request.param)
    return result


@pytest.fixture
def default_stack(transformed: Callable[[str], Stack]) -> Stack:
    """The stack with the template's defaults (AuthMode NONE)."""
    return transformed("none")


# ==============================================================================================
# The template and its transform
# ==============================================================================================

ACCOUNT = "123456789012"
STACK_NAME = "stk"
STACK_UUID = "51af3dc0-da77-11e4-872e-1234567db123"
STACK_ID = f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/{STACK_NAME}/{STACK_UUID}"
DAY_MS = 24 * 3600 * 1000
LOST_STATUSES = {"FAILED", "TIMED_OUT", "ABORTED"}

COMMON_RESOURCES = {
    # API, worker, reconciler, ask (workflows' questions), sweeper, durable (durable tools)
    "AWS::Lambda::Function": 6,
    # AutoPublishAlias: the API's, the worker's and the durable function's published version
    # and `live` alias
    "AWS::Lambda::Version": 3,
    "AWS::Lambda::Alias": 3,
    # each aliased function's parameter-made configuration, whose number its version names
    "AWS::AppConfig::Application": 1,
    "AWS::AppConfig::ConfigurationProfile": 3,
    "AWS::AppConfig::HostedConfigurationVersion": 3,
    "AWS::IAM::Role": 7,
    # + EventBridge invoking the reconciler for durable executions' ends
    "AWS::Lambda::Permission": 4,
    "AWS::StepFunctions::StateMachine": 1,
    "AWS::Logs::LogGroup": 8,  # the state machine's, the six functions', API access logs
    "AWS::DynamoDB::Table": 1,
    "AWS::S3::Bucket": 1,
    "AWS::ApiGatewayV2::Api": 1,
    "AWS::ApiGatewayV2::Stage": 1,
    "AWS::ApiGatewayV2::Integration": 1,
    "AWS::ApiGatewayV2::Route": 1,
    # in every AuthMode, so that no switch deletes it (test_auth_mode_switch.py)
    "AWS::ApiGatewayV2::Authorizer": 1,
    # lost executions; the sweeper's schedule; durable executions' ends (DurableEndsRule)
    "AWS::Events::Rule": 3,
    # API 5xx, failed executions, function errors, throttles, reconcile dead letters, sweeps
    "AWS::CloudWatch::Alarm": 6,
    # the reconciler's retries and dead-letter queue; the worker's direct legs; the sweeper's
    "AWS::Lambda::EventInvokeConfig": 3,
    "AWS::SQS::Queue": 1,
    "AWS::SQS::QueuePolicy": 1,
}


STREAMING_RESOURCES = {
    "AWS::ApiGateway::RestApi": 1,
    "AWS::ApiGateway::Resource": 1,  # /mcp
    "AWS::ApiGateway::Method": 2,  # ANY (streamed), OPTIONS (a mock: preflight)
    "AWS::ApiGateway::Deployment": 1,  # one per shape of the methods: test_door_switch.py
    "AWS::ApiGateway::Stage": 1,
}
"""What the STREAMING front door has instead of the HTTP API's five resources."""


def resolver() -> Resolver:
    """Resolves Ref/GetAtt/Sub to the names CloudFormation would give in stack `stk`."""
    refs = {
        "AWS::Partition": "aws",
        "AWS::Region": "us-east-1",
        "AWS::AccountId": ACCOUNT,
        "AWS::StackName": STACK_NAME,
        "AWS::StackId": STACK_ID,
        "AWS::URLSuffix": "amazonaws.com",
        "TaskTable": "stk-table",
        "ResultBucket": "stk-bucket",
        "HttpApi": "api123",
        "RestApi": "rest123",
        "WorkerFunction": "stk-worker",
    }

    def attribute(logical: str, name: str) -> str:
        arns = {
            ("TaskTable", "Arn"): f"arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/stk-table",
            ("ResultBucket", "Arn"): "arn:aws:s3:::stk-bucket",
            ("WorkerFunction", "Arn"): f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:stk-worker",
            ("ReconcileFunction", "Arn"): f"arn:aws:lambda:us-east-1:{ACCOUNT}:function:stk-rec",
        }
        return arns[(logical, name)]

    return Resolver(refs, attribute)


def machine_arn(template: dict[str, Any]) -> str:
    """The state machine's ARN in stack `stk`, from its Name as the template sets it."""
    name = resolver().resolve(template["Resources"]["TaskStateMachine"]["Properties"]["Name"])
    return f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:{name}"


# -- the transform ----------------------------------------------------------------------------


def test_transform_creates_the_expected_resources(stack: Stack) -> None:
    created = Counter(spec["Type"] for spec in stack.resources().values())
    expected = Counter(COMMON_RESOURCES)
    if stack.values["FrontDoor"] == "STREAMING":  # a REST API instead of the HTTP API
        for kind in ("Api", "Stage", "Integration", "Route", "Authorizer"):
            del expected[f"AWS::ApiGatewayV2::{kind}"]
        expected.update(STREAMING_RESOURCES)
        if stack.values["AuthMode"] in ("OAUTH", "JWT"):  # the function's gate: metadata
            expected["AWS::ApiGateway::Resource"] += 2
            expected["AWS::ApiGateway::Method"] += 1
            expected["AWS::Lambda::Permission"] += 1
    elif stack.values["AuthMode"] == "OAUTH":  # the two metadata routes and their permission
        expected["AWS::ApiGatewayV2::Route"] += 2
        expected["AWS::Lambda::Permission"] += 1
    if stack.values["CreateUserPool"] == "true":
        for kind in ("UserPool", "UserPoolResourceServer", "UserPoolClient", "UserPoolDomain"):
            expected[f"AWS::Cognito::{kind}"] = 1
        expected["AWS::Cognito::ManagedLoginBranding"] = 1
    if stack.values["StateSecretArn"] == "":
        expected["AWS::SecretsManager::Secret"] = 1
    assert created == expected
    assert not [t for t in created if t.startswith("AWS::Serverless::")]


def test_route_authorization_follows_auth_mode(stack: Stack) -> None:
    if stack.values["FrontDoor"] == "STREAMING":
        method = stack.choose(stack.resources()["McpMethod"]["Properties"])
        # IAM is API Gateway's; JWT and OAUTH are the function's gate; NONE is open.
        kinds = {"NONE": "NONE", "JWT": "NONE", "IAM": "AWS_IAM", "OAUTH": "NONE"}
        assert method["AuthorizationType"] == kinds[stack.values["AuthMode"]]
        return
    route = stack.choose(stack.resources()["McpRoute"]["Properties"])
    mode = stack.values["AuthMode"]
    assert route["RouteKey"] == "ANY /mcp"
    kinds = {"NONE": "NONE", "JWT": "JWT", "IAM": "AWS_IAM", "OAUTH": "NONE"}
    assert route["AuthorizationType"] == kinds[mode]
    authorizer = stack.choose(stack.resources()["JwtAuthorizer"]["Properties"])
    assert authorizer["AuthorizerType"] == "JWT"
    assert authorizer["IdentitySource"] == ["$request.header.Authorization"]
    if mode == "JWT":
        assert route["AuthorizerId"] == {"Ref": "JwtAuthorizer"}
        assert authorizer["JwtConfiguration"] == {
            "Issuer": {"Ref": "JwtIssuer"},
            "Audience": {"Ref": "JwtAudience"},
        }
    else:
        # Kept, used by no route, trusting no issuer: a path of this API that serves no keys
        assert "AuthorizerId" not in route
        issuer = resolver().resolve(authorizer["JwtConfiguration"]["Issuer"])
        assert issuer == "https://api123.execute-api.us-east-1.amazonaws.com/unused-jwt-authorizer"
        assert authorizer["JwtConfiguration"]["Audience"] == ["unused-jwt-authorizer"]


def _references(value: Any) -> set[str]:
    """Logical ids and parameters a (condition-free) value refers to."""
    found: set[str] = set()
    if isinstance(value, list):
        for item in value:
            found |= _references(item)
    elif isinstance(value, dict):
        if list(value) == ["Ref"]:
            found.add(value["Ref"])
        elif list(value) == ["Fn::GetAtt"]:
            target = value["Fn::GetAtt"]
            found.add(target[0] if isinstance(target, list) else target.split(".")[0])
        elif list(value) == ["Fn::Sub"]:
            text, local = (
                (value["Fn::Sub"], {}) if isinstance(value["Fn::Sub"], str) else value["Fn::Sub"]
            )
            for name in re.findall(r"\$\{([^}!]+)\}", text):
                if name not in local:
                    found.add(name.split(".")[0])
            found |= _references(list(local.values()))
        else:
            for item in value.values():
                found |= _references(item)
    return found


def test_every_reference_exists_once_conditions_apply(stack: Stack) -> None:
    """An unconditional resource that refers to one whose condition is false fails to deploy."""
    known = set(stack.values) | set(stack.resources())
    dangling: dict[str, set[str]] = {}
    for logical, spec in stack.resources().items():
        refs = _references(stack.choose(spec.get("Properties", {})))
        depends = spec.get("DependsOn", [])
        refs |= {depends} if isinstance(depends, str) else set(depends)
        missing = {r for r in refs if r not in known and not r.startswith("AWS::")}
        if missing:
            dangling[logical] = missing
    for name, output in stack.template.get("Outputs", {}).items():
        if output.get("Condition") and not stack.conditions[output["Condition"]]:
            continue
        missing = {
            r
            for r in _references(stack.choose(output["Value"]))
            if r not in known and not r.startswith("AWS::")
        }
        if missing:
            dangling[f"Outputs.{name}"] = missing
    assert dangling == {}


def rules_failing(template: dict[str, Any], given: dict[str, Any]) -> list[str]:
    """The template Rules assertions that these parameter values break."""
    values = parameter_values(template, given)
    failing = []
    for name, rule in template.get("Rules", {}).items():
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"], values, {}):
            continue
        failing += [
            f"{name}: {a.get('AssertDescription')}"
            for a in rule["Assertions"]
            if not evaluate(a["Assert"], values, {})
        ]
    return failing


@pytest.mark.parametrize("name", sorted(PARAMETER_SETS))
def test_rules_accept_every_parameter_set(template: dict[str, Any], name: str) -> None:
    assert rules_failing(template, PARAMETER_SETS[name]) == []


@pytest.mark.parametrize(
    "given",
    [
        {"AuthMode": "JWT", "JwtAudience": "client"},
        {"AuthMode": "JWT", "JwtIssuer": "https://issuer.example"},
        {"AuthMode": "JWT", "JwtIssuer": "https://issuer.example", "JwtAudience": "a,,b"},
    ],
)
def test_rules_refuse_a_jwt_stack_without_issuer_or_audience(
    template: dict[str, Any], given: dict[str, Any]
) -> None:
    assert rules_failing(template, given)


@pytest.mark.parametrize(
    "given",
    [
        {"AuthMode": "OAUTH"},
        {"AuthMode": "OAUTH", "CreateUserPool": "true", "JwtIssuer": "https://id.example"},
        {"AuthMode": "JWT", "CreateUserPool": "true", "JwtIssuer": "https://i", "JwtAudience": "a"},
        {"AuthMode": "NONE", "CreateUserPool": "true"},
    ],
    ids=["oauth-without-server", "issuer-and-pool", "pool-with-jwt", "pool-with-none"],
)
def test_rules_refuse_an_oauth_stack_without_one_authorization_server(
    template: dict[str, Any], given: dict[str, Any]
) -> None:
    assert rules_failing(template, given)


OAUTH_ENVIRONMENT = (
    "MCP_TASKS_AUTH_MODE",
    "MCP_TASKS_RESOURCE_URL",
    "MCP_TASKS_OAUTH_ISSUER",
    "MCP_TASKS_OAUTH_JWKS_URI",
    "MCP_TASKS_OAUTH_AUDIENCE",
    "MCP_TASKS_OAUTH_SCOPES",
    "MCP_TASKS_OAUTH_METADATA_URL",
)


def test_the_api_function_gets_the_oauth_settings_it_reads(stack: Stack) -> None:
    from mcp_tasks_aws.edge.gate import AuthSettings

    function = stack.choose(stack.resources()["ApiFunction"]["Properties"])
    variables = function["Environment"]["Variables"]
    assert set(OAUTH_ENVIRONMENT) <= set(variables)
    names = {**resolver().refs, "UserPool": "us-east-1_pool", "UserPoolClient": "client123"}
    names |= {name: value for name, value in stack.values.items() if isinstance(value, str)}
    names |= {name: value for name, value in stack.values.items() if isinstance(value, list)}
    resolve = Resolver(names, resolver().attributes).resolve
    env = {name: resolve(variables[name]) for name in OAUTH_ENVIRONMENT}
    # Join of a list parameter: done by hand here (the resolver knows no Fn::Join).
    for name, value in env.items():
        if isinstance(value, dict) and "Fn::Join" in value:
            separator, parts = value["Fn::Join"]
            env[name] = separator.join(parts)
    settings = AuthSettings.from_env(env)  # the function starts with these, or raises
    streaming = stack.values["FrontDoor"] == "STREAMING"
    if streaming and stack.values["AuthMode"] == "JWT":  # the function's gate, as OAUTH
        assert settings.mode == "oauth"
        assert set(settings.audiences) == set(stack.values["JwtAudience"])
    else:
        assert settings.mode == stack.values["AuthMode"].lower()
    if settings.mode == "oauth":
        endpoint = resolver().resolve(
            stack.choose(stack.template["Outputs"]["McpEndpoint"]["Value"])
        )
        assert settings.resource == endpoint  # the audience is the URL clients use
        if stack.values["AuthMode"] == "OAUTH":  # JWT keeps JwtAudience, as the HTTP API's
            assert endpoint in settings.audiences
        assert settings.issuer
        if streaming:  # a REST API serves under its stage: so does the metadata it names
            metadata = "https://rest123.execute-api.us-east-1.amazonaws.com/api/.well-known/"
            assert settings.metadata_url.startswith(metadata)
            served = settings.metadata_url.removeprefix(
                "https://rest123.execute-api.us-east-1.amazonaws.com/api"
            )
            assert served in settings.metadata_paths
    if stack.values["CreateUserPool"] == "true":
        pool_issuer = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_pool"
        assert settings.issuer == pool_issuer
        assert settings.jwks_uri == f"{pool_issuer}/.well-known/jwks.json"
        assert "client123" in settings.audiences
        # So the client id admits no ID token: the issuer is one whose token_use is required.
        from mcp_tasks_aws.edge.tokens import is_cognito_issuer

        assert is_cognito_issuer(settings.issuer)


def test_oauth_routes_serve_the_metadata_without_authorization(transformed: Any) -> None:
    stack = transformed("oauth")
    resources = stack.resources()
    keys = {
        resources[name]["Properties"]["RouteKey"]: stack.choose(resources[name]["Properties"])
        for name in ("ResourceMetadataRoute", "ResourceMetadataPathRoute")
    }
    from mcp_tasks_aws.edge.gate import AuthSettings

    paths = AuthSettings(mode="oauth", resource="https://x/mcp", issuer="i").metadata_paths
    assert {key.split(" ")[1] for key in keys} == paths
    for route in keys.values():
        assert route["AuthorizationType"] == "NONE"
        assert route["Target"] == {"Fn::Sub": "integrations/${McpIntegration}"}
    permission = resources["ResourceMetadataInvokePermission"]["Properties"]
    source = resolver().resolve(permission["SourceArn"])
    assert source == f"arn:aws:execute-api:us-east-1:{ACCOUNT}:api123/*/GET/.well-known/*"


def test_the_cognito_option_creates_a_public_code_flow_client(transformed: Any) -> None:
    stack = transformed("oauth-cognito")
    resources = stack.resources()
    client = resources["UserPoolClient"]["Properties"]
    assert client["GenerateSecret"] is False
    assert client["AllowedOAuthFlows"] == ["code"]
    assert client["CallbackURLs"] == {"Ref": "UserPoolCallbackUrls"}
    defaults = stack.values["UserPoolCallbackUrls"]
    from mcp_tasks_aws.client.cli.sign_in import CALLBACK_PORT

    assert f"http://localhost:{CALLBACK_PORT}/callback" in defaults
    server = resources["UserPoolResourceServer"]["Properties"]
    endpoint = resolver().resolve(stack.template["Outputs"]["McpEndpoint"]["Value"])
    assert resolver().resolve(server["Identifier"]) == endpoint
    outputs = {
        name
        for name, output in stack.template["Outputs"].items()
        if output.get("Condition") in (None, "UseOAuth", "CreateCognito")
    }
    assert {"UserPoolId", "UserPoolClientId", "SignInDomain", "AuthorizationServer"} <= outputs


def test_cfn_lint_is_clean() -> None:
    from cfnlint.api import ManualArgs, lint_file

    matches = lint_file(TEMPLATE, config=ManualArgs(regions=["us-east-1"]))
    assert [str(m) for m in matches] == []


# -- the edge ---------------------------------------------------------------------------------


def test_http_api_invokes_the_api_function_with_payload_2(default_stack: Stack) -> None:
    resources = default_stack.resources()
    assert resources["HttpApi"]["Properties"]["ProtocolType"] == "HTTP"
    stage = resources["HttpApiStage"]["Properties"]
    assert (stage["StageName"], stage["AutoDeploy"]) == ("$default", True)
    integration = resources["McpIntegration"]["Properties"]
    assert integration["IntegrationType"] == "AWS_PROXY"
    assert integration["PayloadFormatVersion"] == "2.0"
    assert integration["IntegrationUri"] == {"Ref": "ApiFunctionAliaslive"}  # the `live` alias
    assert resources["McpRoute"]["Properties"]["Target"] == {
        "Fn::Sub": "integrations/${McpIntegration}"
    }
    permission = resources["ApiInvokePermission"]["Properties"]
    assert permission["FunctionName"] == {"Ref": "ApiFunctionAliaslive"}
    assert permission["Principal"] == "apigateway.amazonaws.com"
    source = resolver().resolve(permission["SourceArn"])
    assert source == f"arn:aws:execute-api:us-east-1:{ACCOUNT}:api123/*/*/mcp"


def test_functions_run_python312_on_arm64_with_existing_handlers(default_stack: Stack) -> None:
    functions = default_stack.resources("AWS::Lambda::Function")
    for logical, spec in functions.items():
        properties = default_stack.choose(spec["Properties"])
        # The durable SDK needs python3.13 or newer; every other function runs 3.12.
        runtime = "python3.13" if logical == "DurableFunction" else "python3.12"
        assert properties["Runtime"] == runtime, logical
        assert properties["Architectures"] == ["arm64"], logical
        module, function = properties["Handler"].rsplit(".", 1)
        source = ROOT / Path(*module.split(".")).with_suffix(".py")
        tree = ast.parse(source.read_text())
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        # `__getattr__ = handler_from_env(make_handler, ...)` serves `handler` (see app.py)
        if any(
            isinstance(n, ast.Assign)
            and [getattr(t, "id", None) for t in n.targets] == ["__getattr__"]
            and isinstance(n.value, ast.Call)
            and getattr(n.value.func, "id", None) == "handler_from_env"
            for n in tree.body
        ):
            names.add("handler")
        assert function in names, f"{logical}: {properties['Handler']} not defined in {source}"
    # API Gateway gives an integration at most 30 s: the API function must answer before.
    assert default_stack.choose(functions["ApiFunction"]["Properties"])["Timeout"] < 30


# -- state ------------------------------------------------------------------------------------


def test_task_table_has_ttl_pitr_and_encryption(default_stack: Stack) -> None:
    table = default_stack.resources()["TaskTable"]["Properties"]
    assert table["TimeToLiveSpecification"] == {"AttributeName": "expiresAt", "Enabled": True}
    assert table["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"] is True
    assert table["SSESpecification"]["SSEEnabled"] is True
    assert table["KeySchema"] == [{"AttributeName": "taskId", "KeyType": "HASH"}]
    assert table["BillingMode"] == "PAY_PER_REQUEST"


def test_result_bucket_is_private_encrypted_and_expires_after_tasks(
    default_stack: Stack, template: dict[str, Any]
) -> None:
    bucket = default_stack.resources()["ResultBucket"]["Properties"]
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    encryption = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption[0]["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert bucket["OwnershipControls"]["Rules"] == [{"ObjectOwnership": "BucketOwnerEnforced"}]

    # One rule per retention folder the store writes to (aws/s3.py), each expiring after the
    # folder's days, and none shorter than a task kept the longest the server allows.
    prefix = inspect.signature(S3ResultStore).parameters["prefix"].default
    rules = {
        rule.get("Prefix", rule.get("Filter", {}).get("Prefix")): rule
        for rule in bucket["LifecycleConfiguration"]["Rules"]
    }
    assert set(rules) == {f"{prefix}{days}d/" for days in RETENTION_DAYS}
    for days in RETENTION_DAYS:
        rule = rules[f"{prefix}{days}d/"]
        assert (rule["Status"], rule["ExpirationInDays"]) == ("Enabled", days)
    ttl = template["Parameters"]["DefaultTaskTtlMs"]
    longest_days = math.ceil(
        max(ttl["Default"], ttl["MaxValue"], Settings().max_ttl_ms or 0) / DAY_MS
    )
    assert max(RETENTION_DAYS) >= longest_days


# -- the state machine and its reconciler -----------------------------------------------------


def test_state_machine_logs_and_traces(default_stack: Stack) -> None:
    resources = default_stack.resources()
    machine = resources["TaskStateMachine"]["Properties"]
    assert machine["StateMachineType"] == "STANDARD"
    logging = machine["LoggingConfiguration"]
    assert logging["Level"] in {"ALL", "ERROR", "FATAL"}
    (destination,) = logging["Destinations"]
    group = destination["CloudWatchLogsLogGroup"]["LogGroupArn"]["Fn::GetAtt"][0]
    assert resources[group]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert machine["TracingConfiguration"] == {"Enabled": True}


def test_lost_execution_rule_matches_this_state_machine(
    default_stack: Stack, template: dict[str, Any]
) -> None:
    (rule,) = [
        spec
        for spec in default_stack.resources("AWS::Events::Rule").values()
        if spec["Properties"].get("EventPattern", {}).get("source") == ["aws.states"]
    ]
    pattern = rule["Properties"]["EventPattern"]
    assert pattern["detail-type"] == ["Step Functions Execution Status Change"]
    assert set(pattern["detail"]["status"]) == LOST_STATUSES
    assert resolver().resolve(pattern["detail"]["stateMachineArn"]) == [machine_arn(template)]
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["ReconcileFunction", "Arn"]}
    # The reconcile handler acts on exactly these statuses.
    tree = ast.parse((ROOT / "handlers" / "reconcile.py").read_text())
    lost = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "LOST" for t in node.targets)
    )
    assert isinstance(lost, ast.Call)
    assert ast.literal_eval(lost.args[0]) == LOST_STATUSES


def test_durable_ends_reach_the_reconciler(default_stack: Stack) -> None:
    """A durable execution that ends without its task (failed, timed out, stopped) is heard by
    the reconciler, whose handler reads that event (`handlers/reconcile.py`, DURABLE_END)."""
    rules = [
        spec
        for spec in default_stack.resources("AWS::Events::Rule").values()
        if spec["Properties"].get("EventPattern", {}).get("source") == ["aws.lambda"]
    ]
    (rule,) = rules
    pattern = rule["Properties"]["EventPattern"]
    source = (ROOT / "handlers" / "reconcile.py").read_text()
    (detail_type,) = pattern["detail-type"]
    assert f'DURABLE_END = "{detail_type}"' in source
    assert set(pattern["detail"]["status"]) == {"FAILED", "TIMED_OUT", "STOPPED"}
    (target,) = rule["Properties"]["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["ReconcileFunction", "Arn"]}
    assert target["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["ReconcileDeadLetters", "Arn"]}}
    durable = default_stack.resources()["DurableFunction"]["Properties"]
    assert durable["Runtime"] == "python3.13"
    assert durable["DurableConfig"]["ExecutionTimeout"] * 1000 >= Settings.from_env({}).max_ttl_ms


def test_every_state_machine_arn_names_the_same_machine(template: dict[str, Any]) -> None:
    """The ARN is built from the name in several places (a GetAtt would be circular)."""
    expected = machine_arn(template)
    resolve = resolver().resolve
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert resolve(variables["MCP_TASKS_STATE_MACHINE_ARN"]) == expected
    statements = template["Resources"]["ApiFunction"]["Properties"]["Policies"][0]["Statement"]
    by_sid = {
        s["Sid"]: resolve(s["Resource"])
        for s in statements
        if "Sid" in s and s["Sid"].endswith("Tasks")
    }
    assert by_sid["StartTasks"] == expected
    assert by_sid["StopTasks"] == expected.replace(":stateMachine:", ":execution:") + ":*"
    worker = template["Resources"]["WorkerFunction"]["Properties"]["Policies"][0]["Statement"]
    by_sid = {s["Sid"]: resolve(s["Resource"]) for s in worker if "Sid" in s}
    assert by_sid["HandOverToExecution"] == expected


def test_direct_legs_are_never_retried_and_their_failures_reach_the_reconciler(
    default_stack: Stack, template: dict[str, Any]
) -> None:
    (properties,) = [
        config["Properties"]
        for config in default_stack.resources("AWS::Lambda::EventInvokeConfig").values()
        if config["Properties"]["FunctionName"] == {"Ref": "WorkerFunction"}
    ]
    assert properties["FunctionName"] == {"Ref": "WorkerFunction"}
    assert properties["Qualifier"] == "live"  # the alias the API invokes
    assert properties["MaximumRetryAttempts"] == 0  # a tool must not run twice
    assert 60 <= properties["MaximumEventAgeInSeconds"] <= 21600
    assert properties["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": ["ReconcileFunction", "Arn"]}}
    }
    # The API function queues first legs with exactly that worker
    api = template["Resources"]["ApiFunction"]["Properties"]
    worker = api["Environment"]["Variables"]["MCP_TASKS_WORKER_FUNCTION"]
    assert worker == {"Ref": "WorkerFunction.Alias"}
    # And the reconcile handler reads the destination record
    assert "lost_direct_leg" in (ROOT / "handlers" / "reconcile.py").read_text()


def test_the_sweeper_runs_on_schedule_reads_only_its_sparse_index_and_is_alarmed(
    stack: Stack, template: dict[str, Any]
) -> None:
    resources = stack.resources()
    table = resources["TaskTable"]["Properties"]
    (index,) = [i for i in table["GlobalSecondaryIndexes"] if i["IndexName"] == "UnstartedIndex"]
    # Keyed by the attribute only unstarted tasks carry (aws/dynamodb_items.py), keys only.
    assert index["KeySchema"] == [
        {"AttributeName": "unstartedShard", "KeyType": "HASH"},
        {"AttributeName": "lastUpdatedAt", "KeyType": "RANGE"},
    ]
    assert index["Projection"] == {"ProjectionType": "KEYS_ONLY"}
    from mcp_tasks_aws.aws.dynamodb import UNSTARTED_INDEX
    from mcp_tasks_aws.aws.dynamodb_items import UNSTARTED_SHARD

    assert (UNSTARTED_INDEX, UNSTARTED_SHARD) == ("UnstartedIndex", "unstartedShard")
    # On the schedule the parameter gives, never retried (the next sweep is), failures parked.
    (rule,) = [
        spec["Properties"]
        for spec in stack.resources("AWS::Events::Rule").values()
        if "ScheduleExpression" in spec["Properties"]
    ]
    assert rule["ScheduleExpression"] == {"Ref": "SweepSchedule"}
    assert rule["Targets"][0]["Arn"] == {"Fn::GetAtt": ["SweepFunction", "Arn"]}
    (config,) = [
        c["Properties"]
        for c in stack.resources("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": "SweepFunction"}
    ]
    assert config["MaximumRetryAttempts"] == 0
    assert config["DestinationConfig"] == {
        "OnFailure": {"Destination": {"Fn::GetAtt": ["ReconcileDeadLetters", "Arn"]}}
    }
    # Its bound reaches the code, and stays above the longest leg.
    function = resources["SweepFunction"]["Properties"]
    variables = function["Environment"]["Variables"]
    assert variables["MCP_TASKS_STRANDED_AFTER_S"] == {"Ref": "StrandedAfterSeconds"}
    bound = template["Parameters"]["StrandedAfterSeconds"]
    assert bound["MinValue"] > template["Parameters"]["WorkerTimeoutSeconds"]["MaxValue"]
    # Its errors are alarmed.
    alarm = stack.choose(resources["SweepErrorsAlarm"]["Properties"])
    assert alarm["MetricName"] == "Errors"
    assert alarm["Dimensions"] == [{"Name": "FunctionName", "Value": {"Ref": "SweepFunction"}}]
    topic = stack.values["AlarmTopicArn"]
    assert alarm.get("AlarmActions", []) == ([{"Ref": "AlarmTopicArn"}] if topic else [])


def test_alarms_watch_the_api_and_the_executions(stack: Stack) -> None:
    alarms = {k: stack.choose(v["Properties"]) for k, v in stack.resources().items()}
    executions = alarms["FailedExecutionsAlarm"]
    if stack.values["FrontDoor"] == "STREAMING":
        api = alarms["RestApi5xxAlarm"]
        assert api["MetricName"] == "5XXError"
        name = stack.choose(stack.resources()["RestApi"]["Properties"])["Name"]
        assert api["Dimensions"] == [{"Name": "ApiName", "Value": name}]
    else:
        api = alarms["Api5xxAlarm"]
        assert api["Dimensions"] == [{"Name": "ApiId", "Value": {"Ref": "HttpApi"}}]
    for query in executions["Metrics"]:
        if "MetricStat" in query:
            assert query["MetricStat"]["Metric"]["Dimensions"] == [
                {"Name": "StateMachineArn", "Value": {"Ref": "TaskStateMachine"}}
            ]
    topic = stack.values["AlarmTopicArn"]
    for alarm in (api, executions):
        assert alarm.get("AlarmActions", []) == ([{"Ref": "AlarmTopicArn"}] if topic else [])


def test_outputs_give_endpoint_table_and_state_machine(default_stack: Stack) -> None:
    outputs = default_stack.template["Outputs"]
    endpoint = resolver().resolve(outputs["McpEndpoint"]["Value"])
    route_path = default_stack.resources()["McpRoute"]["Properties"]["RouteKey"].split(" ")[1]
    assert endpoint == f"https://api123.execute-api.us-east-1.amazonaws.com{route_path}"
    assert outputs["TaskTableName"]["Value"] == {"Ref": "TaskTable"}
    assert outputs["StateMachineName"]["Value"] == {"Fn::GetAtt": ["TaskStateMachine", "Name"]}


# ==============================================================================================
# State machine definitions (infra/*.asl.json)
# ==============================================================================================

INFRA = ROOT / "infra"
PLACEHOLDER = re.compile(r"\$\{([^}]+)\}")
# A `$name` variable reference: `$` followed by a letter or underscore. JSONPath (`$`, `$.x`,
# `$[0]`) and the context object (`$$.Task.Token`) never are.
VARIABLE = re.compile(r"(?<![$\w])\$[A-Za-z_]")
FREE_TEXT = {"Comment", "Cause", "Error"}


def asl_files() -> list[Path]:
    return sorted(INFRA.glob("*.asl.json"))


def machines(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical: spec["Properties"]
        for logical, spec in template["Resources"].items()
        if spec["Type"] == "AWS::Serverless::StateMachine"
    }


def walk(value: Any, key: str = "") -> Iterator[tuple[str, Any]]:
    """Every (key, value) pair of a JSON document, depth first."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield k, v
            yield from walk(v, k)
    elif isinstance(value, list):
        for item in value:
            yield from walk(item, key)


def example_value(value: Any) -> str:
    """A plausible deployed value for a DefinitionSubstitutions entry."""
    if isinstance(value, dict) and list(value) == ["Fn::GetAtt"]:
        target = value["Fn::GetAtt"]
        logical = target[0] if isinstance(target, list) else target.split(".")[0]
        return f"arn:aws:lambda:us-east-1:123456789012:function:stk-{logical}"
    if isinstance(value, dict) and list(value) == ["Ref"]:
        return f"stk-{value['Ref']}"
    return str(value)


def substituted(path: Path, substitutions: dict[str, Any]) -> str:
    text = path.read_text()
    for name, value in substitutions.items():
        text = text.replace("${" + name + "}", example_value(value))
    return text


def test_every_asl_file_is_a_state_machine_definition(template: dict[str, Any]) -> None:
    used = {(ROOT / p["DefinitionUri"]).resolve() for p in machines(template).values()}
    assert asl_files(), "no ASL files in infra/"
    assert {p.resolve() for p in asl_files()} == used


@pytest.mark.parametrize("logical", ["TaskStateMachine"])
def test_substitutions_match_both_ways(template: dict[str, Any], logical: str) -> None:
    machine = machines(template)[logical]
    used = set(PLACEHOLDER.findall((ROOT / machine["DefinitionUri"]).read_text()))
    provided = set(machine.get("DefinitionSubstitutions", {}))
    assert used - provided == set(), "placeholders without a substitution"
    assert provided - used == set(), "substitutions the definition never uses"


def test_definitions_parse_with_motos_asl_parser(template: dict[str, Any]) -> None:
    from moto.stepfunctions.parser.asl.parse.asl_parser import AmazonStateLanguageParser

    for machine in machines(template).values():
        text = substituted(ROOT / machine["DefinitionUri"], machine["DefinitionSubstitutions"])
        assert not PLACEHOLDER.search(text)
        program, _ = AmazonStateLanguageParser.parse(text)
        assert program is not None


def states(document: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every state, nested Parallel branches and Map processors included."""
    for name, state in document.get("States", {}).items():
        yield name, state
        for branch in state.get("Branches", []):
            yield from states(branch)
        for key in ("Iterator", "ItemProcessor"):
            if key in state:
                yield from states(state[key])


@pytest.mark.parametrize("path", asl_files(), ids=lambda p: p.name)
def test_definitions_use_jsonpath_only(path: Path) -> None:
    document = json.loads(path.read_text())
    assert document.get("QueryLanguage", "JSONPath") == "JSONPath"
    for name, state in states(document):
        assert state.get("QueryLanguage", "JSONPath") == "JSONPath", f"{name}: JSONata"
        # JSONata-only fields, and variables (Assign on states, catchers and choice rules).
        holders = [state, *state.get("Catch", []), *state.get("Choices", [])]
        for holder in holders:
            for field in ("Assign", "Arguments", "Output", "Condition"):
                assert field not in holder, f"{path.name}: {name} has {field}"
    for key, value in walk(document):
        if isinstance(value, str) and key not in FREE_TEXT:
            assert not value.startswith("{%"), f"{path.name}: JSONata expression {value!r}"
            assert not VARIABLE.search(PLACEHOLDER.sub("", value)), (
                f"{path.name}: variable reference in {key}: {value!r}"
            )


def function_of(reference: dict[str, Any]) -> str:
    """The function logical id a substitution names: its ARN, or its alias (`X.Alias`)."""
    if "Fn::GetAtt" in reference:
        return str(reference["Fn::GetAtt"][0])
    return str(reference["Ref"]).removesuffix(".Alias")


def test_every_invoked_lambda_is_granted_to_the_state_machine(template: dict[str, Any]) -> None:
    for logical, machine in machines(template).items():
        document = json.loads((ROOT / machine["DefinitionUri"]).read_text())
        invoked = {
            PLACEHOLDER.fullmatch(v["FunctionName"]).group(1)  # type: ignore[union-attr]
            for k, v in walk(document)
            if k == "Parameters" and isinstance(v, dict) and "FunctionName" in v
        }
        targets = {function_of(machine["DefinitionSubstitutions"][name]) for name in invoked}
        granted = {
            policy["LambdaInvokePolicy"]["FunctionName"]["Ref"]
            for policy in machine["Policies"]
            if "LambdaInvokePolicy" in policy
        }
        assert targets, f"{logical} invokes no Lambda function?"
        assert targets <= granted, f"{logical} invokes {targets - granted} without permission"


# ==============================================================================================
# IAM: least privilege
# ==============================================================================================

STAR_RESOURCE: dict[str, tuple[frozenset[str], str]] = {
    "ResumeTasks": (
        frozenset({"states:SendTaskSuccess", "states:SendTaskFailure"}),
        "Task-token APIs have no resource-level permissions: IAM accepts only '*'.",
    ),
    "ReportToExecution": (
        frozenset({"states:SendTaskSuccess", "states:SendTaskHeartbeat"}),
        "Task-token APIs have no resource-level permissions: IAM accepts only '*'.",
    ),
    "ProbeQuestions": (
        frozenset({"states:SendTaskHeartbeat"}),
        "Task-token APIs have no resource-level permissions: IAM accepts only '*'.",
    ),
    "DeliverLogs": (
        frozenset(
            {
                "logs:CreateLogDelivery",
                "logs:GetLogDelivery",
                "logs:UpdateLogDelivery",
                "logs:DeleteLogDelivery",
                "logs:ListLogDeliveries",
                "logs:PutResourcePolicy",
                "logs:DescribeResourcePolicies",
                "logs:DescribeLogGroups",
            }
        ),
        "Step Functions' CloudWatch Logs delivery APIs have no resource-level permissions.",
    ),
}

MANAGED_POLICIES = {
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole": (
        "SAM's default for functions: the function writes its own CloudWatch Logs."
    ),
    "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess": (
        "Tracing (functions with Tracing: Active, the state machine always): X-Ray segment "
        "upload has no resource-level permissions."
    ),
    "arn:aws:iam::aws:policy/service-role/AWSLambdaBasicDurableExecutionRolePolicy": (
        "SAM's default for a function with DurableConfig (the durable function): its logs, and "
        "checkpointing and reading the state of its own durable executions, which the SDK "
        "does on the function's behalf."
    ),
}

EXPECTED_ACTIONS = {
    "ApiFunction": {
        "dynamodb:GetItem",
        "dynamodb:BatchGetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:Query",
        "states:StartExecution",
        "states:StopExecution",
        "states:SendTaskSuccess",
        "states:SendTaskFailure",
        "s3:GetObject",
        "secretsmanager:GetSecretValue",
        "lambda:InvokeFunction",
        # Durable tools' tasks: find, answer and stop the durable function's executions.
        "lambda:ListDurableExecutionsByFunction",
        "lambda:SendDurableExecutionCallbackSuccess",
        "lambda:StopDurableExecution",
    },
    "DurableFunction": {"dynamodb:GetItem", "dynamodb:UpdateItem", "s3:PutObject"},
    "WorkerFunction": {
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "states:StartExecution",
        "states:SendTaskSuccess",
        "states:SendTaskHeartbeat",
        "s3:PutObject",
    },
    "ReconcileFunction": {"dynamodb:UpdateItem"},
    "SweepFunction": {
        "dynamodb:Query",
        "dynamodb:BatchGetItem",
        "dynamodb:UpdateItem",
        "states:DescribeExecution",
        "lambda:ListDurableExecutionsByFunction",
    },
    "AskFunction": {
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "secretsmanager:GetSecretValue",
        "states:SendTaskHeartbeat",
    },
}
# Granted only when a declaration names a Standard machine (managed tools; the conditional
# statements of `tests/infra/test_managed_iam.py`, which checks their resources): the
# reconciler settles a declared workflow's end, reading its task, the output an event left
# out, and writing a large result. The API's workflow calls (start, stop, answer, refuse) are
# ones it makes for its own state machine already, so they add no action, but for the describe
# that tells whether a start that failed to answer landed. (The sweeper's describe of a
# workflow's execution is an action it has for its own machine: its resources are checked in
# test_managed_iam.)
MANAGED_ACTIONS = {
    "ReconcileFunction": {"dynamodb:GetItem", "states:DescribeExecution", "s3:PutObject"},
    # A start that failed to answer is described before the task is failed.
    "ApiFunction": {"states:DescribeExecution"},
}
# Granted for what Lambda does on a function's behalf, not for calls its code makes: each
# function's on-failure destination is sent as the function (the reconciler's dead letters, the
# worker's failed direct legs to the reconciler).
PLATFORM_ACTIONS = {
    "ReconcileFunction": {"sqs:SendMessage"},
    "SweepFunction": {"sqs:SendMessage"},
    "WorkerFunction": {"lambda:InvokeFunction"},
}
STATE_MACHINE_ACTIONS = {"lambda:InvokeFunction"} | STAR_RESOURCE["DeliverLogs"][0]


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def role_statements(role: dict[str, Any]) -> list[dict[str, Any]]:
    statements = []
    for policy in role["Properties"].get("Policies", []):
        statements += as_list(policy["PolicyDocument"]["Statement"])
    return statements


def all_statements(stack: Stack) -> list[tuple[str, dict[str, Any]]]:
    """(owner, statement) for every permission statement the stack creates."""
    found = []
    for logical, spec in stack.resources().items():
        if spec["Type"] == "AWS::IAM::Role":
            found += [(logical, s) for s in role_statements(stack.choose(spec))]
        elif spec["Type"] in {"AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"}:
            document = stack.choose(spec["Properties"]["PolicyDocument"])
            found += [(logical, s) for s in as_list(document["Statement"])]
    return found


def function_roles(stack: Stack) -> dict[str, dict[str, Any]]:
    """Function logical id -> its role resource, conditions applied."""
    roles = {}
    for logical, spec in stack.resources("AWS::Lambda::Function").items():
        role = spec["Properties"]["Role"]["Fn::GetAtt"][0]
        roles[logical] = stack.choose(stack.resources()[role])  # conditional statements decided
    return roles


def granted(role: dict[str, Any]) -> set[str]:
    return {a for s in role_statements(role) for a in as_list(s["Action"])}


# -- no wildcards -----------------------------------------------------------------------------


def test_no_statement_grants_a_wildcard_action(stack: Stack) -> None:
    wild = [
        (owner, s.get("Sid"), action)
        for owner, s in all_statements(stack)
        for action in as_list(s.get("Action", []))
        if "*" in action
    ]
    assert wild == []
    negated = [
        (o, s.get("Sid")) for o, s in all_statements(stack) if {"NotAction", "NotResource"} & set(s)
    ]
    assert negated == []
    assert {s["Effect"] for _, s in all_statements(stack)} == {"Allow"}


def test_star_resources_only_where_allowed(stack: Stack) -> None:
    for owner, statement in all_statements(stack):
        if "*" not in as_list(statement["Resource"]):
            continue
        sid = statement.get("Sid")
        assert sid in STAR_RESOURCE, f"{owner}: statement {sid!r} grants on '*'"
        allowed, _reason = STAR_RESOURCE[sid]
        assert set(as_list(statement["Action"])) <= allowed, f"{owner}: {sid} grants more"


def test_star_resource_allow_list_is_current(default_stack: Stack) -> None:
    sids = {s.get("Sid") for _, s in all_statements(default_stack)}
    assert set(STAR_RESOURCE) <= sids, "allow-listed Sids that no longer exist"


def test_managed_policies_only_from_the_allow_list(stack: Stack) -> None:
    for logical, spec in stack.resources("AWS::IAM::Role").items():
        arns = set(stack.choose(spec["Properties"]).get("ManagedPolicyArns", []))
        assert arns <= set(MANAGED_POLICIES), f"{logical}: {arns - set(MANAGED_POLICIES)}"


def test_tracing_parameter_decides_the_xray_policy(stack: Stack) -> None:
    xray = "arn:aws:iam::aws:policy/AWSXrayWriteOnlyAccess"
    for logical, role in function_roles(stack).items():
        has_xray = xray in role["Properties"].get("ManagedPolicyArns", [])
        assert has_xray == (stack.values["Tracing"] == "Active"), logical


# -- exactly what the code calls --------------------------------------------------------------


def test_each_function_is_granted_exactly_its_calls(stack: Stack) -> None:
    actual = {logical: granted(role) for logical, role in function_roles(stack).items()}
    expected = {f: EXPECTED_ACTIONS[f] | PLATFORM_ACTIONS.get(f, set()) for f in EXPECTED_ACTIONS}
    assert actual == expected


def test_a_function_may_invoke_only_what_it_must(default_stack: Stack) -> None:
    """The API function invokes only the worker; the worker's role reaches only the reconciler
    (Lambda delivers failed direct legs there); the reconciler invokes nothing."""
    invoked: dict[str, list[Any]] = {}
    for logical, role in function_roles(default_stack).items():
        invoked[logical] = [
            statement["Resource"]
            for statement in role_statements(role)
            if "lambda:InvokeFunction" in as_list(statement["Action"])
        ]
    assert invoked == {
        "ApiFunction": [{"Ref": "WorkerFunctionAliaslive"}, {"Ref": "DurableFunctionAliaslive"}],
        "DurableFunction": [],
        "WorkerFunction": [{"Fn::GetAtt": ["ReconcileFunction", "Arn"]}],
        "ReconcileFunction": [],
        "SweepFunction": [],
        "AskFunction": [],
    }


def test_state_machine_is_granted_exactly_invoke_and_log_delivery(default_stack: Stack) -> None:
    machine = default_stack.resources()["TaskStateMachine"]["Properties"]
    role = default_stack.resources()[machine["RoleArn"]["Fn::GetAtt"][0]]
    assert granted(role) == STATE_MACHINE_ACTIONS


def test_scoped_resources_belong_to_this_stack(default_stack: Stack) -> None:
    """Every non-'*' resource is the stack's table, its results prefix, its machine or worker."""
    account = "123456789012"
    names = {"AWS::Partition": "aws", "AWS::Region": "us-east-1", "AWS::AccountId": account}
    names |= {"AWS::StackName": "stk", "WorkerFunction": "stk-WorkerFunction"}
    functions = f"arn:aws:lambda:us-east-1:{account}:function"
    names |= {"WorkerFunctionAliaslive": f"{functions}:stk-WorkerFunction:live"}
    names |= {"DurableFunctionAliaslive": f"{functions}:stk-DurableFunction:live"}
    names |= {"AWS::StackId": STACK_ID}
    secret = f"arn:aws:secretsmanager:us-east-1:{account}:secret:StateSecret-AbCdEf"
    names |= {"StateSecret": secret}
    functions = f"arn:aws:lambda:us-east-1:{account}:function"
    arns = {
        ("TaskTable", "Arn"): f"arn:aws:dynamodb:us-east-1:{account}:table/stk-TaskTable",
        ("ResultBucket", "Arn"): "arn:aws:s3:::stk-resultbucket",
        ("ReconcileDeadLetters", "Arn"): f"arn:aws:sqs:us-east-1:{account}:stk-dead-letters",
        ("WorkerFunction", "Arn"): f"{functions}:stk-WorkerFunction",
        ("ReconcileFunction", "Arn"): f"{functions}:stk-ReconcileFunction",
        ("DurableFunction", "Arn"): f"{functions}:stk-DurableFunction",
    }
    resolve = Resolver(names, lambda logical, name: arns[(logical, name)]).resolve
    prefix = inspect.signature(S3ResultStore).parameters["prefix"].default
    machine = f"arn:aws:states:us-east-1:{account}:stateMachine:mcp-tasks-{STACK_UUID}"
    allowed = {
        "secretsmanager": [secret],
        "dynamodb": [
            arns[("TaskTable", "Arn")],
            arns[("TaskTable", "Arn")] + "/index/OwnerIndex",
            arns[("TaskTable", "Arn")] + "/index/UnstartedIndex",
        ],
        "s3": [f"arn:aws:s3:::stk-resultbucket/{prefix}*"],
        "states": [machine, machine.replace(":stateMachine:", ":execution:") + ":*"],
        # The state machine's LambdaInvokePolicy covers the worker's versions too (`...*`).
        "lambda": [
            f"{functions}:stk-WorkerFunction:live",
            f"{functions}:stk-WorkerFunction",
            f"{functions}:stk-WorkerFunction*",
            f"{functions}:stk-ReconcileFunction",
            # Durable tools: the durable function's alias (invoked), the function (its
            # executions listed) and its executions of any version (answered, stopped).
            f"{functions}:stk-DurableFunction:live",
            f"{functions}:stk-DurableFunction",
            f"{functions}:stk-DurableFunction:*",
        ],
        "sqs": [arns[("ReconcileDeadLetters", "Arn")]],
    }
    for owner, statement in all_statements(default_stack):
        for resource in as_list(statement["Resource"]):
            if resource == "*":
                continue
            value = resolve(resource)
            for action in as_list(statement["Action"]):
                service = action.split(":")[0]
                assert value in allowed[service], f"{owner}: {action} on {value}"


# -- derived from the source ------------------------------------------------------------------

# Adapter class -> (module, botocore service name of its client).
ADAPTERS = {
    "DynamoTaskStore": ("aws/dynamodb.py", "dynamodb"),
    "DynamoChangeFeed": ("aws/dynamodb.py", "dynamodb"),
    "DynamoLegacySessionStore": ("aws/sessions.py", "dynamodb"),
    "StepFunctionsRunner": ("aws/stepfunctions.py", "stepfunctions"),
    "S3ResultStore": ("aws/s3.py", "s3"),
    "SecretsManagerSecrets": ("aws/secrets.py", "secretsmanager"),
    "LambdaDirectLegs": ("aws/lambda_legs.py", "lambda"),
    "StepFunctionsWorkflows": ("aws/targets.py", "stepfunctions"),
    "LambdaDurableExecutions": ("aws/durable.py", "lambda"),
}
# How the domain code names the adapters (ports): attribute or variable -> adapter class.
PORTS = {
    "store": "DynamoTaskStore",
    "_store": "DynamoTaskStore",
    "feed": "DynamoChangeFeed",
    "_feed": "DynamoChangeFeed",
    "change_feed": "DynamoChangeFeed",
    "runner": "StepFunctionsRunner",
    "results": "S3ResultStore",
    "sessions": "DynamoLegacySessionStore",
    "_source": "SecretsManagerSecrets",
    "direct_legs": "LambdaDirectLegs",
    "workflows": "StepFunctionsWorkflows",
    "flows": "StepFunctionsWorkflows",
    "executions": "LambdaDurableExecutions",
}
# What each function runs: its handler, a name the handler must use to reach the code below
# (so a rewired handler fails here rather than passing silently), and the scopes (module,
# class / function / Class.method) whose port uses -- calls or bound methods handed on as
# callbacks -- are that function's AWS calls.
ENTRY_POINTS = {
    "ApiFunction": (
        "handlers/api.py",
        "app.transport",
        [
            ("tasks/service.py", "TaskService"),
            # What each run does for the use cases: start, resume, release.
            *[
                (f"tasks/runs/{module}.py", f"{run}.{step}")
                for module, run, steps in [
                    ("direct", "DirectRun", ("start", "release")),
                    ("legs", "LegsRun", ("start", "resume", "release")),
                    ("workflow", "WorkflowRun", ("start", "resume", "release")),
                    ("durable", "DurableRun", ("start", "resume", "release")),
                ]
                for step in steps
            ],
            # A declared workflow's start, and its release on cancel.
            ("tasks/workflow.py", "start_execution"),
            ("tasks/workflow.py", "resume"),
            ("tasks/workflow.py", "release"),
            ("app.py", "App.server"),
            ("tasks/watch.py", "Watch"),
            ("server/legacy/endpoint.py", "LegacyEndpoint"),
            ("server/legacy/methods.py", "LegacyMethods"),
            ("server/legacy/questions.py", "InlineQuestions"),
            ("protocol/request_state.py", "RequestStateCodec"),
            ("protocol/request_state.py", "DerivedKeys"),
        ],
    ),
    "WorkerFunction": (
        "handlers/worker.py",
        "leg_runner",
        [
            ("tasks/legs.py", "LegRunner"),
            ("tasks/legs.py", "Reporter"),
            ("app.py", "App.leg_runner"),
        ],
    ),
    "ReconcileFunction": (
        "handlers/reconcile.py",
        "settle_lost",
        [
            ("tasks/runs/legs.py", "LegsRun.settle_lost"),
            ("tasks/runs/direct.py", "DirectRun.settle_lost"),
            # A declared workflow's end: its result is recorded as a leg's is.
            ("tasks/runs/workflow.py", "WorkflowRun.settle_lost"),
            ("tasks/runs/workflow.py", "_settle"),
            ("tasks/legs.py", "LegRunner.complete"),
            ("tasks/legs.py", "LegRunner._offload"),
            ("tasks/legs.py", "LegRunner._end"),
            ("tasks/runs/durable.py", "DurableRun.settle_lost"),
        ],
    ),
    "DurableFunction": (
        "handlers/durable.py",
        "durable_body",
        [
            ("tasks/durable.py", "DurableBody"),
            ("tasks/durable.py", "_Writer"),
            ("tasks/durable.py", "_Reporter"),
            ("app.py", "App.durable_body"),
            ("tasks/legs.py", "LegRunner.complete"),
            ("tasks/legs.py", "LegRunner._offload"),
            ("tasks/legs.py", "LegRunner._end"),
        ],
    ),
    "SweepFunction": (
        "handlers/sweep.py",
        "sweep_stranded",
        [
            ("tasks/sweep.py", "sweep_stranded"),
            ("tasks/runs/direct.py", "DirectRun.may_be_running"),
            ("tasks/runs/legs.py", "LegsRun.may_be_running"),
            ("tasks/runs/workflow.py", "WorkflowRun.may_be_running"),
            ("tasks/runs/durable.py", "DurableRun.may_be_running"),
        ],
    ),
    "AskFunction": (
        "handlers/ask.py",
        "workflow_doors",
        [
            ("tasks/workflow.py", "WorkflowDoors"),
            ("app.py", "App.workflow_doors"),
            ("protocol/request_state.py", "DerivedKeys"),
        ],
    ),
}


@cache
def parse(relative: str) -> ast.Module:
    return ast.parse((PACKAGE / relative).read_text())


def find(module: ast.Module, dotted: str) -> ast.AST:
    scope: Any = module
    for name in dotted.split("."):
        found = [
            node
            for node in scope.body
            if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name == name
        ]
        assert found, f"{dotted} not found: update ENTRY_POINTS in {Path(__file__).name}"
        scope = found[0]
    return scope  # type: ignore[no-any-return]


def self_attribute_call(node: ast.AST, owner: str) -> str | None:
    """`M` for a call `self.<owner>.M(...)` (or `self.M(...)` when owner is empty)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return None
    target = node.func.value
    if owner == "":
        return node.func.attr if isinstance(target, ast.Name) and target.id == "self" else None
    if (
        isinstance(target, ast.Attribute)
        and target.attr == owner
        and isinstance(target.value, ast.Name)
        and target.value.id == "self"
    ):
        return node.func.attr
    return None


def client_helpers(relative: str) -> dict[str, set[str]]:
    """Module function -> the client methods it calls on its `client` parameter (helpers an
    adapter hands `self.client`, e.g. `aws.stepfunctions.send_task_success`)."""
    helpers: dict[str, set[str]] = {}
    for node in parse(relative).body:
        if isinstance(node, ast.FunctionDef) and any(a.arg == "client" for a in node.args.args):
            helpers[node.name] = {
                n.func.attr
                for n in ast.walk(node)
                if isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "client"
            }
    return helpers


def helper_calls(node: ast.AST, helpers: dict[str, set[str]]) -> set[str]:
    """The client methods reached through `helper(self.client, ...)` calls under node."""
    found: set[str] = set()
    for n in ast.walk(node):
        if (
            isinstance(n, ast.Call)
            and isinstance(n.func, ast.Name)
            and n.func.id in helpers
            and n.args
            and isinstance(n.args[0], ast.Attribute)
            and n.args[0].attr == "client"
        ):
            found |= helpers[n.func.id]
    return found


def adapter_operations(adapter: str) -> dict[str, set[str]]:
    """Method -> the client methods it calls, following calls to other methods of the class
    and to module helpers of the adapters handed `self.client`."""
    relative, _service = ADAPTERS[adapter]
    cls = find(parse(relative), adapter)
    assert isinstance(cls, ast.ClassDef)
    helpers = {
        name: ops
        for module in {module for module, _ in ADAPTERS.values()}
        for name, ops in client_helpers(module).items()
    }
    direct: dict[str, set[str]] = {}
    internal: dict[str, set[str]] = {}
    for method in cls.body:
        if not isinstance(method, ast.FunctionDef):
            continue
        nodes = list(ast.walk(method))
        direct[method.name] = {m for n in nodes if (m := self_attribute_call(n, "client"))}
        direct[method.name] |= helper_calls(method, helpers)
        internal[method.name] = {m for n in nodes if (m := self_attribute_call(n, ""))}
    closed: dict[str, set[str]] = {}
    for name in direct:
        seen, todo, ops = set(), [name], set()
        while todo:
            current = todo.pop()
            if current in seen or current not in direct:
                continue
            seen.add(current)
            ops |= direct[current]
            todo += internal[current]
        closed[name] = ops
    return closed


def port_uses(node: ast.AST) -> set[tuple[str, str]]:
    """(adapter, method) for each `self.<port>.M` or `<port>.M` under node (called or not)."""
    uses = set()
    for n in ast.walk(node):
        if not isinstance(n, ast.Attribute):
            continue
        target = n.value
        port = None
        if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name):
            port = target.attr if target.value.id == "self" else None
        elif isinstance(target, ast.Name):
            port = target.id
        if port in PORTS:
            uses.add((PORTS[port], n.attr))
    return uses


# Where IAM names an operation otherwise than the API does.
# (S3 has no HeadObject action: s3:GetObject grants HEAD on an object.)
IAM_ACTION_NAMES = {"lambda:Invoke": "lambda:InvokeFunction", "s3:HeadObject": "s3:GetObject"}


def iam_action(service: str, client_method: str) -> str:
    import botocore.session

    model = botocore.session.get_session().get_service_model(service)
    operations = {botocore.xform_name(op): op for op in model.operation_names}
    action = f"{model.signing_name}:{operations[client_method]}"
    return IAM_ACTION_NAMES.get(action, action)


@pytest.mark.parametrize("function", sorted(ENTRY_POINTS))
def test_granted_actions_are_what_the_code_calls(function: str) -> None:
    handler, reached_by, scopes = ENTRY_POINTS[function]
    assert reached_by in (ROOT / handler).read_text(), f"{handler} no longer uses {reached_by}"
    actions = set()
    for relative, dotted in scopes:
        for adapter, method in port_uses(find(parse(relative), dotted)):
            _relative, service = ADAPTERS[adapter]
            operations = adapter_operations(adapter)
            if method.startswith("_") or method not in operations:
                continue  # an attribute, not an adapter method
            actions |= {iam_action(service, op) for op in operations[method]}
    assert actions == EXPECTED_ACTIONS[function] | MANAGED_ACTIONS.get(function, set())
