"""Least privilege from a declaration: exactly the resources its tools name.

`managed_parameters` gives the template's five `Managed*` parameters (template.yaml grants
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

A bare function name becomes an ARN with the declaration's `aws.region` and `aws.account`
(a DeclarationError says which is missing). No `*` resource is ever produced. scripts/sam_build.py
prints these as parameter overrides (`parameter_overrides`).
"""

from __future__ import annotations

from typing import Final

from mcp_tasks_aws.targets.models import (
    FUNCTION_ARN,
    Declaration,
    DeclarationError,
    HttpTarget,
    LambdaTarget,
    StateMachineTarget,
)

PARAMETERS: Final = (
    "ManagedFunctionArns",
    "ManagedWorkflowArns",
    "ManagedExecutionArns",
    "ManagedExpressArns",
    "ManagedSecretArns",
)


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
        elif isinstance(target, HttpTarget) and target.auth.secret_arn is not None:
            found["ManagedSecretArns"].add(target.auth.secret_arn)
    return {name: sorted(values) for name, values in found.items()}


def parameter_overrides(parameters: dict[str, list[str]]) -> list[str]:
    """`Name=a,b` items for `sam deploy --parameter-overrides` (empty lists left out)."""
    return [f"{name}={','.join(values)}" for name, values in parameters.items() if values]
