"""Least privilege for managed tools: the example declaration's derived parameters
(`targets.iam`) give each function exactly the calls its managed tools need, on exactly the
declared resources, and the template without a declaration grants none of them.

The stack is the transformed template (aws-sam-translator, offline) with the parameters
`scripts/sam_build.py` prints for examples/managed/tools.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.test_template import (
    EXPECTED_ACTIONS,
    MANAGED_ACTIONS,
    PLATFORM_ACTIONS,
    Stack,
    all_statements,
    as_list,
    evaluate,
    function_roles,
    granted,
    parameter_values,
    role_statements,
    transform,
)
from mcp_tasks_aws.local.template import load_template
from mcp_tasks_aws.targets.declaration import DeclarationError, load_declaration
from mcp_tasks_aws.targets.iam import PARAMETERS, managed_parameters, parameter_overrides
from support.targets import EXAMPLE, SECRET_ARN, write

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_FUNCTION = "arn:aws:lambda:us-east-1:123456789012:function:word-count"
EXAMPLE_WORKFLOW = "arn:aws:states:us-east-1:123456789012:stateMachine:deploy-approval"
EXAMPLE_EXPRESS = "arn:aws:states:us-east-1:123456789012:stateMachine:price-quote"
MANAGED_SIDS = {
    "InvokeManagedFunctions",
    "StartManagedWorkflows",
    "StopManagedWorkflows",
    "RunManagedExpress",
    "ReadManagedSecrets",
    "InvokeManagedApis",
    "InvokeManagedFunctionUrls",
    "ReadWorkflowTasks",
    "DescribeManagedWorkflows",
    "WriteWorkflowResults",
}


def stack_for(parameters: dict[str, list[str]]) -> Stack:
    template = load_template(ROOT / "template.yaml")
    given = {name: ",".join(values) for name, values in parameters.items()}
    output = transform(template, given)
    values = parameter_values(template, given)
    conditions: dict[str, Any] = dict(output.get("Conditions", {}))
    decided = {c: bool(evaluate(e, values, conditions)) for c, e in conditions.items()}
    return Stack("managed", output, values, decided)


@pytest.fixture(scope="module")
def example_parameters() -> dict[str, list[str]]:
    return managed_parameters(load_declaration(EXAMPLE))


@pytest.fixture(scope="module")
def managed_stack(example_parameters: dict[str, list[str]]) -> Stack:
    return stack_for(example_parameters)


def test_the_example_needs_its_function_and_machines_and_nothing_else(
    example_parameters: dict[str, list[str]],
) -> None:
    assert example_parameters == {
        "ManagedFunctionArns": [EXAMPLE_FUNCTION],
        "ManagedWorkflowArns": [EXAMPLE_WORKFLOW],
        "ManagedExecutionArns": [EXAMPLE_WORKFLOW.replace(":stateMachine:", ":execution:") + ":*"],
        "ManagedExpressArns": [EXAMPLE_EXPRESS],
        "ManagedSecretArns": [],
        "ManagedApiArns": [],
        "ManagedFunctionUrlArns": [],
    }
    assert parameter_overrides(example_parameters) == [
        f"ManagedFunctionArns={EXAMPLE_FUNCTION}",
        f"ManagedWorkflowArns={EXAMPLE_WORKFLOW}",
        f"ManagedExecutionArns={example_parameters['ManagedExecutionArns'][0]}",
        f"ManagedExpressArns={EXAMPLE_EXPRESS}",
    ]


def resolved(stack: Stack, value: Any) -> list[str]:
    """A resource as deployed: a Ref to a list parameter is its items; other values as text."""
    if isinstance(value, dict) and list(value) == ["Ref"] and value["Ref"] in stack.values:
        return [str(item) for item in as_list(stack.values[value["Ref"]])]
    return [str(value)]


def managed_grants(stack: Stack) -> set[tuple[str, str, str]]:
    """(function, action, resource) of every managed statement the stack creates."""
    grants = set()
    for function, role in function_roles(stack).items():
        for statement in role_statements(role):
            if statement.get("Sid") not in MANAGED_SIDS:
                continue
            assert statement["Effect"] == "Allow"
            for action in as_list(statement["Action"]):
                for resource in as_list(statement["Resource"]):
                    for value in resolved(stack, resource):
                        grants.add((function, action, value))
    return grants


def needed_by(parameters: dict[str, list[str]]) -> set[tuple[str, str, str]]:
    """What the managed tools' calls need, function by function (see targets/iam.py)."""
    table = "{'Fn::GetAtt': ['TaskTable', 'Arn']}"
    results = "{'Fn::Sub': '${ResultBucket.Arn}/results/*'}"
    needed = set()
    for arn in parameters["ManagedFunctionArns"]:  # sync in the API, task legs in the worker
        needed |= {("ApiFunction", "lambda:InvokeFunction", arn)}
        needed |= {("WorkerFunction", "lambda:InvokeFunction", arn)}
    for arn in parameters["ManagedWorkflowArns"]:
        needed.add(("ApiFunction", "states:StartExecution", arn))
    for arn in parameters["ManagedExecutionArns"]:
        needed.add(("ApiFunction", "states:StopExecution", arn))
        # Whether a start that failed to answer landed; whether a task's never did.
        needed.add(("ApiFunction", "states:DescribeExecution", arn))
        needed.add(("SweepFunction", "states:DescribeExecution", arn))
        needed.add(("ReconcileFunction", "states:DescribeExecution", arn))
    if parameters["ManagedWorkflowArns"]:
        needed.add(("ReconcileFunction", "dynamodb:GetItem", table))
        needed.add(("ReconcileFunction", "s3:PutObject", results))
    for arn in parameters["ManagedExpressArns"]:
        needed.add(("ApiFunction", "states:StartSyncExecution", arn))
        needed.add(("WorkerFunction", "states:StartSyncExecution", arn))
    for arn in parameters["ManagedSecretArns"]:
        needed.add(("ApiFunction", "secretsmanager:GetSecretValue", arn))
        needed.add(("WorkerFunction", "secretsmanager:GetSecretValue", arn))
    for arn in parameters["ManagedApiArns"]:  # HTTP tools run inline, or as a task's leg
        needed.add(("ApiFunction", "execute-api:Invoke", arn))
        needed.add(("WorkerFunction", "execute-api:Invoke", arn))
    for arn in parameters["ManagedFunctionUrlArns"]:  # a function URL takes both (October 2025)
        for action in ("lambda:InvokeFunctionUrl", "lambda:InvokeFunction"):
            needed.add(("ApiFunction", action, arn))
            needed.add(("WorkerFunction", action, arn))
    return needed


