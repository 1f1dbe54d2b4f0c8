// The official TypeScript SDK 1.x client's 2025-11-25 tasks (`client.experimental.tasks`)
// against an endpoint serving the conformance tools: a call with `params.task`, tasks/get,
// tasks/result (blocking, over resumed SSE), tasks/list, tasks/cancel, an elicitation during a
// task, a tool error and a protocol error ending `failed`, and another caller's tasks staying
// out of reach. Prints one JSON line per check; exits 1 if any failed.
//
// Usage: node ts_sdk_tasks.cjs <node_modules dir> <endpoint URL>
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");
const { commandLine, check, textOf, describe, report } = require("./driver.cjs");

const { modulesDir, url } = commandLine("ts_sdk_tasks.cjs");
const load = createRequire(path.join(modulesDir, "_here.js"));
const { Client } = load("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = load("@modelcontextprotocol/sdk/client/streamableHttp.js");
const {
  CallToolResultSchema,
  CreateTaskResultSchema,
  ElicitRequestSchema,
  McpError,
} = load("@modelcontextprotocol/sdk/types.js");

const RELATED = "io.modelcontextprotocol/related-task";

// An unsigned JWT: the embedded stack reads a bearer token's claims to tell callers apart.
function bearer(sub) {
  const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64url");
  return `Bearer ${b64({ alg: "none" })}.${b64({ sub })}.`;
}

async function connect(sub, asked) {
  const client = new Client(
    { name: `interop-ts-tasks-${sub}`, version: "1.0.0" },
    { capabilities: { elicitation: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return { action: "accept", content: { confirm: true, name: "Ada" } };
  });
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { authorization: bearer(sub) } },
  });
  await client.connect(transport);
  await client.listTools(); // the SDK learns each tool's execution.taskSupport
  return client;
}

// Every message callToolStream yields, until its result or error.
async function stream(client, name, args, ttl) {
  const seen = [];
  const options = ttl === undefined ? { task: {} } : { task: { ttl } };
  const messages = client.experimental.tasks.callToolStream({ name, arguments: args }, CallToolResultSchema, options);
  for await (const message of messages) seen.push(message);
  const created = seen.find((m) => m.type === "taskCreated");
  const last = seen[seen.length - 1];
  return { seen, taskId: created && created.task.taskId, created: created && created.task, last };
}

// A task-augmented tools/call answered with its CreateTaskResult (no waiting).
function createTask(client, name, args) {
  return client.request(
    { method: "tools/call", params: { name, arguments: args, task: {} } },
    CreateTaskResultSchema,
  );
}

async function expectError(promise) {
  try {
    await promise;
    return null;
  } catch (error) {
    return error;
  }
}

