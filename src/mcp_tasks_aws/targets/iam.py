"""Least privilege from a declaration: exactly the resources its tools name.

`managed_parameters` gives the template's seven `Managed*` parameters (template.yaml grants
each to the functions that make the call, and nothing when a list is empty):

- `ManagedFunctionArns`: every `lambda` target (the qualified ARN when a qualifier is
  declared): `lambda:InvokeFunction` for the API (sync) and the worker (task legs).
- `ManagedWorkflowArns`: every Standard `stateMachine` target: `states:StartExecution` for
  the API, and the end-of-execution rule that reaches the reconciler.
- `ManagedExecutionArns`: their executions, `arn:...:execution:NAME:*` (named after task
  ids): `states:StopExecution` (API), `states:DescribeExecution` (API, for a start that
  failed to answer; reconciler; sweeper).
- `ManagedExpressArns`: every Express `stateMachine` target: `states:StartSyncExecution`
  (API, worker).
- `ManagedSecretArns`: every `secretArn` of an HTTP target's auth:
  `secretsmanager:GetSecretValue` (API, worker).
- `ManagedApiArns`: every route a SigV4 (`execute-api`) HTTP target calls,
  `arn:...:execute-api:REGION:ACCOUNT:API_ID/STAGE/METHOD/PATH` with each `{placeholder}` as
  `*`: `execute-api:Invoke` (API, worker). The URL's first path segment is the stage of a
  REST API (or a named HTTP API stage), or already the path on an HTTP API's `$default`
  stage; a URL cannot say which, so both routes are granted, on the one declared API.
- `ManagedFunctionUrlArns`: the function behind each SigV4 function URL (`service: lambda`,
  `auth.function`): `lambda:InvokeFunctionUrl` and `lambda:InvokeFunction` (a function URL
  made since October 2025 checks both) (API, worker).

A bare function name, or an API, becomes an ARN with the declaration's `aws.region` and
`aws.account` (a DeclarationError says which is missing); a SigV4 target IAM cannot name (a
custom domain, a function URL without its function, another service) is a DeclarationError
too, at build rather than AccessDenied at call time. No `*` resource is ever produced.
scripts/sam_build.py prints these as parameter overrides (`parameter_overrides`).
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Final

from mcp_tasks_aws.targets.models import (
    FUNCTION_ARN,
    REGION_PATTERN,
    Declaration,
    DeclarationError,
    HttpTarget,
    LambdaTarget,
    StateMachineTarget,
    ToolDeclaration,
)

PARAMETERS: Final = (
    "ManagedFunctionArns",
    "ManagedWorkflowArns",
    "ManagedExecutionArns",
    "ManagedExpressArns",
    "ManagedSecretArns",
    "ManagedApiArns",
    "ManagedFunctionUrlArns",
)
EXECUTE_API_HOST: Final = re.compile(
    rf"(?P<api>[a-z0-9]+)(?:-vpce-[a-z0-9]+)?\.execute-api\.(?P<region>{REGION_PATTERN})"
    r"\.(?:vpce\.)?amazonaws\.com(?:\.cn)?"
)
_PLACEHOLDER: Final = re.compile(r"\{[^}/]*\}")


def function_arn(declaration: Declaration, tool: str, target: LambdaTarget) -> str:
    """The ARN IAM needs to invoke `target` (qualified when it is invoked with a qualifier)."""
    if FUNCTION_ARN.fullmatch(target.unqualified):
        base = target.unqualified
    else:
        place = declaration.aws
        for field, value in (("aws.region", place.region), ("aws.account", place.account)):
            if value is None:
                raise DeclarationError(
                    declaration.file,
                    field,
                    f"needed to name function {target.function!r} (tool {tool!r}) in the IAM "
                    "policy: give it, or declare the function's ARN",
                )
        base = f"arn:{place.partition}:lambda:{place.region}:{place.account}:function:"
        base += target.function
    qualifier = target.effective_qualifier
    return f"{base}:{qualifier}" if qualifier else base


def api_arns(declaration: Declaration, tool: ToolDeclaration, target: HttpTarget) -> list[str]:
    """The execute-api routes a SigV4 `execute-api` target calls (module docstring)."""
    url = urllib.parse.urlsplit(target.url)
    host = EXECUTE_API_HOST.fullmatch(url.hostname or "")
    if host is None:
        raise DeclarationError(
            declaration.file,
            "target.url",
            "sigv4 for execute-api: IAM names the API by its id, which a custom domain does "
            "not say: use the API's own URL (https://API_ID.execute-api.REGION.amazonaws.com/"
            "STAGE/...)",
            tool=tool.name,
        )
    if declaration.aws.account is None:
        raise DeclarationError(
            declaration.file,
            "aws.account",
            f"needed to name the API of tool {tool.name!r} in the IAM policy: give it",
        )
    api = f"arn:{declaration.aws.partition}:execute-api:{host['region']}:"
    api += f"{declaration.aws.account}:{host['api']}"
    path = _PLACEHOLDER.sub("*", url.path).strip("/")
    method = target.method
    routes = [f"{api}/$default/{method}/{path}"]
    if path:
        stage, _, rest = path.partition("/")
        routes.append(f"{api}/{stage}/{method}/{rest}")
    return routes


def function_url_arn(declaration: Declaration, tool: ToolDeclaration, target: HttpTarget) -> str:
    """The function behind a SigV4 function URL (`auth.function`), as IAM names it."""
    function = target.auth.function
    if function is None:
        raise DeclarationError(
            declaration.file,
            "target.auth.function",
            "sigv4 for a function URL needs it: the function behind the URL, which IAM must "
            "name (lambda:InvokeFunctionUrl)",
            tool=tool.name,
        )
    if FUNCTION_ARN.fullmatch(function):
        named = LambdaTarget(kind="lambda", function=function)
    else:
        name, _, qualifier = function.partition(":")
        named = LambdaTarget(kind="lambda", function=name, qualifier=qualifier or None)
    return function_arn(declaration, tool.name, named)


def _sigv4(
    declaration: Declaration, tool: ToolDeclaration, target: HttpTarget
) -> tuple[str, list[str]]:
    service = target.auth.service or "execute-api"
    if service == "execute-api":
        return "ManagedApiArns", api_arns(declaration, tool, target)
    if service == "lambda":
        return "ManagedFunctionUrlArns", [function_url_arn(declaration, tool, target)]
    raise DeclarationError(
        declaration.file,
        "target.auth.service",
        f"no IAM policy is derived for sigv4 service {service!r} (execute-api and lambda "
        "are): call it through one of those",
        tool=tool.name,
    )


def managed_parameters(declaration: Declaration) -> dict[str, list[str]]:
    """The template's Managed* parameters for `declaration` (each sorted, no duplicates)."""
    found: dict[str, set[str]] = {name: set() for name in PARAMETERS}
    for tool in declaration.tools:
        target = tool.target
        if isinstance(target, LambdaTarget):
            found["ManagedFunctionArns"].add(function_arn(declaration, tool.name, target))
        elif isinstance(target, StateMachineTarget):
            if target.type == "STANDARD":
                found["ManagedWorkflowArns"].add(target.arn)
                executions = target.arn.replace(":stateMachine:", ":execution:", 1)
                found["ManagedExecutionArns"].add(f"{executions}:*")
            else:
                found["ManagedExpressArns"].add(target.arn)
        elif isinstance(target, HttpTarget):
            if target.auth.secret_arn is not None:
                found["ManagedSecretArns"].add(target.auth.secret_arn)
            if target.auth.type == "sigv4":
                parameter, arns = _sigv4(declaration, tool, target)
                found[parameter].update(arns)
    return {name: sorted(values) for name, values in found.items()}


def parameter_overrides(parameters: dict[str, list[str]]) -> list[str]:
    """`Name=a,b` items for `sam deploy --parameter-overrides` (empty lists left out)."""
    return [f"{name}={','.join(values)}" for name, values in parameters.items() if values]
