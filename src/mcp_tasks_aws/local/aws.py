"""AWS for the embedded stack: moto in-process, resources built from `template.yaml`.

- DynamoDB: the task table with its key schema and TTL setting, from `TaskTable`.
- S3: the result bucket.
- Step Functions: the state machine from the real ASL file (`DefinitionUri`), its
  `DefinitionSubstitutions` resolved, run by moto's interpreter (`execute_state_machine`).
- Lambda: moto cannot run code without Docker, so every invoke is routed to the real handler
  modules, in-process (`local.lambdas`, by a patch in `local.moto_patches`): the state
  machine's `lambda:invoke` synchronously (exceptions become the `Unhandled` error envelope AWS
  returns, so Retry/Catch behave as deployed), the API's direct legs (`InvocationType=Event`)
  in a thread each, with the function's retries and on-failure destination from the template.
  Either way each function's `Timeout` from the template (`function_timeouts`) holds: a
  handler still running then is interrupted and the invoker gets Lambda's `Sandbox.Timedout`
  error.
- EventBridge: moto does not deliver "Execution Status Change" events, so a watcher thread
  polls for FAILED / TIMED_OUT / ABORTED executions (and every end of a declared workflow's
  machine, see `local.managed`) and calls the reconcile handler with the event shape
  EventBridge would deliver.

The other gaps between moto and AWS the stack relies on (atomic conditional writes, a
StopExecution right after StartExecution) are closed in `local.moto_patches` too.

Call :func:`start_local_aws` before anything creates a boto3 client.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_tasks_aws.local.lambdas import DEFAULT_TIMEOUT_S, LAMBDAS, AsyncSettings
from mcp_tasks_aws.local.moto_patches import apply_moto_patches

REGION = "us-east-1"
ACCOUNT = "123456789012"
logger = logging.getLogger("mcp_tasks_aws.local")

Handler = Callable[[dict[str, Any], Any], Any]
Resolve = Callable[[Any], Any]
"""Evaluates a template value's intrinsics (Ref, GetAtt, Sub, ...) against one stack's names."""


@dataclass
class LocalAws:
    """The moto resources of one embedded stack, named uniquely so stacks can coexist."""

    stack_name: str
    table_name: str
    bucket_name: str
    state_machine_arn: str
    environment: dict[str, str]
    function_handlers: dict[str, str]  # logical id -> "handlers.module.function"
    function_environments: dict[str, dict[str, str]] = field(default_factory=dict)
    """Logical id -> the function's environment (Globals and its own, as the template sets)."""
    async_settings: dict[str, AsyncSettings] = field(default_factory=dict)
    """Logical id -> the function's timeout and asynchronous-invoke settings."""
    _mock: Any = None
    _watcher: threading.Thread | None = None
    _stop: threading.Event = field(default_factory=threading.Event)

    @property
    def function_timeouts(self) -> dict[str, float]:
        """Logical id -> the function's `Timeout` in seconds."""
        return {logical: settings.timeout_s for logical, settings in self.async_settings.items()}

    def function_name(self, logical_id: str) -> str:
        return f"{self.stack_name}-{logical_id}"

    def register(self, logical_id: str, handler: Handler) -> None:
        name = self.function_name(logical_id)
        LAMBDAS.handlers[name] = handler
        if logical_id in self.async_settings:
            LAMBDAS.settings[name] = self.async_settings[logical_id]

    def watch_executions(
        self, reconcile: Handler, interval: float = 0.25, workflows: list[str] | None = None
    ) -> None:
        """Deliver execution ends to `reconcile`, as the template's EventBridge rules do: the
        task runner's lost executions (FAILED, TIMED_OUT, ABORTED) and, for the declared
        workflows' machines (`workflows`), every end, SUCCEEDED included, with its output,
        error and cause as EventBridge carries them."""
        import boto3

        client: Any = boto3.client("stepfunctions", region_name=REGION)
        seen: set[str] = set()
        watched: list[tuple[str, tuple[str, ...]]] = [
            (self.state_machine_arn, ("FAILED", "TIMED_OUT", "ABORTED"))
        ]
        watched += [
            (arn, ("SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED")) for arn in workflows or []
        ]

        def event_of(machine: str, execution: dict[str, Any], status: str) -> dict[str, Any]:
            detail: dict[str, Any] = {
                "executionArn": execution["executionArn"],
                "stateMachineArn": machine,
                "name": execution["name"],
                "status": status,
            }
            if machine != self.state_machine_arn:
                described = client.describe_execution(executionArn=execution["executionArn"])
                detail.update(
                    output=described.get("output"),
                    outputDetails={"included": True},
                    error=described.get("error"),
                    cause=described.get("cause"),
                )
            return {
                "version": "0",
                "source": "aws.states",
                "detail-type": "Step Functions Execution Status Change",
                "region": REGION,
                "account": ACCOUNT,
                "detail": detail,
            }

        def loop() -> None:
            from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext

            while not self._stop.wait(interval):
                for machine, statuses in watched:
                    for status in statuses:
                        try:
                            page = client.list_executions(
                                stateMachineArn=machine, statusFilter=status
                            )
                        except Exception:  # the mock may be stopping
                            return
                        for execution in page.get("executions", []):
                            arn = execution["executionArn"]
                            if arn in seen:
                                continue
                            seen.add(arn)
                            try:
                                event = event_of(machine, execution, status)
                                reconcile(event, LocalLambdaContext(function_name="reconcile"))
                            except Exception:
                                logger.exception("local reconcile failed for %s", execution["name"])

        self._watcher = threading.Thread(target=loop, name="local-eventbridge", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=5)
        # Legs still running would call AWS once the mock is gone: give them a moment.
        if not LAMBDAS.drain(timeout_s=5):
            logger.warning("asynchronous invokes still running as the local stack stops")
        for logical_id in self.function_handlers:
            LAMBDAS.handlers.pop(self.function_name(logical_id), None)
            LAMBDAS.settings.pop(self.function_name(logical_id), None)
        if self._mock is not None:
            self._mock.stop()
            self._mock = None


