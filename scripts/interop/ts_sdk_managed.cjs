// The official TypeScript SDK 1.x client's 2025-11-25 tasks against an endpoint serving the
// managed example (examples/managed/tools.yaml): the `deploy` tool's task IS a Standard state
// machine's execution, which asks for an approval from inside the workflow. Approved, the task
// completes with the workflow's output; declined, the workflow's error path (`Rejected`, a
// declared tool error) ends it; cancelled while it waits, it stays cancelled. Prints one JSON
// line per check; exits 1 if any failed.
//
// Usage: node ts_sdk_managed.cjs <node_modules dir> <endpoint URL>
"use strict";

const path = require("node:path");
const { createRequire } = require("node:module");
const { commandLine, check, textOf, describe, report } = require("./driver.cjs");

const { modulesDir, url } = commandLine("ts_sdk_managed.cjs");
const load = createRequire(path.join(modulesDir, "_here.js"));
const { Client } = load("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = load("@modelcontextprotocol/sdk/client/streamableHttp.js");
const { CallToolResultSchema, CreateTaskResultSchema, ElicitRequestSchema } = load(
  "@modelcontextprotocol/sdk/types.js",
);

const RELATED = "io.modelcontextprotocol/related-task";
const WAIT_MS = 20000;

async function connect(asked, answer) {
  const client = new Client(
    { name: "interop-ts-managed", version: "1.0.0" },
    { capabilities: { elicitation: {} } },
  );
  client.setRequestHandler(ElicitRequestSchema, async (request) => {
    asked.push(request.params);
    return answer.current;
  });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  await client.listTools(); // the SDK learns each tool's execution.taskSupport
  return client;
}

async function stream(client, args) {
  const seen = [];
  const messages = client.experimental.tasks.callToolStream(
    { name: "deploy", arguments: args },
    CallToolResultSchema,
    { task: {} },
  );
  for await (const message of messages) seen.push(message);
  const created = seen.find((m) => m.type === "taskCreated");
  return { seen, taskId: created && created.task.taskId, last: seen[seen.length - 1] };
}

async function statusOf(client, taskId, wanted) {
  const until = Date.now() + WAIT_MS;
  let task = await client.experimental.tasks.getTask(taskId);
  while (task.status !== wanted && Date.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, 250));
    task = await client.experimental.tasks.getTask(taskId);
  }
  return task;
}

async function main() {
  const asked = [];
  const answer = { current: { action: "accept", content: { approve: true, approver: "ada" } } };
  const client = await connect(asked, answer);
  const tools = (await client.listTools()).tools;
  const deploy = tools.find((tool) => tool.name === "deploy");
  check(
    "managed: the declared workflow is listed as a task tool (optional: handles serve the rest)",
    deploy && ["optional", "required"].includes(deploy.execution?.taskSupport),
    deploy,
  );

  // Approved: the question came from the workflow's AskApproval state; the output is the result.
  const approved = await stream(client, { version: "v1.0", environment: "staging", stepSeconds: 1 });
  const question = asked.find((params) => params._meta?.[RELATED]?.taskId === approved.taskId);
  check(
    "managed: the workflow's approval question reaches the client, tied to the task",
    question && question.message === "Deploy v1.0 to staging?",
    asked,
  );
  const output = approved.last.type === "result" ? approved.last.result.structuredContent : null;
  check(
    "managed: approved, the task completes with the workflow's output",
    output && output.deployed === "v1.0" && output.approvedBy === "ada",
    approved.last,
  );
  const got = await client.experimental.tasks.getTask(approved.taskId);
  check("managed: tasks/get says completed", got.status === "completed", got);

  // Declined: the waiting state fails with McpDeclined; the machine's Catch goes to Rejected,
  // a declared tool error (2025-11-25: the task ends failed, its result is the isError one).
  answer.current = { action: "decline" };
  const declined = await stream(client, { version: "v1.1", environment: "production" });
  const failed = await client.experimental.tasks.getTask(declined.taskId);
  const result = await client.experimental.tasks.getTaskResult(declined.taskId, CallToolResultSchema);
  check(
    "managed: declined, the workflow's error path ends the task with its tool error",
    failed.status === "failed" && result.isError === true && textOf(result).includes("Rejected"),
    { failed, result },
  );

  // Cancelled while the workflow waits for its answer: the execution stops, the task stays
  // cancelled after the execution's end is reported.
  answer.current = { action: "accept", content: { approve: true } };
  const started = await client.request(
    { method: "tools/call", params: { name: "deploy", arguments: { version: "v1.2", environment: "staging" }, task: {} } },
    CreateTaskResultSchema,
  );
  const waiting = await statusOf(client, started.task.taskId, "input_required");
  check("managed: the workflow's task waits for its answer (input_required)", waiting.status === "input_required", waiting);
  const cancelled = await client.experimental.tasks.cancelTask(started.task.taskId);
  await new Promise((resolve) => setTimeout(resolve, 2000)); // the execution's end is reported
  const after = await client.experimental.tasks.getTask(started.task.taskId);
  check(
    "managed: tasks/cancel stops the workflow, and the task stays cancelled",
    cancelled.status === "cancelled" && after.status === "cancelled",
    { cancelled, after },
  );
  await client.close();
}

main()
  .catch((error) => check("managed: no unexpected error", false, describe(error)))
  .finally(report);