def test_the_policy_equals_what_the_example_declaration_needs(
    managed_stack: Stack, example_parameters: dict[str, list[str]]
) -> None:
    assert managed_grants(managed_stack) == needed_by(example_parameters)


def test_declared_secrets_are_granted_and_only_them(tmp_path: Path) -> None:
    entry = {
        "name": "weather",
        "description": "Weather.",
        "inputSchema": {"type": "object"},
        "target": {
            "kind": "http",
            "method": "GET",
            "url": "https://api.example.com/weather",
            "auth": {"type": "bearer", "secretArn": SECRET_ARN},
        },
    }
    parameters = managed_parameters(load_declaration(write(tmp_path, entry)))
    assert parameters["ManagedSecretArns"] == [SECRET_ARN]
    assert managed_grants(stack_for(parameters)) == needed_by(parameters)


SIGV4_PLACE = {"region": "eu-west-1", "account": "111122223333"}


def http_entry(name: str, url: str, auth: dict[str, Any], method: str = "GET") -> dict[str, Any]:
    return {
        "name": name,
        "description": "d",
        "inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}},
        "target": {"kind": "http", "method": method, "url": url, "auth": auth},
    }


def test_sigv4_targets_are_granted_exactly_their_routes_and_function_urls(tmp_path: Path) -> None:
    api = "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com"
    entries = [
        http_entry("item", f"{api}/prod/items/{{id}}?full=1", {"type": "sigv4"}),
        http_entry("root", f"{api}/prod", {"type": "sigv4"}, method="POST"),
        http_entry(
            "report",
            "https://abcdefghijklmnopqrstuvwxyz012345.lambda-url.eu-west-1.on.aws/r/{id}",
            {"type": "sigv4", "service": "lambda", "function": "report:live"},
        ),
    ]
    parameters = managed_parameters(load_declaration(write(tmp_path, *entries, aws=SIGV4_PLACE)))
    routes = "arn:aws:execute-api:eu-west-1:111122223333:a1b2c3d4e5"
    # The first segment is the stage (a REST API's, a named HTTP API stage), or the path
    # starts at once ($default stage of an HTTP API): a URL cannot tell, so both are granted.
    assert parameters["ManagedApiArns"] == sorted(
        [
            f"{routes}/prod/GET/items/*",
            f"{routes}/$default/GET/prod/items/*",
            f"{routes}/prod/POST/",
            f"{routes}/$default/POST/prod",
        ]
    )
    assert parameters["ManagedFunctionUrlArns"] == [
        "arn:aws:lambda:eu-west-1:111122223333:function:report:live"
    ]
    assert parameters["ManagedFunctionArns"] == []  # not invoked with Invoke
    assert managed_grants(stack_for(parameters)) == needed_by(parameters)
    assert all(arn != "*" for arns in parameters.values() for arn in arns)


