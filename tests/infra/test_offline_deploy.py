"""template.yaml deployed offline: transformed by aws-sam-translator (code in S3, as
`sam package` leaves it), created and updated in moto's CloudFormation, no account, no network
(issue 26 item 0, issue 28 item 4).

What it proves, read back through the services' own APIs after every create and update:
- each door (BUFFERED, STREAMING) deploys in every AuthMode (NONE, JWT, IAM, OAUTH with and
  without CreateUserPool): the stack holds exactly the resources the template turns on; the
  API and worker functions' `live` aliases point at a published version whose configuration
  is the function's current one and the one the parameters ask for (handler, timeout, layers,
  MCP_TASKS_AUTH_MODE and the gate's settings); the API of the door, with the authorization of
  the mode (the HTTP API's route and authorizer; the REST API's methods and the deployment its
  stage serves); the alias grants invoke to that API only; the table, the bucket and the
  state machine exist;
- an AuthMode switch (NONE->JWT->IAM->OAUTH->JWT) behind either door, and a door switch
  (BUFFERED->STREAMING->BUFFERED) in every mode, is an update after which all of the above
  holds for the new parameters: `live` moved to a newly published version with the new
  configuration (issue 26 item 0, the defect deployed), nothing of the other door is left
  (API, permission, alarm, adapter layer), the function is updated in place and the table and
  bucket are never touched;
- without the fix (no `VersionDescription` naming the published configuration), NONE->OAUTH
  leaves `live` on a version still in NONE, and these checks say so.

How: moto runs CreateStack/UpdateStack and resolves the intrinsics; support.cfn_engine gives it
CloudFormation's update semantics (moto's own update never sees a parameter read through
`Fn::Sub` nor a condition that turns, so it publishes nothing and switches no door) and
test-only providers for the types it lacks (support.cfn_lambda, cfn_apis, cfn_services).

What moto cannot show, even so:
- the state machine's definition: moto's model ignores `DefinitionS3Location` and its
  substitutions (test_template.py parses the ASL files);
- `ResponseTransferMode: STREAM` on an integration: moto does not store it (test_door_switch.py
  reads it from the template);
- a permission's qualifier: moto keeps one resource policy per function for all its versions
  and aliases, and drops the alias from a statement's resource;
- IAM as enforced (moto's IAM stores the roles and policies; test_template.py checks least
  privilege), a REST deployment's snapshot of the methods (test_door_switch.py), Cognito's
  managed login branding (moto has none), the adapter layer from AWS's account (a stand-in of
  the same name and version is published in the test account), and rollback.
"""

from __future__ import annotations

import copy
import io
import json
import re
import zipfile
from collections.abc import Iterator
from functools import cache
from typing import Any

import boto3
import pytest
from moto import mock_aws
from moto.awslambda.models import lambda_backends
from moto.core import DEFAULT_ACCOUNT_ID
from moto.core.models import MockAWS

from infra.test_auth_mode_switch import MODE_SHAPES
from infra.test_template import TEMPLATE, Stack, build_stack
from mcp_tasks_aws.local.template import load_template
from support.cfn_engine import Changes, last_update, offline_cloudformation

REGION = "us-east-1"
STACK = "mcp"
MODES = ("NONE", "JWT", "IAM", "OAUTH", "OAUTH-cognito")
ALIASED = ("ApiFunction", "WorkerFunction")
COGNITO_ISSUER = "https://cognito-idp.us-east-1.amazonaws.com/"
DATA = ("TaskTable", "ResultBucket")


@cache
def shape(door: str, mode: str, variant: str = "as shipped") -> Stack:
    """The transformed stack for one door and AuthMode (MODE_SHAPES), once per run."""
    template = copy.deepcopy(_template())
    if variant == "without the fix":
        template = copy.deepcopy(template)
        for function in ALIASED:
            del template["Resources"][function]["Properties"]["VersionDescription"]
    return build_stack(template, f"{door}-{mode}", {**MODE_SHAPES[mode], "FrontDoor": door})


@cache
def _template() -> dict[str, Any]:
    """template.yaml as read, once per run (each shape transforms its own copy)."""
    return load_template(TEMPLATE)


def door_and_mode(stack: Stack) -> tuple[str, str]:
    door, _, mode = stack.name.partition("-")
    return door, mode


ADAPTER_LAYER = re.search(r"layer:(\w+):(\d+)", TEMPLATE.read_text())
assert ADAPTER_LAYER, "template.yaml names no adapter layer"


