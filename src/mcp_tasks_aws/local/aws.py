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
  polls for FAILED / TIMED_OUT / ABORTED executions and calls the reconcile handler with the
  event shape EventBridge would deliver.

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


def _fake_credentials() -> None:
    # moto must see fake credentials and a region before any client exists.
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    os.environ["AWS_ACCESS_KEY_ID"] = "testing"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"  # noqa: S105 - moto's fake credentials
    os.environ.pop("AWS_PROFILE", None)
    os.environ.pop("AWS_SESSION_TOKEN", None)


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

    def watch_executions(self, reconcile: Handler, interval: float = 0.25) -> None:
        """Deliver lost-execution events to `reconcile`, as the template's EventBridge rule does."""
        import boto3

        client = boto3.client("stepfunctions", region_name=REGION)
        seen: set[str] = set()

        def loop() -> None:
            from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext

            while not self._stop.wait(interval):
                for status in ("FAILED", "TIMED_OUT", "ABORTED"):
                    try:
                        page = client.list_executions(
                            stateMachineArn=self.state_machine_arn, statusFilter=status
                        )
                    except Exception:  # the mock may be stopping
                        return
                    for execution in page.get("executions", []):
                        arn = execution["executionArn"]
                        if arn in seen:
                            continue
                        seen.add(arn)
                        event = {
                            "version": "0",
                            "source": "aws.states",
                            "detail-type": "Step Functions Execution Status Change",
                            "region": REGION,
                            "account": ACCOUNT,
                            "detail": {
                                "executionArn": arn,
                                "stateMachineArn": self.state_machine_arn,
                                "name": execution["name"],
                                "status": status,
                            },
                        }
                        try:
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


def start_local_aws(template_path: Path, parameters: dict[str, str] | None = None) -> LocalAws:
    """Start moto and create the template's table, bucket and state machine."""
    _fake_credentials()
    from moto import mock_aws

    from mcp_tasks_aws.local.template import Resolver, load_template

    mock = mock_aws(
        config={
            "stepfunctions": {"execute_state_machine": True},
            "lambda": {"use_docker": False},
        }
    )
    mock.start()
    apply_moto_patches()
    # moto's interpreter logs every failed execution loudly; failures are expected here.
    logging.getLogger("moto.stepfunctions.parser").setLevel(logging.CRITICAL)

    import boto3

    template = load_template(template_path)
    resources: dict[str, Any] = template["Resources"]
    suffix = secrets.token_hex(3)
    stack = f"mcp-tasks-local-{suffix}"
    params = {
        name: str(spec.get("Default", "")) for name, spec in template.get("Parameters", {}).items()
    }
    params.update(parameters or {})
    table_name = f"{stack}-tasks"
    bucket_name = f"{stack}-results"
    machine_name = f"{stack}-tasks"
    machine_arn = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{machine_name}"

    functions = {
        logical: str(spec["Properties"]["Handler"])
        for logical, spec in resources.items()
        if spec["Type"] == "AWS::Serverless::Function"
    }
    refs = {
        **params,
        "AWS::Partition": "aws",
        "AWS::Region": REGION,
        "AWS::AccountId": ACCOUNT,
        "AWS::StackName": stack,
        "AWS::StackId": f"arn:aws:cloudformation:{REGION}:{ACCOUNT}:stack/{stack}/{uuid.uuid4()}",
        "AWS::URLSuffix": "amazonaws.com",
        "AWS::NoValue": "",
        "TaskTable": table_name,
        "ResultBucket": bucket_name,
        "TaskStateMachine": machine_arn,
        **{logical: f"{stack}-{logical}" for logical in functions},
    }

    def attribute(logical: str, name: str) -> str:
        if logical in functions and name == "Arn":
            return f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:{stack}-{logical}"
        if logical == "TaskTable" and name == "Arn":
            return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{table_name}"
        if logical == "ResultBucket" and name == "Arn":
            return f"arn:aws:s3:::{bucket_name}"
        raise KeyError(f"{logical}.{name} is not emulated locally")

    resolve = Resolver(refs, attribute).resolve

    # DynamoDB: the table as the template declares it.
    table = resources["TaskTable"]["Properties"]
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

    boto3.client("s3", region_name=REGION).create_bucket(Bucket=bucket_name)

    # Step Functions: the real ASL file with the template's substitutions.
    machine = resources["TaskStateMachine"]["Properties"]
    definition = (template_path.parent / machine["DefinitionUri"]).read_text()
    for name, value in machine.get("DefinitionSubstitutions", {}).items():
        definition = definition.replace("${" + name + "}", str(resolve(value)))
    iam = boto3.client("iam", region_name=REGION)
    role = iam.create_role(
        RoleName=f"{stack}-machine",
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    boto3.client("stepfunctions", region_name=REGION).create_state_machine(
        name=machine_name, definition=definition, roleArn=role, type=machine.get("Type", "STANDARD")
    )

    # The functions' environment, as the template sets it (secrets are generated locally).
    function_globals = template.get("Globals", {}).get("Function", {})
    environment: dict[str, str] = {}
    for name, value in function_globals.get("Environment", {}).get("Variables", {}).items():
        environment[name] = str(resolve(value))
    environment["MCP_TASKS_STATE_MACHINE_ARN"] = machine_arn
    function_environments: dict[str, dict[str, str]] = {}
    async_settings: dict[str, AsyncSettings] = {}
    for logical in functions:
        properties = resources[logical]["Properties"]
        timeout = properties.get("Timeout", function_globals.get("Timeout", DEFAULT_TIMEOUT_S))
        own = properties.get("Environment", {}).get("Variables", {})
        function_environments[logical] = {
            **environment,
            **{name: str(resolve(value)) for name, value in own.items()},
        }
        invoke_config = properties.get("EventInvokeConfig", {})
        on_failure = invoke_config.get("DestinationConfig", {}).get("OnFailure", {})
        destination = None
        if on_failure:
            try:
                destination = str(resolve(on_failure["Destination"]))
            except KeyError:  # a queue or topic this stack does not create: records are dropped
                destination = f"not-emulated:{on_failure.get('Type', '?')}"
        async_settings[logical] = AsyncSettings(
            arn=attribute(logical, "Arn"),
            timeout_s=float(resolve(timeout)),
            maximum_retry_attempts=int(invoke_config.get("MaximumRetryAttempts", 2)),
            on_failure=destination,
        )
    return LocalAws(
        stack_name=stack,
        table_name=table_name,
        bucket_name=bucket_name,
        state_machine_arn=machine_arn,
        environment=environment,
        function_handlers=functions,
        function_environments=function_environments,
        async_settings=async_settings,
        _mock=mock,
    )
