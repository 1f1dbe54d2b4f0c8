"""template.yaml's deployment safety (issue 12), checked offline on the transformed template:
cost limits with safe defaults, access logs, log groups that expire with the stack, what
happens to stateful resources on replacement and deletion, state machine names for the
longest stack names, switching AuthMode, an honest executions alarm, and a state secret that
never sits in a function's environment."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from infra.test_template import ACCOUNT, PARAMETER_SETS, Stack
from mcp_tasks_aws.local.template import Resolver

SAFE_LIMITS = {
    "ApiConcurrency": ("ApiFunction", 1, 200),
    "WorkerConcurrency": ("WorkerFunction", 1, 200),
}


# -- cost limits ------------------------------------------------------------------------------


@pytest.mark.parametrize("parameter", sorted(SAFE_LIMITS))
def test_reserved_concurrency_has_a_safe_default(template: dict[str, Any], parameter: str) -> None:
    _, low, high = SAFE_LIMITS[parameter]
    assert low <= int(template["Parameters"][parameter]["Default"]) <= high


@pytest.mark.parametrize("parameter", sorted(SAFE_LIMITS))
def test_reserved_concurrency_follows_its_parameter(
    transformed: Callable[[str], Stack], parameter: str
) -> None:
    function, _, _ = SAFE_LIMITS[parameter]
    limited = transformed("none").choose(transformed("none").resources()[function]["Properties"])
    assert limited["ReservedConcurrentExecutions"] == {"Ref": parameter}
    # 0 means "no reservation": the property is left out, not set to 0 (which would block it)
    iam = transformed("iam")
    assert iam.values[parameter] == "0"
    assert "ReservedConcurrentExecutions" not in iam.choose(iam.resources()[function]["Properties"])


def test_the_stage_throttles_with_safe_defaults(
    template: dict[str, Any], default_stack: Stack
) -> None:
    stage = default_stack.resources()["HttpApiStage"]["Properties"]
    assert stage["DefaultRouteSettings"] == {
        "ThrottlingRateLimit": {"Ref": "ThrottleRateLimit"},
        "ThrottlingBurstLimit": {"Ref": "ThrottleBurstLimit"},
    }
    parameters = template["Parameters"]
    rate = int(parameters["ThrottleRateLimit"]["Default"])
    burst = int(parameters["ThrottleBurstLimit"]["Default"])
    assert 1 <= rate <= 1000
    assert rate <= burst <= 5000


# -- logs -------------------------------------------------------------------------------------


def test_the_api_stage_writes_access_logs_without_secrets(default_stack: Stack) -> None:
    resources = default_stack.resources()
    settings = resources["HttpApiStage"]["Properties"]["AccessLogSettings"]
    group = settings["DestinationArn"]["Fn::GetAtt"]
    assert group[1] == "Arn"
    assert resources[group[0]]["Type"] == "AWS::Logs::LogGroup"
    assert resources[group[0]]["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    # One JSON object per request (every $context value is quoted)
    line = json.loads(settings["Format"])
    assert {"requestId", "ip", "status", "route"} <= set(line)
    # Nothing a caller sends as a credential: no headers, no JWT claims
    assert not re.search(r"header|claims|authorization|\$request", settings["Format"], re.I)


def test_every_function_has_a_declared_log_group_that_expires(default_stack: Stack) -> None:
    groups = {
        json.dumps(spec["Properties"].get("LogGroupName")): spec["Properties"]
        for spec in default_stack.resources("AWS::Logs::LogGroup").values()
    }
    for function in default_stack.resources("AWS::Lambda::Function"):
        name = json.dumps({"Fn::Sub": f"/aws/lambda/${{{function}}}"})
        assert name in groups, f"{function} has no declared log group"
        assert groups[name]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


# -- stateful resources -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("logical", "on_delete", "on_replace"),
    [
        ("TaskTable", "Delete", "Retain"),
        ("ResultBucket", "Retain", "Retain"),
        ("StateSecret", "Delete", "Delete"),
    ],
)
def test_stateful_resources_say_what_happens_to_them(
    template: dict[str, Any], logical: str, on_delete: str, on_replace: str
) -> None:
    resource = template["Resources"][logical]
    assert (resource.get("DeletionPolicy"), resource.get("UpdateReplacePolicy")) == (
        on_delete,
        on_replace,
    )


def test_tear_down_never_waits_for_the_result_bucket_to_empty(template: dict[str, Any]) -> None:
    # CloudFormation deletes only empty buckets; a retained one is left, not failed on.
    assert template["Resources"]["ResultBucket"]["DeletionPolicy"] == "Retain"


# -- names ------------------------------------------------------------------------------------


def _resolver(stack_name: str) -> Resolver:
    stack_id = (
        f"arn:aws:cloudformation:us-east-1:{ACCOUNT}:stack/{stack_name}/"
        "51af3dc0-da77-11e4-872e-1234567db123"
    )
    refs = {
        "AWS::Partition": "aws",
        "AWS::Region": "us-east-1",
        "AWS::AccountId": ACCOUNT,
        "AWS::StackName": stack_name,
        "AWS::StackId": stack_id,
    }
    return Resolver(refs, lambda logical, name: f"{logical}.{name}")


@pytest.mark.parametrize("length", [3, 74, 75, 128])
def test_the_state_machine_name_fits_whatever_the_stack_name(
    template: dict[str, Any], length: int
) -> None:
    # Stack names may be 128 characters; state machine names at most 80.
    resolve = _resolver("s" * length).resolve
    name = resolve(template["Resources"]["TaskStateMachine"]["Properties"]["Name"])
    assert len(name) <= 80
    assert re.fullmatch(r"[A-Za-z0-9_-]+", name)
    # And every place that builds the machine's ARN agrees with it
    arn = f"arn:aws:states:us-east-1:{ACCOUNT}:stateMachine:{name}"
    variables = template["Globals"]["Function"]["Environment"]["Variables"]
    assert resolve(variables["MCP_TASKS_STATE_MACHINE_ARN"]) == arn
    rule = template["Resources"]["ReconcileFunction"]["Properties"]["Events"]["LostExecutions"]
    assert resolve(rule["Properties"]["Pattern"]["detail"]["stateMachineArn"]) == [arn]


# -- switching AuthMode -----------------------------------------------------------------------

MODES = {"NONE": "none", "JWT": "jwt", "IAM": "iam"}


@pytest.mark.parametrize(
    ("before", "after"), list(itertools.permutations(MODES, 2)), ids=lambda m: str(m)
)
def test_switching_auth_mode_sets_the_route_explicitly(
    transformed: Callable[[str], Stack], before: str, after: str
) -> None:
    """An update that only removes AuthorizerId leaves the authorizer attached upstream: the
    route says its new AuthorizationType in every mode. (Even so, a move to AWS_IAM is
    reported to keep it attached: the authorizer is never deleted by a switch, see
    test_auth_mode_switch.py.)"""
    old, new = transformed(MODES[before]), transformed(MODES[after])
    old_route = old.choose(old.resources()["McpRoute"]["Properties"])
    new_route = new.choose(new.resources()["McpRoute"]["Properties"])
    expected = {"NONE": "NONE", "JWT": "JWT", "IAM": "AWS_IAM"}
    assert new_route["AuthorizationType"] == expected[after]
    if after != "JWT":
        assert "AuthorizerId" not in new_route
    assert "JwtAuthorizer" in old.resources()
    assert "JwtAuthorizer" in new.resources()
    if before == "JWT":
        assert old_route["AuthorizerId"] == {"Ref": "JwtAuthorizer"}


# -- alarms -----------------------------------------------------------------------------------


def test_the_failed_executions_alarm_counts_what_it_says(default_stack: Stack) -> None:
    alarm = default_stack.resources()["FailedExecutionsAlarm"]["Properties"]
    counted = {
        query["MetricStat"]["Metric"]["MetricName"]
        for query in alarm["Metrics"]
        if "MetricStat" in query
    }
    # Cancelling a task aborts its execution: aborted executions are not failures.
    assert counted == {"ExecutionsFailed", "ExecutionsTimedOut"}
    description = alarm["AlarmDescription"].lower()
    assert "failed" in description
    assert "timed out" in description
    assert "aborted executions are not counted" in description
    (total,) = [q for q in alarm["Metrics"] if q.get("ReturnData")]
    assert set(re.findall(r"FILL\((\w+)", total["Expression"])) == {
        q["Id"] for q in alarm["Metrics"] if "MetricStat" in q
    }


# -- the state secret -------------------------------------------------------------------------


def test_no_function_environment_holds_the_state_secret(stack: Stack) -> None:
    for logical, spec in stack.resources("AWS::Lambda::Function").items():
        variables = stack.choose(spec["Properties"]).get("Environment", {}).get("Variables", {})
        assert "MCP_TASKS_STATE_SECRET" not in variables, logical
        assert "{{resolve:" not in json.dumps(variables), logical


def test_the_api_function_reads_the_secret_it_is_given(stack: Stack) -> None:
    api = stack.choose(stack.resources()["ApiFunction"]["Properties"])
    variables = api["Environment"]["Variables"]
    created = stack.values["StateSecretArn"] == ""
    secret = {"Ref": "StateSecret"} if created else {"Ref": "StateSecretArn"}
    assert variables["MCP_TASKS_STATE_SECRET_ARN"] == secret
    assert variables["MCP_TASKS_DEPLOYMENT_ID"] == {"Ref": "AWS::StackId"}
    # Only that one secret can be read, and only read
    role = stack.resources()[api["Role"]["Fn::GetAtt"][0]]
    reads = [
        statement
        for policy in stack.choose(role["Properties"])["Policies"]
        for statement in policy["PolicyDocument"]["Statement"]
        if "secretsmanager:GetSecretValue" in str(statement["Action"])
    ]
    assert len(reads) == 1
    assert reads[0]["Action"] == ["secretsmanager:GetSecretValue"]
    assert reads[0]["Resource"] == secret


def test_parameter_sets_cover_both_secret_branches() -> None:
    assert {bool(p.get("StateSecretArn")) for p in PARAMETER_SETS.values()} == {True, False}