# --- the account, on moto ------------------------------------------------------------------
class Aws:
    """The account's clients (on moto) and the one stack deployed there."""

    def __init__(self) -> None:
        def client(service: str) -> Any:
            return boto3.client(service, region_name=REGION)

        self.cloudformation = client("cloudformation")
        self.lambda_ = client("lambda")
        self.apigateway = client("apigateway")
        self.apigatewayv2 = client("apigatewayv2")
        self.cognito = client("cognito-idp")
        self.cloudwatch = client("cloudwatch")
        self.dynamodb = client("dynamodb")
        self.s3 = client("s3")
        self.stepfunctions = client("stepfunctions")
        self.forget_the_stack()

    def forget_the_stack(self) -> None:
        """The account is empty again (moto reset): the next deploy creates the stack."""
        self._resources: dict[str, tuple[str, str]] | None = None
        self.created = False

    def deploy(self, stack: Stack) -> Changes:
        """Creates the stack, or updates it to `stack`; what the update changed. Every
        parameter is passed, defaults included: moto does not split a CommaDelimitedList's
        default (UserPoolCallbackUrls) as CloudFormation does."""
        arguments = {
            "StackName": STACK,
            "TemplateBody": json.dumps(stack.template),
            "Parameters": [
                {
                    "ParameterKey": name,
                    "ParameterValue": ",".join(value) if isinstance(value, list) else value,
                }
                for name, value in stack.values.items()
            ],
            "Capabilities": ["CAPABILITY_IAM", "CAPABILITY_AUTO_EXPAND"],
        }
        self._resources = None
        if self.created:
            self.cloudformation.update_stack(**arguments)
            return last_update(STACK)
        self.cloudformation.create_stack(**arguments)
        self.created = True
        return Changes(created=set(stack.resources()))

    def resources(self) -> dict[str, tuple[str, str]]:
        """The stack's resources: logical id -> (type, physical id)."""
        if self._resources is None:
            summaries = self.cloudformation.list_stack_resources(StackName=STACK)
            self._resources = {
                r["LogicalResourceId"]: (r["ResourceType"], r["PhysicalResourceId"])
                for r in summaries["StackResourceSummaries"]
                if r["LogicalResourceId"]  # moto lists a resource whose condition is off as blank
            }
        return self._resources

    def physical(self, logical: str) -> str:
        return self.resources()[logical][1]

    def output(self, key: str) -> str:
        (described,) = self.cloudformation.describe_stacks(StackName=STACK)["Stacks"]
        return next(o["OutputValue"] for o in described["Outputs"] if o["OutputKey"] == key)

    def publish_adapter_layer(self, code: bytes) -> None:
        """A stand-in for AWS's adapter layer: moto finds a layer by name and version in any
        account. It numbers from 1, so the stand-in is moved to the template's number."""
        name, version = ADAPTER_LAYER.groups()
        self.lambda_.publish_layer_version(LayerName=name, Content={"ZipFile": code})
        lambda_backends[DEFAULT_ACCOUNT_ID][REGION]._layers._layers[name]._latest_version = (
            int(version) - 1
        )
        self.lambda_.publish_layer_version(LayerName=name, Content={"ZipFile": code})


@pytest.fixture(scope="module")
def account() -> Iterator[tuple[MockAWS, Aws]]:
    """moto and CloudFormation's engine for the whole module, with one set of clients:
    creating boto3 clients and patching moto again for every test is most of what a test
    would otherwise cost. Each test still starts from an empty account (`aws`)."""
    with mock_aws() as moto, offline_cloudformation():
        yield moto, Aws()


@pytest.fixture
def aws(account: tuple[MockAWS, Aws]) -> Aws:
    """An empty account with what `sam deploy` finds there: the packaged code in S3 and the
    adapter's layer."""
    moto, clients = account
    moto.reset()  # every backend emptied, as a fresh `mock_aws` starts
    clients.forget_the_stack()
    code = io.BytesIO()
    with zipfile.ZipFile(code, "w") as archive:
        archive.writestr("handlers/api.py", "")
    clients.s3.create_bucket(Bucket="artifacts")
    clients.s3.put_object(Bucket="artifacts", Key="code.zip", Body=code.getvalue())
    clients.publish_adapter_layer(code.getvalue())
    return clients


