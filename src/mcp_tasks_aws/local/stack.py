"""The embedded stack: the real Lambda handlers behind uvicorn on 127.0.0.1.

`make run` calls :func:`main`. Each HTTP request becomes the payload-v2 event API Gateway would
send (with an emulated JWT authorizer), goes to the real `handlers/api.py` under the function's
timeout from the template (`local.asgi`), and its answer goes back as HTTP. Tests use
:class:`EmbeddedStack` the same way, on a free port.

For the development loop, `main` also (each off in tests unless asked for):
- reloads the tools module when its file changes (`local.reload`; `--no-reload` or
  `MCP_TASKS_RELOAD=0` turn it off): only the functions' `App`s are rebuilt, so moto, and with
  it every task, session and stored result, survives the reload;
- logs one access line per request (`MCP_TASKS_ACCESS_LOG=0` turns it off; see `local.asgi`);
- says at startup that tasks live in memory (a restart forgets them) and what to try next;
- puts the current directory on the import path, as `python -m` does, so the console script
  `mcp-tasks-aws-local` finds a tools module next to the user.

Scheduled work runs too: the sweeper (`handlers/sweep.py`) every `sweep_interval_s`, in a
background thread that `stop` ends (the template's `SweepSchedule`; `sweep()` runs one now).

Configuration is the deployed functions' environment (see `mcp_tasks_aws.config`); what the
cloud would provide (a request-state secret, fake AWS credentials) is filled in here.
"""

from __future__ import annotations

import argparse
import errno
import functools
import importlib.util
import logging
import os
import secrets
import socket
import sys
import threading
import warnings
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any

from mcp_tasks_aws.app import App
from mcp_tasks_aws.aws.clients import Clients
from mcp_tasks_aws.config import Settings, ToolsModuleError, load_toolset
from mcp_tasks_aws.edge.auth_settings import WELL_KNOWN
from mcp_tasks_aws.local.asgi import ApiGatewayFront, LambdaHttpApp, RestStreamingApp
from mcp_tasks_aws.local.auth import oauth_for_stack
from mcp_tasks_aws.local.aws import REGION, start_local_aws, start_mock
from mcp_tasks_aws.local.managed import ManagedLocal, check_stand_ins, start_managed
from mcp_tasks_aws.local.reload import FileWatcher, fresh_toolset, module_name_of, tools_files
from mcp_tasks_aws.tools.registry import ToolSet
from mcp_tasks_aws.tools.signature import ToolDefinitionError

logger = logging.getLogger("mcp_tasks_aws.local")
access_logger = logging.getLogger("mcp_tasks_aws.local.access")

PROJECT_ROOT = Path(__file__).resolve().parents[3]
# Metrics are disabled locally; Powertools still warns on each empty flush.
warnings.filterwarnings("ignore", message="No application metrics to publish")
MCP_PATH = "/mcp"
# What API Gateway routes to the API function; the well-known paths exist in AuthMode OAUTH.
ROUTED_PATHS = frozenset({MCP_PATH, WELL_KNOWN, WELL_KNOWN + MCP_PATH})
BACKLOG = 2048
SWEEP_INTERVAL_S = 300.0
"""How often the embedded stack sweeps, as the template's default `SweepSchedule`."""
STACK_RESOURCE_VARIABLES = frozenset(
    {
        "MCP_TASKS_TABLE",
        "MCP_TASKS_STATE_MACHINE_ARN",
        "MCP_TASKS_RESULT_BUCKET",
        "MCP_TASKS_WORKER_FUNCTION",
    }
)
"""Variables naming the resources an embedded stack creates: always the stack's own."""


# Powertools reads its switches from the process environment only. These are the local
# runtime's (quiet logs, no metrics flushed to stdout, no X-Ray), the same for every stack in
# the process; the stack's own settings never go through os.environ.
POWERTOOLS_LOCAL_DEFAULTS = {
    "POWERTOOLS_SERVICE_NAME": "mcp-tasks-aws",
    "POWERTOOLS_METRICS_NAMESPACE": "McpTasksAws",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}


def front_door(local: Mapping[str, str]) -> str:
    """`buffered` or `streaming`, from MCP_TASKS_FRONT_DOOR (the template's FrontDoor)."""
    door = local.get("MCP_TASKS_FRONT_DOOR", "buffered").strip().lower() or "buffered"
    if door not in ("buffered", "streaming"):
        raise ValueError(f"MCP_TASKS_FRONT_DOOR={door!r}: give buffered or streaming")
    return door