async function main() {
  const asked = [];
  const client = await connect("ada", asked);
  const tasks = client.experimental.tasks;
  const capabilities = client.getServerCapabilities().tasks || {};
  check(
    "initialize declares tasks (list, cancel, tools/call)",
    capabilities.list && capabilities.cancel && capabilities.requests?.tools?.call,
    capabilities,
  );
  const tools = (await client.listTools()).tools;
  const support = Object.fromEntries(tools.map((tool) => [tool.name, tool.execution?.taskSupport]));
  check(
    "tools/list says which tools run as tasks",
    support.slow_compute === "optional" && support.failing_job === "required" && support.greet === "forbidden",
    support,
  );

  // A call with params.task, its ttl honoured, then tasks/get and tasks/result.
  const done = await stream(client, "slow_compute", { seconds: 1, label: "interop" }, 120000);
  check("tools/call with params.task creates a task", done.taskId && done.created.status === "working", done.seen[0]);
  check("the asked ttl is honoured", done.created && done.created.ttl === 120000, done.created);
  check(
    "the task completes with the call's result",
    done.last.type === "result" && textOf(done.last.result) === "Computed interop after 1.0s.",
    done.last,
  );
  check(
    "the result carries the related-task _meta",
    done.last.result && done.last.result._meta?.[RELATED]?.taskId === done.taskId,
    done.last.result,
  );
  const got = await tasks.getTask(done.taskId);
  check("tasks/get returns the task", got.taskId === done.taskId && got.status === "completed", got);
  const again = await tasks.getTaskResult(done.taskId, CallToolResultSchema);
  check("tasks/result returns the result again", textOf(again) === textOf(done.last.result), again);

  // tasks/result blocks while the task runs: one stream, resumed until the result.
  const slow = await createTask(client, "slow_compute", { seconds: 2, label: "blocking" });
  const blocked = await tasks.getTaskResult(slow.task.taskId, CallToolResultSchema);
  check("tasks/result on a working task waits for its result", textOf(blocked) === "Computed blocking after 2.0s.", blocked);

  // An elicitation during a task arrives on the tasks/result stream, tied to the task.
  const confirmed = await stream(client, "confirm_delete", { filename: "notes.txt" });
  const question = asked.find((params) => params._meta?.[RELATED]?.taskId === confirmed.taskId);
  check("an elicitation during a task reaches the client", question && question.message === "Delete notes.txt?", asked);
  check(
    "its answer resumes the task to its result",
    confirmed.last.type === "result" && textOf(confirmed.last.result) === "Deleted notes.txt.",
    confirmed.last,
  );
  // A durable tool (a Lambda durable execution): the same, and its result comes after its sleep.
  const durable = await stream(client, "durable_confirm", { filename: "durable.txt" });
  const durableQuestion = asked.find((params) => params._meta?.[RELATED]?.taskId === durable.taskId);
  check(
    "a durable tool's question reaches the client",
    durableQuestion && durableQuestion.message === "Durably delete durable.txt?",
    asked,
  );
  check(
    "its answer resumes the durable task, which sleeps, then ends with its result",
    durable.last.type === "result" && textOf(durable.last.result) === "Deleted durable.txt durably (11 characters checked).",
    durable.last,
  );
  const two = await stream(client, "multi_input", {});
  check("two questions at once are answered", two.last.type === "result" && !two.last.result.isError, two.last);
  const prelude = await stream(client, "test_tool_with_task", {});
  check(
    "a prelude asks inline, then the task runs",
    prelude.last.type === "result" && textOf(prelude.last.result).includes("Ada"),
    prelude.last,
  );

  // A tool error and a protocol error both end failed in this revision.
  const toolError = await stream(client, "failing_job", {});
  const failedTask = await tasks.getTask(toolError.taskId);
  check("a tool error ends failed", toolError.last.type === "error" && failedTask.status === "failed", failedTask);
  check("its statusMessage says what failed", (failedTask.statusMessage || "").includes("input data is inconsistent"), failedTask);
  const toolResult = await tasks.getTaskResult(toolError.taskId, CallToolResultSchema);
  check("tasks/result of a tool error is the isError result", toolResult.isError === true, toolResult);
  const protocolError = await stream(client, "protocol_error_job", {});
  const thrown = await expectError(tasks.getTaskResult(protocolError.taskId, CallToolResultSchema));
  check(
    "tasks/result of a protocol error is that JSON-RPC error",
    thrown instanceof McpError && thrown.code === -32603 && thrown.message.includes("protocol error"),
    String(thrown),
  );

  // tasks/list: the caller's own tasks, newest first.
  const listed = (await tasks.listTasks()).tasks.map((task) => task.taskId);
  const mine = [protocolError.taskId, toolError.taskId, prelude.taskId, two.taskId, durable.taskId, confirmed.taskId];
  check(
    "tasks/list lists the caller's tasks, newest first",
    mine.every((id, index) => listed.indexOf(id) === index),
    { listed: listed.slice(0, 6), mine },
  );

  // tasks/cancel: the task comes back cancelled; a terminal one is refused with -32602.
  const started = await createTask(client, "slow_compute", { seconds: 30, label: "cancel-me" });
  const cancelled = await tasks.cancelTask(started.task.taskId);
  check("tasks/cancel returns the task, cancelled", cancelled.status === "cancelled", cancelled);
  const refused = await expectError(tasks.cancelTask(started.task.taskId));
  check("tasks/cancel of a terminal task is -32602", refused instanceof McpError && refused.code === -32602, String(refused));

  // Another caller sees none of it: its get, result and cancel answer like a missing task.
  const other = await connect("grace", []);
  const foreign = other.experimental.tasks;
  const getError = await expectError(foreign.getTask(done.taskId));
  const resultError = await expectError(foreign.getTaskResult(done.taskId, CallToolResultSchema));
  const cancelError = await expectError(foreign.cancelTask(started.task.taskId));
  check(
    "another caller's tasks/get, tasks/result, tasks/cancel are -32602",
    [getError, resultError, cancelError].every((error) => error instanceof McpError && error.code === -32602),
    [getError, resultError, cancelError].map(String),
  );
  const theirs = (await foreign.listTasks()).tasks.map((task) => task.taskId);
  check("another caller's tasks/list shows none of them", !theirs.includes(done.taskId), theirs);
  await other.close();
  await client.close();
}

main()
  .catch((error) => check("no unexpected error", false, describe(error)))
  .finally(report);