# --- what a deployed stack must be -------------------------------------------------------------
def expect_the_template_resources(aws: Aws, stack: Stack) -> None:
    deployed = {logical: kind for logical, (kind, _) in aws.resources().items()}
    assert deployed == {logical: spec["Type"] for logical, spec in stack.resources().items()}


def expected_api_configuration(aws: Aws, stack: Stack) -> dict[str, Any]:
    door, mode = door_and_mode(stack)
    streaming = door == "STREAMING"
    gate = mode.startswith("OAUTH") or (streaming and mode == "JWT")
    issuer = stack.values["JwtIssuer"] if gate else ""
    if mode == "OAUTH-cognito":
        issuer = COGNITO_ISSUER + aws.physical("UserPool")
    return {
        "Handler": "handlers/run.sh" if streaming else "handlers.api.handler",
        "Timeout": 250 if streaming else 29,
        "Layers": [":".join(ADAPTER_LAYER.groups())] if streaming else [],
        "MCP_TASKS_AUTH_MODE": "OAUTH" if gate else stack.values["AuthMode"],
        "MCP_TASKS_OAUTH_ISSUER": issuer,
        "AWS_LWA_INVOKE_MODE": "response_stream" if streaming else None,
        "MCP_TASKS_LISTEN_WINDOW_MS": "240000" if streaming else "20000",
    }


def summary(configuration: dict[str, Any]) -> dict[str, Any]:
    variables = configuration.get("Environment", {}).get("Variables", {})
    return {
        "Handler": configuration["Handler"],
        "Timeout": configuration["Timeout"],
        "Layers": [layer["Arn"].split(":layer:")[1] for layer in configuration.get("Layers", [])],
        **{name: variables.get(name) for name in variables if name.startswith(("MCP_", "AWS_"))},
    }


def expect_live_versions(aws: Aws, stack: Stack) -> dict[str, str]:
    """Each aliased function's `live` points at a published version of its current
    configuration, which for the API function is the one the parameters ask for; the
    versions by function."""
    live = {}
    for function in ALIASED:
        name = aws.physical(function)
        alias = aws.lambda_.get_alias(FunctionName=name, Name="live")
        published = {
            v["Version"]
            for v in aws.lambda_.list_versions_by_function(FunctionName=name)["Versions"]
        }
        assert alias["FunctionVersion"] in published - {"$LATEST"}, (function, alias)
        served = aws.lambda_.get_function_configuration(FunctionName=name, Qualifier="live")
        current = aws.lambda_.get_function_configuration(FunctionName=name)
        assert summary(served) == summary(current), f"{function}: live is not the configuration"
        live[function] = alias["FunctionVersion"]
    expected = {
        "ApiFunction": expected_api_configuration(aws, stack),
        "WorkerFunction": {
            "Handler": "handlers.worker.handler",
            "Timeout": int(stack.values["WorkerTimeoutSeconds"]),
            "Layers": [],
        },
    }
    for function, wanted in expected.items():
        served = summary(
            aws.lambda_.get_function_configuration(
                FunctionName=aws.physical(function), Qualifier="live"
            )
        )
        assert {key: served.get(key) for key in wanted} == wanted, f"{function}:live"
    return live


