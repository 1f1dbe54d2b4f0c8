"""The trimmed service models in `aws/models/` are what `scripts/trim_aws_models.py` writes from
the botocore installed here, and our clients have every operation the adapters call.

A new client call in `aws/` fails here until its operation is in
`aws.loader.TRIMMED_OPERATIONS` and the models are regenerated; a botocore upgrade that
changes those operations fails here until they are regenerated.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import botocore.session
import pytest

from mcp_tasks_aws.aws.clients import Clients

ROOT = Path(__file__).resolve().parents[2]
ADAPTERS = ROOT / "src" / "mcp_tasks_aws" / "aws"
SERVICE_OF = {
    "dynamodb.py": "dynamodb",
    "sessions.py": "dynamodb",
    "lambda_legs.py": "lambda",
    "durable.py": "lambda",
    "stepfunctions.py": "stepfunctions",
    "secrets.py": "secretsmanager",
    "s3.py": "s3",
    "targets.py": "stepfunctions",
}
"""The service whose client each adapter module holds as `self.client`."""


def client_calls(path: Path) -> set[str]:
    """The `self.client.<method>` names a module uses."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "client"
            and isinstance(node.value.value, ast.Name)
            and node.value.value.id == "self"
            and node.attr != "meta"
        ):
            found.add(node.attr)
    # Module helpers an adapter hands its client (`aws.stepfunctions.send_task_success`).
    for function in ast.parse(path.read_text()).body:
        if isinstance(function, ast.FunctionDef) and any(
            a.arg == "client" for a in function.args.args
        ):
            for node in ast.walk(function):
                if (
                    isinstance(node, ast.Attribute)
                    and isinstance(node.value, ast.Name)
                    and node.value.id == "client"
                ):
                    found.add(node.attr)
    return found


def fetched_client_calls(path: Path) -> set[tuple[str, str]]:
    """(service, method) for each `<name> = self.clients.get("<service>")` followed, in the
    same function, by `<name>.<method>`: how `AwsTargets` reaches the clients of the targets."""
    found = set()
    for function in ast.walk(ast.parse(path.read_text())):
        if not isinstance(function, ast.FunctionDef):
            continue
        services: dict[str, str] = {}
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Assign)
                and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Attribute)
                and node.value.func.attr == "get"
                and isinstance(node.value.func.value, ast.Attribute)
                and node.value.func.value.attr == "clients"
                and node.value.args
                and isinstance(node.value.args[0], ast.Constant)
            ):
                services[node.targets[0].id] = str(node.value.args[0].value)
        for node in ast.walk(function):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in services
            ):
                found.add((services[node.value.id], node.attr))
    return found


def test_clients_fetched_by_service_have_every_operation_called_on_them() -> None:
    session = botocore.session.get_session()
    session.set_config_variable("region", "us-east-1")
    session.set_credentials("testing", "testing")
    clients = Clients(session)
    calls = {call for p in ADAPTERS.glob("*.py") for call in fetched_client_calls(p)}
    assert ("lambda", "invoke") in calls  # the managed targets' calls are found at all
    missing = sorted(c for c in calls if not hasattr(clients.get(c[0]), c[1]))
    assert missing == [], f"add {missing} to aws.loader.TRIMMED_OPERATIONS"


def test_every_adapter_module_with_a_client_is_mapped_to_its_service() -> None:
    holding = {p.name for p in ADAPTERS.glob("*.py") if client_calls(p)}
    assert holding == set(SERVICE_OF)


@pytest.mark.parametrize("module", sorted(SERVICE_OF))
def test_our_clients_have_every_operation_the_adapters_call(module: str) -> None:
    session = botocore.session.get_session()
    session.set_config_variable("region", "us-east-1")
    session.set_credentials("testing", "testing")
    client = Clients(session).get(SERVICE_OF[module])
    missing = sorted(m for m in client_calls(ADAPTERS / module) if not hasattr(client, m))
    assert missing == [], (
        f"{module} calls {missing}: add the operations to aws.loader.TRIMMED_OPERATIONS "
        "and run scripts/trim_aws_models.py"
    )


def test_the_trimmed_models_are_up_to_date() -> None:
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import trim_aws_models
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    assert trim_aws_models.main(["--check"]) == 0, "run scripts/trim_aws_models.py"
