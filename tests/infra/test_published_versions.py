"""A stack update that changes only parameters publishes a new version of every function behind
an alias whose configuration it changes, and of no other (issue 26, item 0).

API Gateway, the state machine and the first legs call the functions' `live` aliases, so a
configuration takes effect only in a published version. SAM publishes one when its version id
changes, and its hash reads parameters unresolved (samtranslator `_construct_version`: only the
code location is resolved; `Environment`, `MemorySize`, `SnapStart` are hashed as written,
`Timeout` not at all): before the fix, NONE -> OAUTH left API Gateway on a version without
authentication. The template keeps each aliased function's parameter-made configuration as an
AppConfig hosted configuration version, whose number its Lambda version's description names
(both create-only): see template.yaml, "published configurations".

Each pair of parameter sets is transformed with aws-sam-translator, and CloudFormation's update
between them is worked out as `test_auth_mode_switch.changes` does (create-only properties
replace; a replaced resource's new id and attributes change whatever refers to it). A function
is published anew when its version's logical id changes or its version is replaced. That must
happen exactly when the configuration a version holds changes (its properties, resolved), and
the expected functions are named per case, so the check can fail both ways.
"""

from __future__ import annotations

from functools import cache

import pytest

from infra.test_auth_mode_switch import ISSUER, changes, settled
from infra.test_template import TEMPLATE, Stack, build_stack
from mcp_tasks_aws.local.template import load_template

ALIASED = ("ApiFunction", "DurableFunction", "WorkerFunction")
VERSIONED = (
    "Architectures",
    "Code",
    "DeadLetterConfig",
    "Environment",
    "EphemeralStorage",
    "Handler",
    "KmsKeyArn",
    "Layers",
    "LoggingConfig",
    "MemorySize",
    "Role",
    "Runtime",
    "RuntimeManagementConfig",
    "SnapStart",
    "Timeout",
    "TracingConfig",
    "VpcConfig",
)
"""What a published version holds of its function (reserved concurrency, tags and the name
belong to the function, not to a version)."""

JWT = {"AuthMode": "JWT", "JwtIssuer": ISSUER, "JwtAudience": "client-a,client-b"}
OAUTH = {"AuthMode": "OAUTH", "JwtIssuer": "https://id.example.com", "OAuthScopes": "mcp"}
SECRET = "arn:aws:secretsmanager:us-east-1:123456789012:secret:mcp-state-AbCdEf"
BOTH = {"ApiFunction", "WorkerFunction"}
API = {"ApiFunction"}
WORKER = {"WorkerFunction"}
DURABLE = {"DurableFunction"}
ALL = BOTH | DURABLE
"""The durable function shares the worker's memory and timeout, and the Globals."""

ACCOUNT = "us-east-1:123456789012"
MANAGED_GRANTS = {
    "ManagedFunctionArns": f"arn:aws:lambda:{ACCOUNT}:function:word-count",
    "ManagedWorkflowArns": f"arn:aws:states:{ACCOUNT}:stateMachine:approve",
    "ManagedExecutionArns": f"arn:aws:states:{ACCOUNT}:execution:approve:*",
    "ManagedExpressArns": f"arn:aws:states:{ACCOUNT}:stateMachine:lookup",
    "ManagedSecretArns": f"arn:aws:secretsmanager:{ACCOUNT}:secret:api-key-AbCdEf",
    "ManagedApiArns": f"arn:aws:execute-api:{ACCOUNT}:a1b2c3/prod/GET/items",
    "ManagedFunctionUrlArns": f"arn:aws:lambda:{ACCOUNT}:function:signed",
}