def expect_the_door(aws: Aws, stack: Stack) -> None:
    """The door's API, with the mode's authorization, alone; the endpoint names it."""
    door, mode = door_and_mode(stack)
    http_apis = aws.apigatewayv2.get_apis()["Items"]
    rest_apis = aws.apigateway.get_rest_apis()["items"]
    alias = aws.physical("ApiFunctionAliaslive")
    if door == "BUFFERED":
        assert not rest_apis
        (api,) = http_apis
        api_id = api["ApiId"]
        assert aws.output("McpEndpoint") == f"{api['ApiEndpoint']}/mcp"
        routes = {r["RouteKey"]: r for r in aws.apigatewayv2.get_routes(ApiId=api_id)["Items"]}
        route = routes.pop("ANY /mcp")
        kind = {"JWT": "JWT", "IAM": "AWS_IAM"}.get(mode, "NONE")
        assert route["AuthorizationType"] == kind
        authorizer = aws.apigatewayv2.get_authorizer(
            ApiId=api_id, AuthorizerId=aws.physical("JwtAuthorizer")
        )
        if kind == "JWT":
            assert route["AuthorizerId"] == authorizer["AuthorizerId"]
            assert authorizer["JwtConfiguration"]["Issuer"] == stack.values["JwtIssuer"]
        metadata = {
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/oauth-protected-resource/mcp",
        }
        assert set(routes) == (metadata if mode.startswith("OAUTH") else set())
        (integration,) = aws.apigatewayv2.get_integrations(ApiId=api_id)["Items"]
        assert integration["IntegrationUri"] == alias
    else:
        assert not http_apis
        (api,) = rest_apis
        api_id = api["id"]
        assert aws.output("McpEndpoint").startswith(f"https://{api_id}.execute-api.")
        paths = {
            r["path"]: r["id"] for r in aws.apigateway.get_resources(restApiId=api_id)["items"]
        }
        gate = mode in ("JWT", "OAUTH", "OAUTH-cognito")
        assert set(paths) == {"/", "/mcp"} | (
            {"/.well-known", "/.well-known/{proxy+}"} if gate else set()
        )
        method = aws.apigateway.get_method(
            restApiId=api_id, resourceId=paths["/mcp"], httpMethod="ANY"
        )
        assert method["authorizationType"] == ("AWS_IAM" if mode == "IAM" else "NONE")
        assert method["methodIntegration"]["uri"].endswith(
            f"/functions/{alias}/response-streaming-invocations"
        )
        (deployment,) = aws.apigateway.get_deployments(restApiId=api_id)["items"]
        served = {"IAM": "RestDeploymentIam", "NONE": "RestDeploymentOpen"}.get(
            mode, "RestDeploymentGate"
        )
        assert deployment["id"] == aws.physical(served)
        assert (
            aws.apigateway.get_stage(restApiId=api_id, stageName="api")["deploymentId"]
            == deployment["id"]
        )
    # Only this API may invoke the alias (moto: one policy per function, see the docstring).
    policy = aws.lambda_.get_policy(FunctionName=aws.physical("ApiFunction"), Qualifier="live")
    sources = [
        s["Condition"]["ArnLike"]["AWS:SourceArn"]
        for s in json.loads(policy["Policy"])["Statement"]
    ]
    granting = [
        logical
        for logical, spec in stack.resources("AWS::Lambda::Permission").items()
        if spec["Properties"]["FunctionName"] == {"Ref": "ApiFunctionAliaslive"}
    ]
    assert len(sources) == len(granting) > 0
    assert all(source.split(":")[5].startswith(f"{api_id}/") for source in sources), sources


def expect_the_rest(aws: Aws, stack: Stack) -> None:
    """The alarms of this stack only; sign-in through a user pool only with CreateUserPool,
    its resource server naming this endpoint; the table, the bucket, the state machine."""
    alarms = {a["AlarmName"] for a in aws.cloudwatch.describe_alarms()["MetricAlarms"]}
    assert alarms == {
        aws.physical(logical) for logical in stack.resources("AWS::CloudWatch::Alarm")
    }
    signing_in = {
        pool["Id"]
        for pool in aws.cognito.list_user_pools(MaxResults=10)["UserPools"]
        if aws.cognito.list_user_pool_clients(UserPoolId=pool["Id"])["UserPoolClients"]
    }  # a pool the stack retained when it stopped using it has no client left
    if door_and_mode(stack)[1] == "OAUTH-cognito":
        assert signing_in == {aws.physical("UserPool")}
        servers = aws.cognito.list_resource_servers(
            UserPoolId=aws.physical("UserPool"), MaxResults=10
        )
        (server,) = servers["ResourceServers"]
        assert server["Identifier"] == aws.output("McpEndpoint")
    else:
        assert not signing_in
    table = aws.dynamodb.describe_table(TableName=aws.physical("TaskTable"))
    assert table["Table"]["KeySchema"] == [{"AttributeName": "taskId", "KeyType": "HASH"}]
    aws.s3.head_bucket(Bucket=aws.physical("ResultBucket"))
    machine = aws.stepfunctions.describe_state_machine(
        stateMachineArn=aws.physical("TaskStateMachine")
    )
    assert machine["name"] == aws.output("StateMachineName")
    assert machine["name"].startswith("mcp-tasks-")


def expect_deployed(aws: Aws, stack: Stack) -> dict[str, str]:
    expect_the_template_resources(aws, stack)
    live = expect_live_versions(aws, stack)
    expect_the_door(aws, stack)
    expect_the_rest(aws, stack)
    return live


