"""Managed targets in the embedded stack: a declaration's resources with no AWS account.

For each declaration the stack serves (`MCP_TASKS_TOOLS=tools.yaml`, or a tools module that
includes one), :func:`start_managed`:

- registers the declared Lambda functions as in-process handlers from the module the
  declaration names for local use (`local.module`, looked up beside the declaration:
  `functions` is functions.py in its folder; attribute = the function's name with `-` as
  `_`), so moto's `Invoke` and the state machines' `lambda:invoke` reach them;
- creates the declared state machines in moto from their ASL files (`definition`), with
  `${AskFunctionArn}` (and `${<LogicalId>Arn}` of the stack's functions) substituted. A
  Standard machine runs as declared; an Express one is created Standard, since moto has no
  `StartSyncExecution`, and `LocalTargets.run_express` runs it and waits for its end within
  the inline deadline (`EXPRESS_DEADLINE_S`);
- serves `local.httpStub` (a WSGI app, `module:attribute`, its module beside the declaration
  too) on 127.0.0.1 and sends every http target there
  (`LocalTargets.fetch` keeps the path and query, swaps scheme and host);
- binds the declaration's tools to `LocalTargets` (the AWS adapter on the stack's moto).

The stack's EventBridge stand-in (`local.aws.LocalAws.watch_executions`) delivers the ends of
the Standard machines (`ManagedLocal.workflow_arns`) to the reconciler. A declaration that
cannot be served locally (no stand-in for a function, no ASL file, an ARN moto would not
give the machine) is a one-line `ToolsModuleError`.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.aws.targets import AwsTargets
from mcp_tasks_aws.config import ToolsModuleError, import_tools_file
from mcp_tasks_aws.local.aws import ACCOUNT, REGION, LocalAws
from mcp_tasks_aws.local.lambdas import LAMBDAS, function_name_of
from mcp_tasks_aws.targets.models import Declaration, LambdaTarget, StateMachineTarget
from mcp_tasks_aws.targets.ports import HttpAnswer, HttpRequest, SyncRun
from mcp_tasks_aws.targets.tools import bindings_of
from mcp_tasks_aws.tools.registry import ToolSet

EXPRESS_DEADLINE_S: Final = 25.0
"""How long a local Express run may take (the API function's timeout is 29 s)."""
_POLL_S: Final = 0.02


class LocalTargets(AwsTargets):
    """`AwsTargets` on the stack's moto, with Express runs emulated and HTTP sent to the stub."""

    def __init__(self, clients: Clients, *, stub_url: str | None, express: dict[str, str]) -> None:
        super().__init__(clients)
        self.stub_url = stub_url
        self.express = express

    def run_express(self, machine_arn: str, payload: str) -> SyncRun:
        client = self.clients.get("stepfunctions")
        local = self.express.get(machine_arn, machine_arn)
        try:
            started = client.start_execution(
                stateMachineArn=local, name=f"sync-{uuid.uuid4().hex}", input=payload
            )
        except Exception:
            # What StartSyncExecution would refuse (a missing machine): the same refusal.
            return super().run_express(machine_arn, payload)
        deadline = time.monotonic() + EXPRESS_DEADLINE_S
        while True:
            described = client.describe_execution(executionArn=started["executionArn"])
            if described["status"] != "RUNNING":
                return SyncRun(
                    str(described["status"]),
                    described.get("output"),
                    described.get("error"),
                    described.get("cause"),
                )
            if time.monotonic() > deadline:
                client.stop_execution(executionArn=started["executionArn"])
                return SyncRun("TIMED_OUT", None, "States.Timeout", "the local run took too long")
            time.sleep(_POLL_S)

    def fetch(self, request: HttpRequest) -> HttpAnswer:
        if self.stub_url is not None:
            target = urllib.parse.urlsplit(request.url)
            stub = urllib.parse.urlsplit(self.stub_url)
            url = urllib.parse.urlunsplit(
                (stub.scheme, stub.netloc, target.path, target.query, target.fragment)
            )
            request = request._replace(url=url)
        return super().fetch(request)


@dataclass
class ManagedLocal:
    """What the stack started for its declarations; `stop` undoes it."""

    workflow_arns: list[str] = field(default_factory=list)
    functions: list[str] = field(default_factory=list)
    stub: Any = None
    _thread: threading.Thread | None = None

    def stop(self) -> None:
        if self.stub is not None:
            self.stub.shutdown()
            self.stub.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        for name in self.functions:
            LAMBDAS.handlers.pop(name, None)


def declarations_of(toolset: ToolSet) -> list[Declaration]:
    return [binding.declaration for binding in bindings_of(toolset)]


def start_managed(toolset: ToolSet, aws: LocalAws, clients: Clients) -> ManagedLocal | None:
    """Stand in for `toolset`'s declared resources (None: it declares none)."""
    declarations = declarations_of(toolset)
    if not declarations:
        return None
    managed = ManagedLocal()
    try:
        for declaration in declarations:
            _start_one(declaration, toolset, aws, clients, managed)
    except BaseException:
        managed.stop()
        raise
    return managed


def _start_one(
    declaration: Declaration,
    toolset: ToolSet,
    aws: LocalAws,
    clients: Clients,
    managed: ManagedLocal,
) -> None:
    file = declaration.file
    stand_ins = declaration.local.module
    module = _module(declaration, "local.module", stand_ins) if stand_ins else None
    express: dict[str, str] = {}
    for tool in declaration.tools:
        target = tool.target
        if isinstance(target, LambdaTarget):
            name, handler = _stand_in(file, tool.name, target, module)
            LAMBDAS.handlers[name] = handler
            managed.functions.append(name)
        elif isinstance(target, StateMachineTarget):
            local = _create_machine(file, tool.name, target, aws)
            if target.type == "STANDARD":
                managed.workflow_arns.append(local)
            else:
                express[target.arn] = local
    stub_url = None
    if declaration.local.http_stub:
        managed.stub, managed._thread, stub_url = _serve_stub(
            declaration, declaration.local.http_stub
        )
    local_targets = LocalTargets(clients, stub_url=stub_url, express=express)
    for binding in bindings_of(toolset):
        if binding.declaration is declaration:
            binding.bind(local_targets)


def check_stand_ins(toolset: ToolSet) -> None:
    """Every declared function has its stand-in in the declaration's `local.module`
    (ToolsModuleError naming the file and tool if not): what `start_managed` needs of them,
    checked before moto's resources are made, so a missing one is told at once."""
    for declaration in declarations_of(toolset):
        stand_ins = declaration.local.module
        module = _module(declaration, "local.module", stand_ins) if stand_ins else None
        for tool in declaration.tools:
            if isinstance(tool.target, LambdaTarget):
                _stand_in(declaration.file, tool.name, tool.target, module)


def _stand_in(file: str, tool: str, target: LambdaTarget, module: Any) -> tuple[str, Any]:
    """The function a declared Lambda target names, and its stand-in in `module`."""
    name = function_name_of(target.unqualified)
    if module is None:
        raise ToolsModuleError(
            f"{file}: tool {tool!r}: local.module: name a module with a stand-in "
            f"for function {name!r} (the embedded stack runs it in-process)"
        )
    handler = getattr(module, name.replace("-", "_"), None)
    if not callable(handler):
        raise ToolsModuleError(
            f"{file}: tool {tool!r}: local.module: {module.__name__} has no "
            f"function {name.replace('-', '_')!r} to stand in for {name!r}"
        )
    return name, handler


def _module(declaration: Declaration, field: str, name: str) -> Any:
    """The module `name` that the declaration's `local` names, looked up beside the
    declaration whoever started the stack: `functions` is functions.py in its folder (`a.b`
    is a/b.py), imported as that file (`config.import_tools_file`)."""
    folder = declaration.path.parent
    relative = Path(*name.split("."))
    for candidate in (folder / f"{relative}.py", folder / relative / "__init__.py"):
        if candidate.is_file():
            return import_tools_file(candidate, f"{declaration.file}: {field}")
    raise ToolsModuleError(
        f"{declaration.file}: {field}: no module {name!r} beside the declaration "
        f"({relative}.py in {folder})"
    )


def _create_machine(file: str, tool: str, target: StateMachineTarget, aws: LocalAws) -> str:
    import boto3

    expected = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{target.name}"
    if target.arn != expected:
        raise ToolsModuleError(
            f"{file}: tool {tool!r}: target.arn: the embedded stack creates this machine as "
            f"{expected} (its account and region); declare that ARN to serve it locally"
        )
    if target.definition is None or not Path(target.definition).is_file():
        raise ToolsModuleError(
            f"{file}: tool {tool!r}: target.definition: give the machine's ASL file "
            "(the embedded stack creates the machine from it)"
        )
    definition = Path(target.definition).read_text(encoding="utf-8")
    for logical, settings in aws.async_settings.items():
        definition = definition.replace("${" + logical + "Arn}", settings.arn)
    iam = boto3.client("iam", region_name=REGION)
    role = iam.create_role(
        RoleName=f"{aws.stack_name}-{target.name}"[:64],
        AssumeRolePolicyDocument=json.dumps({"Version": "2012-10-17", "Statement": []}),
    )["Role"]["Arn"]
    sfn = boto3.client("stepfunctions", region_name=REGION)
    try:
        made = sfn.create_state_machine(
            name=target.name, definition=definition, roleArn=role, type="STANDARD"
        )
    except Exception as exc:
        raise ToolsModuleError(
            f"{file}: tool {tool!r}: target.definition: moto refused the machine ({exc})"
        ) from None
    return str(made["stateMachineArn"])


def _serve_stub(declaration: Declaration, spec: str) -> tuple[Any, threading.Thread, str]:
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    module_name, _, attribute = spec.partition(":")
    app = getattr(_module(declaration, "local.httpStub", module_name), attribute, None)
    if not callable(app):
        raise ToolsModuleError(f"{declaration.file}: local.httpStub: {spec} is not a WSGI app")

    class Quiet(WSGIRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, name="local-http-stub", daemon=True)
    thread.start()
    return server, thread, f"http://127.0.0.1:{server.server_port}"