def local_environment(host: str, port: int, env: Mapping[str, str]) -> dict[str, str]:
    """The MCP_TASKS_* variables the functions see locally, beyond what the template sets.

    Defaults stand for what the cloud would provide (a request-state secret, origins for the
    local URL); the MCP_TASKS_* entries of `env` win over them, and origins it allows add to
    the stack's.
    """
    local = {
        "MCP_TASKS_TOOLS": "demo",
        "MCP_TASKS_STATE_SECRET": secrets.token_hex(32),
        "MCP_TASKS_ALLOWED_ORIGINS": ",".join(
            f"http://{name}:{port}" for name in ("127.0.0.1", "localhost", host)
        ),
    }
    for key, value in env.items():
        if not key.startswith("MCP_TASKS_"):
            continue
        if key == "MCP_TASKS_ALLOWED_ORIGINS":
            value = ",".join(dict.fromkeys([*local[key].split(","), *value.split(",")]))
        local[key] = value
    return local


@functools.cache
def handler_module(name: str) -> ModuleType:
    """`handlers/<name>.py`, imported once per process (stacks call its `make_handler`)."""
    path = PROJECT_ROOT / "handlers" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"handlers.{name}", path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def local_session() -> Any:
    """A botocore session for one function's clients (moto answers them in this process)."""
    import botocore.session

    session = botocore.session.get_session()
    session.set_config_variable("region", REGION)
    session.set_credentials("testing", "testing")  # moto's fake credentials
    return session


def _without_metric_backlog(function: str, app: App) -> Any:
    """The real handler of `handlers/<function>.py` for `app`, clearing Powertools metrics
    after each call.

    Metrics are disabled locally, and Powertools then keeps every value until a batch of 100
    forces a print; clearing keeps the local output quiet and memory flat.
    """
    module = handler_module(function)
    handler = module.make_handler(app)
    metrics = getattr(module, "metrics", None)

    def call(event: dict[str, Any], context: Any) -> Any:
        try:
            return handler(event, context)
        finally:
            if metrics is not None:
                metrics.clear_metrics()

    return call