def start_local_aws(
    template_path: Path, parameters: dict[str, str] | None = None, *, mock: Any = None
) -> LocalAws:
    """Start moto (or take `mock`, from `start_mock`) and create the template's table, bucket
    and state machine."""
    # Ordering: moto is started first (fake credentials, then the moto import, then its
    # patches), so that every boto3 client the steps below make goes to the mock; a client
    # made before would reach the real AWS endpoint. The resources do not depend on each other.
    mock = _start_moto() if mock is None else _patched(mock)
    from mcp_tasks_aws.local.template import load_template

    template = load_template(template_path)
    names = _name_resources(template)
    resolve = _template_resolver(template, names, parameters or {})
    _create_task_table(template, names.table)
    _create_result_bucket(names.bucket)
    _create_state_machine(template, template_path.parent, names, resolve)
    environment, function_environments = _function_environments(template, names, resolve)
    return LocalAws(
        stack_name=names.stack,
        table_name=names.table,
        bucket_name=names.bucket,
        state_machine_arn=names.machine_arn,
        environment=environment,
        function_handlers=names.functions,
        function_environments=function_environments,
        async_settings=_async_settings(template, names, resolve),
        _mock=mock,
    )


@dataclass(frozen=True)
class _ResourceNames:
    """What one stack calls the template's resources: unique per stack, so stacks coexist."""

    stack: str
    functions: dict[str, str]  # logical id -> "handlers.module.function", from the template

    @property
    def table(self) -> str:
        return f"{self.stack}-tasks"

    @property
    def bucket(self) -> str:
        return f"{self.stack}-results"

    @property
    def machine(self) -> str:
        return f"{self.stack}-tasks"

    @property
    def machine_arn(self) -> str:
        return f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{self.machine}"

    def attribute(self, logical: str, name: str) -> str:
        """`Fn::GetAtt` for the resources the stack creates (their `Arn`)."""
        if logical in self.functions and name == "Arn":
            return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{self.stack}-{logical}"
        if logical == "TaskTable" and name == "Arn":
            return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{self.table}"
        if logical == "ResultBucket" and name == "Arn":
            return f"arn:aws:s3:::{self.bucket}"
        raise KeyError(f"{logical}.{name} is not emulated locally")


def _fake_credentials() -> None:
    # moto must see fake credentials and a region before any client exists.
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    os.environ["AWS_ACCESS_KEY_ID"] = "testing"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"  # noqa: S105 - moto's fake credentials
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)


def _start_moto() -> Any:
    """moto in this process, patched where it differs from AWS; returns the started mock."""
    return _patched(start_mock())


def start_mock() -> Any:
    """moto started in this process, not yet patched (`start_local_aws(mock=...)` does that):
    from here on every boto3 client made goes to the mock. The cheap part of the start (a
    third of a second, the patches and resources take seconds), so that a tools module can be
    imported, and fail, before the rest (`EmbeddedStack`)."""
    _fake_credentials()  # first: moto is imported, and clients are made, only after this
    from moto import mock_aws

    mock = mock_aws(
        config={
            "stepfunctions": {"execute_state_machine": True},
            "lambda": {"use_docker": False},
        }
    )
    mock.start()
    return mock


def _patched(mock: Any) -> Any:
    apply_moto_patches()
    # moto's interpreter logs every failed execution loudly; failures are expected here.
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)
    return mock


def _name_resources(template: dict[str, Any]) -> _ResourceNames:
    """Fresh names for a new stack, and the template's functions by logical id."""
    functions = {
        logical: str(spec["Properties"]["Handler"])
        for logical, spec in template["Resources"].items()
        if spec["Type"] == "AWS::Serverless::Function"
    }
    return _ResourceNames(stack=f"mcp-tasks-local-{secrets.token_hex(3)}", functions=functions)


