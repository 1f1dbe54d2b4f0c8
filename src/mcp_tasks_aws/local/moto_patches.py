"""Where moto differs from AWS in ways the embedded stack depends on, and the patches that close
the gaps. Each patch replaces a moto method in place, once per process (applying it again is a
no-op), and is applied by :func:`apply_moto_patches` after `mock_aws` has started.

- Lambda invoke: moto cannot run code without Docker; invokes go to the registered Python
  handlers in this process (`local.lambdas`).
- Step Functions StopExecution: moto raises when it comes just after StartExecution, before the
  execution thread is ready; the stop waits for it.
- DynamoDB: moto's condition check and write are two unlocked steps, and a failing UpdateItem
  keeps its earlier actions; item operations are made atomic and updates all-or-nothing.
- Step Functions callbacks: a `.waitForTaskToken` state that timed out leaves its token
  accepting answers in moto; on AWS it answers `TaskTimedOut` (declared workflows rely on it
  to replace a timed-out question, `tasks.workflow`).

moto itself must be imported only once fake credentials are set (see `local.aws`), so moto is
imported inside the functions here, never at module level.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from mcp_tasks_aws.local.lambdas import LAMBDAS

_lambda_patched = False
_dynamodb_serialised = False
_callbacks_patched = False
_TIMED_OUT_TOKENS: set[str] = set()
_TIMED_OUT_LOCK = threading.Lock()
_DYNAMODB_LOCK = threading.RLock()


def apply_moto_patches() -> None:
    """Every patch below; call it once `mock_aws` is started, before any request reaches moto."""
    _patch_moto_lambda()
    _serialise_moto_dynamodb()
    _patch_moto_callback_timeouts()


def _patch_moto_callback_timeouts() -> None:
    """A waiting state that timed out marks its token so: answers and heartbeats sent to it
    afterwards are refused `TaskTimedOut`, as AWS refuses them (moto keeps the token open,
    and its own refusal of such a token fails to build)."""
    global _callbacks_patched
    if _callbacks_patched:
        return
    from moto.stepfunctions.parser import api
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_callback as callback_state,
    )
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend

    def refusal(kind: Any, message: str) -> Exception:
        # moto's error classes need the message and the code at construction (their
        # defaults are class attributes its base class ignores).
        error: Exception = kind(message, kind.__name__)
        return error

    service = callback_state.StateTaskServiceCallback
    original = service._eval_integration_pattern

    def eval_integration_pattern(self: Any, env: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return original(self, env, *args, **kwargs)
        except TimeoutError:  # the state's TimeoutSeconds or HeartbeatSeconds passed
            task = env.states.context_object.context_object_data.get("Task") or {}
            if task.get("Token"):
                with _TIMED_OUT_LOCK:
                    _TIMED_OUT_TOKENS.add(task["Token"])
            raise

    service._eval_integration_pattern = eval_integration_pattern  # type: ignore[method-assign]

    def refusing_timed_out(name: str) -> None:
        sent = getattr(StepFunctionsParserBackend, name)

        def send(self: Any, task_token: str, *args: Any, **kwargs: Any) -> Any:
            with _TIMED_OUT_LOCK:
                timed_out = task_token in _TIMED_OUT_TOKENS
            if timed_out:
                message = "Task Timed Out: 'Provided task does not exist anymore'"
                raise refusal(api.TaskTimedOut, message)
            return sent(self, task_token, *args, **kwargs)

        setattr(StepFunctionsParserBackend, name, send)

    def send_task_heartbeat(self: Any, task_token: str) -> None:
        # moto's own fails to build its refusal of a live token whose state has no
        # HeartbeatSeconds; a heartbeat to a live token is accepted here (it resets the
        # heartbeat clock where the state has one), and any other token is invalid.
        for execution in self._get_executions(api.ExecutionStatus.RUNNING):
            env = getattr(execution.exec_worker, "env", None)
            endpoint = env.callback_pool_manager.get(task_token) if env is not None else None
            if endpoint is not None:
                endpoint.notify_heartbeat()
                return
        raise refusal(api.InvalidToken, "Invalid Token: 'Invalid token'")

    StepFunctionsParserBackend.send_task_heartbeat = send_task_heartbeat  # type: ignore[assignment]
    for name in ("send_task_success", "send_task_failure", "send_task_heartbeat"):
        refusing_timed_out(name)
    _callbacks_patched = True


def _serialise_moto_dynamodb() -> None:
    """Make moto's item operations atomic, as DynamoDB's are.

    moto checks a write's condition and applies the write as two steps, with no lock: two
    threads (the HTTP server, state machine threads, the worker) can then both pass the same
    condition, which DynamoDB never allows, and the tasks' race protection rests on it.
    """
    global _dynamodb_serialised
    if _dynamodb_serialised:
        return
    import functools

    from moto.dynamodb.models import DynamoDBBackend
    from moto.dynamodb.responses import DynamoHandler

    operations = (
        "put_item",
        "get_item",
        "update_item",
        "delete_item",
        "batch_get_item",
        "query",
        "scan",
        "transact_write_items",
        "transact_get_items",
    )
    # Whole requests (the response layer reads the old item for ALL_OLD, then writes) and the
    # backend calls under them share one re-entrant lock.
    for owner in (DynamoHandler, DynamoDBBackend):
        for name in operations:
            original = getattr(owner, name, None)
            if original is None:
                continue

            def locked(*args: Any, __original: Any = original, **kwargs: Any) -> Any:
                with _DYNAMODB_LOCK:
                    return __original(*args, **kwargs)

            setattr(owner, name, functools.wraps(original)(locked))
    _make_moto_updates_all_or_nothing(DynamoDBBackend)
    _dynamodb_serialised = True


def _make_moto_updates_all_or_nothing(backend: Any) -> None:
    """An UpdateItem that fails part way (an item grown past 400 KB) changes nothing, as on AWS.

    moto applies an update expression's actions to the stored item one by one and raises when
    one makes the item too large, keeping the actions before it.
    """
    import copy
    import functools

    from moto.dynamodb.models.dynamo_type import DynamoType

    original = backend.update_item

    def update_item(self: Any, table_name: str, key: dict[str, Any], *args: Any, **kw: Any) -> Any:
        with _DYNAMODB_LOCK:  # the snapshot and the update are one step for other threads
            table = self.get_table(table_name)
            hash_attr, range_attr = table.hash_key_attr, table.range_key_attr
            hash_value = DynamoType(key[hash_attr]) if hash_attr in key else None
            range_value = DynamoType(key[range_attr]) if range_attr and range_attr in key else None
            item = table.get_item(hash_value, range_value) if hash_value is not None else None
            saved = copy.deepcopy(item.attrs) if item is not None else None
            try:
                return original(self, table_name, key, *args, **kw)
            except Exception:
                if item is not None:
                    item.attrs = saved
                raise

    backend.update_item = functools.wraps(original)(update_item)


def _patch_moto_lambda() -> None:
    """Lambda invokes run the registered handlers in-process; StopExecution waits for moto."""
    global _lambda_patched
    if _lambda_patched:
        return
    from moto.awslambda.exceptions import UnknownFunctionException
    from moto.awslambda_simple.models import LambdaSimpleBackend
    from moto.stepfunctions.parser.backend.execution_worker import ExecutionWorker

    # moto's execution thread builds its environment a moment after StartExecution returns;
    # a StopExecution in between raises inside moto (AWS has no such gap). Wait for it.
    original_stop = ExecutionWorker.stop

    def stop(self: Any, *args: Any, **kwargs: Any) -> Any:
        deadline = time.monotonic() + 2
        while getattr(self, "env", None) is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return original_stop(self, *args, **kwargs)

    ExecutionWorker.stop = stop  # type: ignore[method-assign]

    def invoke(
        self: Any,
        function_name: str,
        qualifier: str | None,
        body: Any,
        headers: Any,
        response_headers: Any,
    ) -> bytes:
        if headers.get("X-Amz-Invocation-Type") == "Event":
            if not LAMBDAS.has(function_name):  # Lambda refuses to queue for no function
                raise UnknownFunctionException(function_name)
            LAMBDAS.invoke_event(function_name, body)  # moto answers 202 for the queued event
            return b""
        if not LAMBDAS.has(function_name):  # as Lambda answers for a function that is not there
            raise UnknownFunctionException(function_name)
        return LAMBDAS.invoke(function_name, body, response_headers)

    LambdaSimpleBackend.invoke = invoke  # type: ignore[method-assign]
    _lambda_patched = True