class EmbeddedStack:
    """The whole stack on one machine; usable as a context manager.

    Starts moto with the template's resources (see `local.aws`), builds one `App` per function
    from explicit settings (each with its own AWS clients, as each is its own process when
    deployed), routes invokes to the real worker and reconcile handlers (the state machine's
    `lambda:invoke`, the API's direct legs and their on-failure records), and serves the real
    API handler over HTTP. Nothing is written to `os.environ` but Powertools'
    local switches (`POWERTOOLS_LOCAL_DEFAULTS`), and the handler modules are imported once.

    `env` holds MCP_TASKS_* variables as the functions would read them (see `config`);
    without it, the process environment's (what `make run` passes on). `reload_interval_s`
    watches the tools module's files and reloads the tools on a change (`reload_tools`);
    `access_log` logs a line per request to `mcp_tasks_aws.local.access`. `api_timeout_s`
    replaces the API function's timeout from the template (29 s; an inline call's deadline is
    1.5 s before it), so a test of the deadline takes seconds.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        env: Mapping[str, str] | None = None,
        *,
        reload_interval_s: float | None = None,
        access_log: bool = False,
        sweep_interval_s: float | None = SWEEP_INTERVAL_S,
        api_timeout_s: float | None = None,
    ) -> None:
        self._api_timeout_s = api_timeout_s
        self.tools_watcher: FileWatcher | None = None
        self.sweeper: Periodic | None = None
        self._access_log = access_log
        for key, value in POWERTOOLS_LOCAL_DEFAULTS.items():
            os.environ.setdefault(key, value)
        # The port first: if it is taken, nothing else has been started.
        self._socket = _listening_socket(host, port)
        address = self._socket.getsockname()
        self.host, self.port = str(address[0]), int(address[1])
        self._server: Any = None
        self._thread: threading.Thread | None = None
        try:
            self._start_stack(env)
        except BaseException:
            self._socket.close()
            raise
        if sweep_interval_s is not None:
            self.sweeper = Periodic("local-sweeper", self.sweep, sweep_interval_s)
        # Declared tools are not reloaded: their stand-ins (functions, machines, the HTTP stub)
        # are made once, on this moto, and a fresh tool set would not be bound to them.
        if reload_interval_s is not None and self.managed is None:
            module = module_name_of(self.settings.tools_module)
            self.tools_watcher = FileWatcher(
                lambda: tools_files(module), self.reload_tools, reload_interval_s
            )

    def _start_stack(self, env: Mapping[str, str] | None) -> None:
        local = local_environment(self.host, self.port, os.environ if env is None else env)
        auth, self.authorization_server = oauth_for_stack(local, self.url)
        local.update(auth)
        # MCP_TASKS_FRONT_DOOR: the template's FrontDoor (`buffered` or `streaming`).
        self.front_door = front_door(local)
        # The tools module is imported and checked (ToolDefinitionError) once moto is started,
        # so that a client it makes goes to the mock, but before the seconds of moto's patches
        # and the template's resources: a wrong MCP_TASKS_TOOLS is told at once.
        mock = start_mock()
        try:
            toolset = load_toolset(local["MCP_TASKS_TOOLS"])
            toolset.check()
            check_stand_ins(toolset)  # a declaration's local stand-ins, likewise
        except BaseException:
            mock.stop()
            raise
        self.aws = start_local_aws(
            PROJECT_ROOT / "template.yaml",
            {"ToolsModule": local["MCP_TASKS_TOOLS"], "FrontDoor": self.front_door.upper()},
            mock=mock,
        )

        # Each function gets its own environment, as deployed (only the API function names
        # the worker to invoke directly, for one): the template's, then the local settings,
        # except the names of this stack's own resources, which are not the caller's to
        # rename (a deployed name would point at nothing here). An empty worker name still
        # turns direct legs off.
        def environment(logical_id: str) -> dict[str, str]:
            own = self.aws.function_environments.get(logical_id, self.aws.environment)
            merged = {k: v for k, v in local.items() if k not in STACK_RESOURCE_VARIABLES}
            merged = {**own, **merged}
            if "MCP_TASKS_WORKER_FUNCTION" in own and local.get("MCP_TASKS_WORKER_FUNCTION") == "":
                merged["MCP_TASKS_WORKER_FUNCTION"] = ""
            return merged

        # Durable tools' executions: AWS's in-process runner (`local.durable`), its ends
        # delivered to the reconciler as the template's DurableEndsRule would.
        from mcp_tasks_aws.local.durable import DEFAULT_TIME_SCALE, LocalDurableExecutions

        self.durable = LocalDurableExecutions(
            time_scale=float(local.get("MCP_TASKS_DURABLE_TIME_SCALE", DEFAULT_TIME_SCALE)),
            on_end=self._durable_ended,
        )
        self.environment = environment("ApiFunction")
        self.settings = Settings.from_env(self.environment)
        self._environment_of = environment
        self.managed: ManagedLocal | None = None
        # If what is built around the tools fails, the moto backends stop with it.
        try:
            # Declared resources (managed tools): stand-ins on this moto, bound before any
            # App binds its own AWS targets.
            self.managed = start_managed(toolset, self.aws, Clients(local_session()))
            self._build_functions(toolset)
        except BaseException:
            if self.managed is not None:
                self.managed.stop()
            self.durable.close()
            self.aws.stop()
            raise
        # The reconciler is looked up on each event: a reload replaces it. It also hears
        # every end of a declared workflow's execution (EventBridge's WorkflowEndsRule).
        workflows = self.managed.workflow_arns if self.managed is not None else []
        self.aws.watch_executions(
            lambda event, context: self.reconcile_handler(event, context), workflows=workflows
        )
        # In AuthMode OAUTH the route has no authorizer: the function checks tokens itself.
        front = RestStreamingApp if self.front_door == "streaming" else LambdaHttpApp
        self.app: ApiGatewayFront = front(
            self.api_handler,
            timeout_s=self._api_timeout_s or self.aws.function_timeouts["ApiFunction"],
            paths=ROUTED_PATHS,
            jwt_authorizer=self.settings.auth.mode != "oauth",
            access_log=access_logger.info if self._access_log else None,
        )

    def _build_functions(self, toolset: ToolSet) -> None:
        """The functions' Apps and handlers around `toolset`, put in service together.

        Everything is built before anything is replaced, so a tool set that fails its check
        (ToolDefinitionError, raised while the API's transport is built) changes nothing.
        """

        adapters = {"durable": self.durable}

        def app(logical_id: str) -> App:
            settings = Settings.from_env(self._environment_of(logical_id))
            return App(
                settings,
                clients=Clients(local_session()),
                toolset=toolset,
                run_adapters=adapters,
            )

        api_app, worker_app, reconcile_app, ask_app = (
            app("ApiFunction"),
            app("WorkerFunction"),
            app("ReconcileFunction"),
            app("AskFunction"),
        )
        sweep_handler = _without_metric_backlog("sweep", app("SweepFunction"))
        api_handler: Any = _without_metric_backlog("api", api_app)
        if self.front_door == "streaming":  # the ASGI app the Lambda Web Adapter serves
            api_handler = handler_module("stream").make_app(api_app, pad_empty_bodies=False)
        worker_handler = _without_metric_backlog("worker", worker_app)
        reconcile_handler = _without_metric_backlog("reconcile", reconcile_app)
        ask_handler = _without_metric_backlog("ask", ask_app)
        durable_app = app("DurableFunction")
        durable_handler = handler_module("durable").make_handler(durable_app)
        # Serve as a warm environment would: the API's AWS clients are created on first use,
        # and a listen window's first read must not wait for that (the ack is timed).
        if api_app.has_tasks:
            api_app.change_feed.versions()
        self.api_app, self.worker_app, self.reconcile_app = api_app, worker_app, reconcile_app
        self.api_handler = api_handler
        self.worker_handler = worker_handler
        self.reconcile_handler = reconcile_handler
        self.sweep_handler = sweep_handler
        self.ask_app, self.ask_handler = ask_app, ask_handler
        self.durable_app = durable_app
        self.durable.handler = durable_handler
        self.aws.register("WorkerFunction", worker_handler)
        # The worker's failed direct legs reach the reconciler as its on-failure destination.
        self.aws.register("ReconcileFunction", reconcile_handler)
        # Declared workflows ask their questions through it (lambda:invoke.waitForTaskToken).
        self.aws.register("AskFunction", ask_handler)
        if hasattr(self, "app"):  # a reload: requests from now on reach the new handler
            self.app.handler = api_handler

    def reload_tools(self) -> bool:
        """Import the tools module anew and serve it; False (and one log line) if it fails.

        Only the functions are rebuilt: tasks, sessions and results in moto stay, and a leg
        already running finishes with the code it started with.
        """
        spec = self.settings.tools_module
        try:
            toolset = fresh_toolset(spec)
            self._build_functions(toolset)
        except Exception as exc:
            logger.warning(
                "reloading %s failed, still serving the tools as they were: %s: %s",
                spec,
                type(exc).__name__,
                exc,
            )
            return False
        count = len(toolset.tools)
        logger.info("reloaded %s: %d tool%s (tasks kept)", spec, count, "" if count == 1 else "s")
        return True

    def _durable_ended(self, event: dict[str, Any]) -> None:
        from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext

        self.reconcile_handler(event, LocalLambdaContext(function_name="reconcile"))

    def sweep(self) -> Any:
        """Run the sweeper once, as its schedule would (what it returns: its counts)."""
        from mcp_tasks_aws.local.apigw_emulator import LocalLambdaContext

        event = {"source": "aws.events", "detail-type": "Scheduled Event", "detail": {}}
        return self.sweep_handler(event, LocalLambdaContext(function_name="sweep"))

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}{MCP_PATH}"

    def _uvicorn(self) -> Any:
        import uvicorn

        config = uvicorn.Config(
            self.app,
            lifespan="off",
            log_level="warning",
            access_log=False,
            backlog=BACKLOG,
            # Listen windows may be open when the stack stops: do not wait them out.
            timeout_graceful_shutdown=1,
        )
        self._server = uvicorn.Server(config)
        return self._server

    def start(self) -> EmbeddedStack:
        if self.tools_watcher is not None:
            self.tools_watcher.start()
        if self.sweeper is not None:
            self.sweeper.start()
        server = self._uvicorn()
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )
        self._thread.start()
        while not server.started and self._thread.is_alive():
            threading.Event().wait(0.01)
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until interrupted (Ctrl-C)."""
        if self.tools_watcher is not None:
            self.tools_watcher.start()
        if self.sweeper is not None:
            self.sweeper.start()
        self._uvicorn().run(sockets=[self._socket])

    def stop(self) -> None:
        if self.tools_watcher is not None:
            self.tools_watcher.stop()
        if self.sweeper is not None:  # before moto goes: a sweep in flight finishes first
            self.sweeper.stop()
        if self._server is not None:
            self._server.should_exit = True
        # What the function still runs stops now, so the requests in flight end within
        # uvicorn's graceful shutdown: past it, uvicorn cancels them and logs an error.
        self.app.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._socket.close()
        if self.managed is not None:
            self.managed.stop()
        self.durable.close()
        self.aws.stop()
        if self.authorization_server is not None:
            self.authorization_server.stop()

    def __enter__(self) -> EmbeddedStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class Periodic:
    """Runs `work` every `interval_s` in a daemon thread until `stop` (which waits for a run in
    progress). A run that raises is logged; the next one runs on time."""

    def __init__(self, name: str, work: Callable[[], object], interval_s: float) -> None:
        self._work = work
        self._interval_s = interval_s
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=name, daemon=True)
        self.runs = 0

    def _loop(self) -> None:
        while not self._stopping.wait(self._interval_s):
            try:
                self._work()
            except Exception:
                logger.exception("%s: a run failed", self._thread.name)
            self.runs += 1

    def start(self) -> None:
        if not self._thread.is_alive() and not self._stopping.is_set():
            self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._thread.is_alive()