def _template_resolver(
    template: dict[str, Any], names: _ResourceNames, parameters: dict[str, str]
) -> Resolve:
    """Refs to the template's parameters (defaults, then `parameters`), pseudo parameters and
    the stack's resources; GetAtt as `_ResourceNames.attribute`."""
    from mcp_tasks_aws.local.template import Resolver

    params = {
        name: str(spec.get("Default", "")) for name, spec in template.get("Parameters", {}).items()
    }
    params.update(parameters)
    stack = names.stack
    refs = {
        **params,
        "AWS::Partition": "aws",
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        "AWS::StackName": stack,
        "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{stack}/{uuid.uuid4()}",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::NoValue": "",
        "TaskTable": names.table,
        "ResultBucket": names.bucket,
        "TaskStateMachine": names.machine_arn,
        **{logical: f"{stack}-{logical}" for logical in names.functions},
        # `!Ref Fn.Alias` (AutoPublishAlias): the function's `live` alias, which locally is the
        # function itself (no versions here).
        **{f"{logical}.Alias": f"{stack}-{logical}" for logical in names.functions},
    }
    # The one condition the functions' settings follow locally: which front door serves them
    # (the template's `FrontDoor`); every other Fn::If takes its false branch, as before.
    conditions = {"StreamingDoor": params.get("FrontDoor") == "STREAMING"}
    return Resolver(refs, names.attribute, conditions).resolve


def _create_task_table(template: dict[str, Any], table_name: str) -> None:
    """DynamoDB: the table as the template's `TaskTable` declares it (keys, indexes, TTL)."""
    import boto3

    table = template["Resources"]["TaskTable"]["Properties"]
    dynamodb = boto3.client("dynamodb", region_name=REGION)
    dynamodb.create_table(
        TableName=table_name,
        AttributeDefinitions=table["AttributeDefinitions"],
        KeySchema=table["KeySchema"],
        BillingMode=table.get("BillingMode", "PAY_PER_REQUEST"),
        **(
            {"GlobalSecondaryIndexes": table["GlobalSecondaryIndexes"]}
            if table.get("GlobalSecondaryIndexes")
            else {}
        ),
    )
    ttl = table.get("TimeToLiveSpecification")
    if ttl:
        dynamodb.update_time_to_live(TableName=table_name, TimeToLiveSpecification=ttl)


def _create_result_bucket(bucket_name: str) -> None:
    """S3: the bucket large task results are kept in."""
    import boto3

    boto3.client("s3", region_name=REGION).create_bucket(Bucket=bucket_name)


def _create_state_machine(
    template: dict[str, Any], template_dir: Path, names: _ResourceNames, resolve: Resolve
) -> None:
    """Step Functions: the real ASL file with the template's substitutions, and a role for it."""
    import boto3

    machine = template["Resources"]["TaskStateMachine"]["Properties"]
    definition = (template_dir / machine["DefinitionUri"]).read_text()
    for name, value in machine.get("DefinitionSubstitutions", {}).items():
        definition = definition.replace("${" + name + "}", str(resolve(value)))
    iam = boto3.client("iam", region_name=REGION)  # moto's create_state_machine wants a role
    role = iam.create_role(
        RoleName=f"{names.stack}-machine",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    boto3.client("stepfunctions", region_name=REGION).create_state_machine(
        name=names.machine,
        definition=definition,
        roleArn=role,
        type=machine.get("Type", "STANDARD"),
    )


def _function_environments(
    template: dict[str, Any], names: _ResourceNames, resolve: Resolve
) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """The functions' environment as the template sets it: the Globals' (with the state
    machine's ARN), and each function's (Globals, then its own), by logical id."""
    function_globals = template.get("Globals", {}).get("Function", {})
    environment: dict[str, str] = {}
    for name, value in function_globals.get("Environment", {}).get("Variables", {}).items():
        environment[name] = str(resolve(value))
    environment["MCP_TASKS_STATE_MACHINE_ARN"] = names.machine_arn
    function_environments: dict[str, dict[str, str]] = {}
    for logical in names.functions:
        own = template["Resources"][logical]["Properties"].get("Environment", {})
        function_environments[logical] = {
            **environment,
            **{name: str(resolve(value)) for name, value in own.get("Variables", {}).items()},
        }
    return environment, function_environments


def _async_settings(
    template: dict[str, Any], names: _ResourceNames, resolve: Resolve
) -> dict[str, AsyncSettings]:
    """Each function's `Timeout` and asynchronous-invoke settings (`EventInvokeConfig`)."""
    function_globals = template.get("Globals", {}).get("Function", {})
    settings: dict[str, AsyncSettings] = {}
    for logical in names.functions:
        properties = template["Resources"][logical]["Properties"]
        timeout = properties.get("Timeout", function_globals.get("Timeout", DEFAULT_TIMEOUT_S))
        invoke_config = properties.get("EventInvokeConfig", {})
        on_failure = invoke_config.get("DestinationConfig", {}).get("OnFailure", {})
        destination = None
        if on_failure:
            try:
                destination = str(resolve(on_failure["Destination"]))
            except KeyError:  # a queue or topic this stack does not create: records are dropped
                destination = f"not-emulated:{on_failure.get('Type', '?')}"
        settings[logical] = AsyncSettings(
            arn=names.attribute(logical, "Arn"),
            timeout_s=float(resolve(timeout)),
            maximum_retry_attempts=int(invoke_config.get("MaximumRetryAttempts", 2)),
            on_failure=destination,
        )
    return settings