def expect_an_ordinary_update(
    changes: Changes, before: dict[str, str], after: dict[str, str]
) -> None:
    """The API function updated in place and published anew; the worker, whose
    configuration neither the door nor the AuthMode reaches, not published again; the data
    never touched."""
    assert "ApiFunction" in changes.updated, changes
    assert not {"ApiFunction", "WorkerFunction"} & (changes.replaced | changes.deleted), changes
    assert not set(DATA) & (changes.updated | changes.replaced | changes.deleted), changes
    assert int(after["ApiFunction"]) > int(before["ApiFunction"])
    assert after["WorkerFunction"] == before["WorkerFunction"]


# --- the tests -----------------------------------------------------------------------------
@pytest.mark.parametrize("door", ["BUFFERED", "STREAMING"])
@pytest.mark.parametrize("mode", MODES)
def test_each_door_deploys_in_every_auth_mode(aws: Aws, door: str, mode: str) -> None:
    aws.deploy(shape(door, mode))
    expect_deployed(aws, shape(door, mode))


@pytest.mark.parametrize("door", ["BUFFERED", "STREAMING"])
def test_an_auth_switch_publishes_the_new_configuration(aws: Aws, door: str) -> None:
    aws.deploy(shape(door, "NONE"))
    live = expect_deployed(aws, shape(door, "NONE"))
    for mode in ("JWT", "IAM", "OAUTH", "JWT"):
        changes = aws.deploy(shape(door, mode))
        now = expect_deployed(aws, shape(door, mode))
        expect_an_ordinary_update(changes, live, now)
        live = now


@pytest.mark.parametrize("mode", MODES)
def test_a_door_switch_leaves_nothing_of_the_other_door(aws: Aws, mode: str) -> None:
    aws.deploy(shape("BUFFERED", mode))
    live = expect_deployed(aws, shape("BUFFERED", mode))
    for door in ("STREAMING", "BUFFERED"):
        changes = aws.deploy(shape(door, mode))
        now = expect_deployed(aws, shape(door, mode))
        expect_an_ordinary_update(changes, live, now)
        live = now


def test_leaving_the_created_user_pool_keeps_it(aws: Aws) -> None:
    # DeletionPolicy Retain: the pool (its users) outlives OAUTH-cognito -> OAUTH; its app
    # client, domain and resource server go.
    aws.deploy(shape("BUFFERED", "OAUTH-cognito"))
    live = expect_deployed(aws, shape("BUFFERED", "OAUTH-cognito"))
    pool = aws.physical("UserPool")
    changes = aws.deploy(shape("BUFFERED", "OAUTH"))
    expect_an_ordinary_update(changes, live, expect_deployed(aws, shape("BUFFERED", "OAUTH")))
    assert changes.retained == {"UserPool"}, changes
    assert {"UserPoolClient", "UserPoolDomain", "UserPoolResourceServer"} <= changes.deleted
    assert [p["Id"] for p in aws.cognito.list_user_pools(MaxResults=10)["UserPools"]] == [pool]


def test_an_update_with_the_same_parameters_changes_nothing(aws: Aws) -> None:
    # The engine is no stricter than CloudFormation: nothing to publish, nothing published.
    aws.deploy(shape("BUFFERED", "JWT"))
    live = expect_deployed(aws, shape("BUFFERED", "JWT"))
    changes = aws.deploy(shape("BUFFERED", "JWT"))
    assert changes == Changes(), changes
    assert expect_deployed(aws, shape("BUFFERED", "JWT")) == live


def test_without_the_fix_the_alias_stays_on_the_old_configuration(aws: Aws) -> None:
    # Issue 26 item 0 as it was: SAM's version id does not change with parameters, so
    # NONE -> OAUTH updates $LATEST and leaves `live` (what API Gateway invokes) in NONE.
    aws.deploy(shape("BUFFERED", "NONE", "without the fix"))
    expect_deployed(aws, shape("BUFFERED", "NONE", "without the fix"))
    changes = aws.deploy(shape("BUFFERED", "OAUTH", "without the fix"))
    assert "ApiFunction" in changes.updated
    api = aws.physical("ApiFunction")
    served = aws.lambda_.get_function_configuration(FunctionName=api, Qualifier="live")
    assert served["Environment"]["Variables"]["MCP_TASKS_AUTH_MODE"] == "NONE"
    with pytest.raises(AssertionError, match="live is not the configuration"):
        expect_deployed(aws, shape("BUFFERED", "OAUTH", "without the fix"))