# (before, after, the functions whose configuration the update changes)
CASES: dict[str, tuple[dict[str, str], dict[str, str], set[str]]] = {
    # The switches the review deployed, and the rest of the AuthMode pairs' kinds.
    "NONE->JWT": ({"AuthMode": "NONE"}, JWT, API),
    "JWT->IAM": (JWT, {"AuthMode": "IAM"}, API),
    "IAM->OAUTH": ({"AuthMode": "IAM"}, OAUTH, API),
    "OAUTH->JWT": (OAUTH, JWT, API),
    "NONE->OAUTH": ({"AuthMode": "NONE"}, OAUTH, API),
    "NONE->OAUTH-cognito": ({}, {"AuthMode": "OAUTH", "CreateUserPool": "true"}, API),
    "OAUTH issuer": (OAUTH, {**OAUTH, "JwtIssuer": "https://other.example.com"}, API),
    "OAUTH audience": (OAUTH, {**OAUTH, "JwtAudience": "a,b"}, API),
    "OAUTH scopes": (OAUTH, {**OAUTH, "OAuthScopes": "mcp admin"}, API),
    # Every other parameter that reaches a function's configuration.
    "API memory": ({}, {"ApiMemorySize": "1024"}, API),
    "worker memory": ({}, {"WorkerMemorySize": "2048"}, WORKER | DURABLE),
    "worker timeout (a leg's window)": ({}, {"WorkerTimeoutSeconds": "300"}, WORKER | DURABLE),
    "task TTL": ({}, {"DefaultTaskTtlMs": "3600000"}, ALL),
    "tools": ({}, {"ToolsModule": "company.tools"}, ALL),
    "SnapStart": ({}, {"SnapStart": "Disabled"}, BOTH),
    "tracing": ({}, {"Tracing": "Active"}, ALL),
    "origins": ({}, {"AllowedOrigins": "https://app.example.com"}, API),
    "state secret": ({}, {"StateSecretArn": SECRET}, API),
    # The front door decides the API function's handler, layer, timeout, SnapStart and windows;
    # behind STREAMING the function checks JWTs itself, so their settings reach it too.
    "BUFFERED->STREAMING": ({}, {"FrontDoor": "STREAMING"}, API),
    "STREAMING->BUFFERED": ({"FrontDoor": "STREAMING"}, {}, API),
    "JWT issuer behind STREAMING": (
        {**JWT, "FrontDoor": "STREAMING"},
        {**JWT, "FrontDoor": "STREAMING", "JwtIssuer": "https://other.example.com"},
        API,
    ),
    "JWT audience behind STREAMING": (
        {**JWT, "FrontDoor": "STREAMING"},
        {**JWT, "FrontDoor": "STREAMING", "JwtAudience": "client-c"},
        API,
    ),
    # Parameters that reach no published version: nothing is published.
    "JWT audience": (JWT, {**JWT, "JwtAudience": "client-c"}, set()),  # the authorizer's
    "issuer while NONE": ({}, {"JwtIssuer": ISSUER}, set()),
    "concurrency": ({}, {"ApiConcurrency": "10", "WorkerConcurrency": "5"}, set()),
    "log retention": ({}, {"LogRetentionDays": "7"}, set()),
    "throttling": ({}, {"ThrottleRateLimit": "10", "ThrottleBurstLimit": "20"}, set()),
    "sweeper": ({}, {"SweepSchedule": "rate(10 minutes)", "StrandedAfterSeconds": "3600"}, set()),
    "alarms": ({}, {"AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:alarms"}, set()),
    "managed grants": ({}, MANAGED_GRANTS, set()),  # the roles' policies, not a version
    "callback URLs": (
        {"AuthMode": "OAUTH", "CreateUserPool": "true"},
        {
            "AuthMode": "OAUTH",
            "CreateUserPool": "true",
            "UserPoolCallbackUrls": "https://app.example.com/callback",
        },
        set(),  # the app client's, updated in place: its id, which the API reads, stays
    ),
}


@cache
def stack_of(items: tuple[tuple[str, str], ...]) -> Stack:
    return build_stack(load_template(TEMPLATE), "case", dict(items))


def stack(parameters: dict[str, str]) -> Stack:
    return stack_of(tuple(sorted(parameters.items())))


def version_of(stack: Stack, function: str) -> str:
    (version,) = [
        logical
        for logical, spec in stack.resources("AWS::Lambda::Version").items()
        if spec["Properties"]["FunctionName"] == {"Ref": function}
    ]
    return version


def published_anew(old: Stack, new: Stack) -> set[str]:
    """The aliased functions CloudFormation publishes a new version of, updating old to new."""
    diff = changes(old, new)
    published = set()
    for function in ALIASED:
        version = version_of(new, function)
        if version != version_of(old, function) or version in diff.replaced:
            published.add(function)
    return published


def configuration_changed(old: Stack, new: Stack) -> set[str]:
    """The aliased functions whose versioned configuration differs between old and new."""
    diff = changes(old, new)
    before, after = settled(old, set(), 0), settled(new, set(diff.replaced), 1)
    return {
        function
        for function in ALIASED
        if {k: v for k, v in before[function].items() if k in VERSIONED}
        != {k: v for k, v in after[function].items() if k in VERSIONED}
    }


@pytest.mark.parametrize("case", sorted(CASES))
def test_an_update_publishes_every_function_whose_configuration_it_changes(case: str) -> None:
    before, after, expected = CASES[case]
    old, new = stack(before), stack(after)
    assert configuration_changed(old, new) == expected  # the case is what it says
    assert published_anew(old, new) == expected


def test_each_switch_back_publishes_too() -> None:
    # Alias moves are not one-way: going back to an earlier configuration publishes again.
    for before, after, expected in (CASES["NONE->OAUTH"], CASES["API memory"]):
        assert published_anew(stack(after), stack(before)) == expected


def test_only_the_aliased_functions_have_versions() -> None:
    # Every other function is invoked unqualified ($LATEST), which a configuration change
    # updates at once.
    default = stack({})
    versions = default.resources("AWS::Lambda::Version").values()
    assert sorted(spec["Properties"]["FunctionName"]["Ref"] for spec in versions) == sorted(ALIASED)


def test_every_parameter_is_changed_by_some_case() -> None:
    # A parameter added to the template must say here whether changing it publishes anything:
    # otherwise it could reach a function's configuration and leave the alias behind unseen.
    parameters = set(load_template(TEMPLATE)["Parameters"])
    changed = {
        name
        for before, after, _ in CASES.values()
        for name in before.keys() | after.keys()
        if before.get(name) != after.get(name)
    }
    assert sorted(parameters - changed) == []