@pytest.mark.parametrize(
    ("entry", "place", "problem"),
    [
        (
            http_entry(
                "item",
                "https://a1b2c3d4e5.execute-api.eu-west-1.amazonaws.com/p",
                {"type": "sigv4"},
            ),
            {"region": "eu-west-1"},
            "aws.account: needed to name the API of tool 'item' in the IAM policy",
        ),
        (
            http_entry(
                "item", "https://api.example.com/p", {"type": "sigv4", "region": "eu-west-1"}
            ),
            SIGV4_PLACE,
            "tool 'item': target.url: sigv4 for execute-api: IAM names the API by its id, which "
            "a custom domain does not say: use the API's own URL "
            "(https://API_ID.execute-api.REGION.amazonaws.com/STAGE/...)",
        ),
        (
            http_entry(
                "report",
                "https://x.lambda-url.eu-west-1.on.aws/",
                {"type": "sigv4", "service": "lambda"},
            ),
            SIGV4_PLACE,
            "tool 'report': target.auth.function: sigv4 for a function URL needs it: the "
            "function behind the URL, which IAM must name",
        ),
        (
            http_entry(
                "search",
                "https://search-x.eu-west-1.es.amazonaws.com/i/_search",
                {"type": "sigv4", "service": "es"},
            ),
            SIGV4_PLACE,
            "tool 'search': target.auth.service: no IAM policy is derived for sigv4 service 'es' "
            "(execute-api and lambda are)",
        ),
    ],
)
def test_a_sigv4_target_iam_cannot_name_is_one_line_at_build(
    tmp_path: Path, entry: dict[str, Any], place: dict[str, str], problem: str
) -> None:
    declaration = load_declaration(write(tmp_path, entry, aws=place))
    with pytest.raises(DeclarationError) as caught:
        managed_parameters(declaration)
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_no_managed_statement_grants_on_star(managed_stack: Stack) -> None:
    for owner, statement in all_statements(managed_stack):
        if statement.get("Sid") in MANAGED_SIDS:
            assert "*" not in as_list(statement["Resource"]), (owner, statement["Sid"])


def test_without_a_declaration_nothing_managed_is_granted() -> None:
    stack = stack_for({})
    assert managed_grants(stack) == set()
    assert "WorkflowEndsRule" not in stack.resources()


def test_the_ends_of_declared_workflows_reach_the_reconciler(managed_stack: Stack) -> None:
    rule = managed_stack.resources()["WorkflowEndsRule"]["Properties"]
    detail = rule["EventPattern"]["detail"]
    assert set(detail["status"]) == {"SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED"}
    assert resolved(managed_stack, detail["stateMachineArn"]) == [EXAMPLE_WORKFLOW]
    (target,) = rule["Targets"]
    assert target["Arn"] == {"Fn::GetAtt": ["ReconcileFunction", "Arn"]}
    assert "DeadLetterConfig" in target
    permission = managed_stack.resources()["WorkflowEndsPermission"]["Properties"]
    assert permission["Principal"] == "events.amazonaws.com"


def test_a_bare_function_name_needs_the_account_and_region(tmp_path: Path) -> None:
    entry = {
        "name": "count",
        "description": "Count.",
        "inputSchema": {"type": "object"},
        "target": {"kind": "lambda", "function": "count", "qualifier": "live"},
    }
    with pytest.raises(DeclarationError, match=r"aws\.region: needed to name function 'count'"):
        managed_parameters(load_declaration(write(tmp_path, entry)))
    placed = write(tmp_path, entry, aws={"region": "eu-west-1", "account": "111122223333"})
    assert managed_parameters(load_declaration(placed))["ManagedFunctionArns"] == [
        "arn:aws:lambda:eu-west-1:111122223333:function:count:live"
    ]


def test_the_template_declares_every_managed_parameter() -> None:
    declared = yaml.safe_load(
        (ROOT / "template.yaml").read_text().split("\nRules:")[0].replace("!", "")
    )["Parameters"]
    for name in PARAMETERS:
        assert declared[name]["Type"] == "CommaDelimitedList"
        assert declared[name]["Default"] == ""


def test_with_a_declared_workflow_the_reconciler_gets_exactly_what_its_code_calls(
    managed_stack: Stack,
) -> None:
    """The actions test_template derives from the reconciler's code for a workflow's end
    (MANAGED_ACTIONS) are the ones the example's conditional statements add, no more."""
    role = function_roles(managed_stack)["ReconcileFunction"]
    function = "ReconcileFunction"
    expected = EXPECTED_ACTIONS[function] | PLATFORM_ACTIONS[function] | MANAGED_ACTIONS[function]
    assert granted(role) == expected