def _listening_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(BACKLOG)
    except BaseException:
        sock.close()
        raise
    sock.setblocking(False)
    return sock


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Serve the embedded mcp-tasks-aws stack.")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument(
        "--no-reload",
        action="store_true",
        help="do not reload the tools module on edit (also MCP_TASKS_RELOAD=0)",
    )
    args = parser.parse_args(argv)
    _import_from_the_current_directory()
    reload = not args.no_reload and _switch("MCP_TASKS_RELOAD", default=True)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    logging.getLogger("botocore").setLevel(logging.WARNING)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        logger.warning("listening on %s: the embedded stack is meant for loopback only", args.host)
    try:
        stack = EmbeddedStack(
            args.host,
            args.port,
            reload_interval_s=RELOAD_INTERVAL_S if reload else None,
            access_log=_switch("MCP_TASKS_ACCESS_LOG", default=True),
        )
    except (ToolsModuleError, ToolDefinitionError) as exc:
        if _debug():
            raise
        # The one line that says what to change (MCP_TASKS_DEBUG=1 shows the traceback).
        return _fail(
            f"{type(exc).__name__}: {exc}" if isinstance(exc, ToolDefinitionError) else str(exc)
        )
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            return _fail(
                f"port {args.port} on {args.host} is already in use: stop what listens there, "
                "or choose another port with PORT=... (make run) or --port"
            )
        if exc.errno == errno.EADDRNOTAVAIL:
            return _fail(f"cannot listen on {args.host}: no such local address")
        raise
    tools = os.environ.get("MCP_TASKS_TOOLS", "demo")
    print(f"mcp-tasks-aws embedded stack serving tools '{tools}' at {stack.url} (Ctrl-C stops)")
    print(_memory_line(stack))
    if stack.authorization_server is not None:
        issuer = stack.authorization_server.issuer
        print(f"AuthMode OAUTH: sign in with the local authorization server at {issuer}")
    print(f"try: mcp-tasks tools {stack.url}")
    sys.stdout.flush()
    try:
        stack.serve_forever()
    except KeyboardInterrupt:
        print("\nstopping")
    finally:
        stack.stop()
    return 0


RELOAD_INTERVAL_S = 0.5


def _import_from_the_current_directory() -> None:
    """Find a tools module next to the user, as `python -m` does (a console script's
    `sys.path[0]` is its own bin directory instead)."""
    here = os.getcwd()
    if "" not in sys.path and here not in sys.path:
        sys.path.insert(0, here)


def _switch(name: str, *, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    return default if value == "" else value not in ("0", "false", "no", "off")


def _memory_line(stack: EmbeddedStack) -> str:
    """The startup line saying what a restart loses and what an edit does."""
    line = "tasks live in this process's memory (moto): stopping the stack forgets them"
    watcher = stack.tools_watcher
    files = tools_files(module_name_of(stack.settings.tools_module)) if watcher else []
    if files:
        shown = os.path.relpath(files[0]) if len(files) == 1 else f"{files[0].parent}/"
        line += f"; editing {shown} reloads the tools and keeps them"
    return line


def _debug() -> bool:
    return _switch("MCP_TASKS_DEBUG", default=False)


def _fail(message: str) -> int:
    print(f"mcp-tasks-aws-local: {message}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
