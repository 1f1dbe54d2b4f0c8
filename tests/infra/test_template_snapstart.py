"""SnapStart in template.yaml: on by default for the API function and the worker (never the
reconciler), off with `SnapStart=Disabled`; every caller reaches those two functions through
their `live` alias (the published version a snapshot belongs to), whatever the switch says;
and each role has its own memory size.

Checked on the transformed template (aws-sam-translator, offline), as `test_template` does.
"""

from __future__ import annotations

from typing import Any

import pytest

from infra.test_template import (
    TEMPLATE,
    Stack,
    evaluate,
    load_template,
    parameter_values,
    transform,
)


def stack_with(**parameters: Any) -> Stack:
    template = load_template(TEMPLATE)
    output = transform(template, {"AuthMode": "NONE", **parameters})
    values = parameter_values(template, {"AuthMode": "NONE", **parameters})
    conditions: dict[str, Any] = dict(output.get("Conditions", {}))
    decided = {c: bool(evaluate(e, values, conditions)) for c, e in conditions.items()}
    return Stack("snapstart", output, values, decided)


def snap_start(stack: Stack, logical: str) -> Any:
    return stack.choose(stack.resources()[logical]["Properties"]).get("SnapStart")


@pytest.fixture(scope="module")
def default() -> Stack:
    return stack_with()


def test_snapstart_is_on_by_default_for_the_api_and_the_worker(default: Stack) -> None:
    for logical in ("ApiFunction", "WorkerFunction"):
        assert snap_start(default, logical) == {"ApplyOn": "PublishedVersions"}, logical
    assert snap_start(default, "ReconcileFunction") is None


def test_snapstart_disabled_leaves_every_function_without_it() -> None:
    stack = stack_with(SnapStart="Disabled")
    for logical in ("ApiFunction", "WorkerFunction", "ReconcileFunction"):
        assert snap_start(stack, logical) is None, logical


@pytest.mark.parametrize("switch", ["Enabled", "Disabled"])
def test_callers_reach_the_live_alias_either_way(switch: str) -> None:
    stack = stack_with(SnapStart=switch)
    resources = stack.resources()
    aliases = {
        spec["Properties"]["FunctionName"]["Ref"]: logical
        for logical, spec in stack.resources("AWS::Lambda::Alias").items()
        if spec["Properties"]["Name"] == "live"
    }
    assert set(aliases) == {"ApiFunction", "WorkerFunction", "DurableFunction"}
    api_alias, worker_alias = {"Ref": aliases["ApiFunction"]}, {"Ref": aliases["WorkerFunction"]}
    durable_alias = {"Ref": aliases["DurableFunction"]}
    assert resources["McpIntegration"]["Properties"]["IntegrationUri"] == api_alias
    api = stack.choose(resources["ApiFunction"]["Properties"])
    assert api["Environment"]["Variables"]["MCP_TASKS_WORKER_FUNCTION"] == worker_alias
    # A durable execution runs the version it started on, so a start must name the alias.
    assert api["Environment"]["Variables"]["MCP_TASKS_DURABLE_FUNCTION"] == durable_alias
    machine = resources["TaskStateMachine"]["Properties"]
    assert machine["DefinitionSubstitutions"]["WorkerFunctionArn"] == worker_alias
    (config,) = [
        c["Properties"]
        for c in stack.resources("AWS::Lambda::EventInvokeConfig").values()
        if c["Properties"]["FunctionName"] == {"Ref": "WorkerFunction"}
    ]
    assert config["Qualifier"] == "live"  # the first legs' settings apply to what they invoke


def test_each_role_has_its_own_memory_size() -> None:
    stack = stack_with(ApiMemorySize="256", WorkerMemorySize="1024")
    resources = stack.resources()
    assert resources["ApiFunction"]["Properties"]["MemorySize"] == {"Ref": "ApiMemorySize"}
    assert resources["WorkerFunction"]["Properties"]["MemorySize"] == {"Ref": "WorkerMemorySize"}
    assert stack.values["ApiMemorySize"] == "256"
