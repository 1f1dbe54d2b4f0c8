// `@modelcontextprotocol/ext-tasks` 0.2.x on `@modelcontextprotocol/client` 2.x against an
// endpoint serving the managed example (examples/managed/tools.yaml), in both protocol eras:
// the `deploy` tool's task IS a Standard state machine's execution, which asks for an approval
// from inside the workflow.
// - modern (2026-07-28, v2 requester): the question arrives as the task's inputRequests and is
//   answered by tasks/update. Approved, the task settles with the workflow's output; declined,
//   with the workflow's declared tool error; cancelled while it waits, it stays cancelled.
// - legacy (2025-11-25, v1 requester): the same three cases. The v1 requester polls tasks/get
//   until a terminal status and reads tasks/result only then; the server sends the task's
//   outstanding question on the stream of a tasks/get (server/legacy/task_questions.py), which
//   the requester routes to its input handler by the related-task _meta.
// Prints one JSON line per check; exits 1 if any failed.
//
// Usage: node ext_tasks_managed.mjs <node_modules dir> <endpoint URL>
import path from "node:path";
import { pathToFileURL } from "node:url";
import driver from "./driver.cjs";

const { commandLine, check, textOf, describe, report } = driver;
const { modulesDir, url } = commandLine("ext_tasks_managed.mjs");
const load = (file) => import(pathToFileURL(path.join(modulesDir, file)).href);
const { Client, StreamableHTTPClientTransport } = await load("@modelcontextprotocol/client/dist/index.mjs");
const ext = await load("@modelcontextprotocol/ext-tasks/dist/client/index.js");

const CLIENT_INFO = { name: "interop-ext-tasks-managed", version: "1.0.0" };
const CAPABILITIES = { elicitation: {} };
// After an answer the requester waits out the task's last pollIntervalMs, which is the
// declared maximum (30 s in the example) while the task waits for a person.
const SETTLE_MS = 75000;

// The same raw dispatch as ext_tasks_client.mjs: 2026-07-28 task shapes over plain HTTP.
async function rawDispatch(request, options = {}) {
  const params = request.params || {};
  const name = request.method === "tools/call" ? params.name : params.taskId;
  const headers = {
    "content-type": "application/json",
    accept: "application/json, text/event-stream",
    "mcp-protocol-version": params._meta?.["io.modelcontextprotocol/protocolVersion"] ?? "2026-07-28",
    "mcp-method": request.method,
    ...(name === undefined ? {} : { "mcp-name": String(name) }),
  };
  const id = Math.floor(Math.random() * 1e9);
  const response = await fetch(url, {
    method: "POST",
    headers,
    body: JSON.stringify({ jsonrpc: "2.0", id, ...request }),
    signal: options.signal,
  });
  const body = await response.text();
  const messages = response.headers.get("content-type")?.startsWith("text/event-stream")
    ? body.split("\n").filter((line) => line.startsWith("data: ") && line.length > 6).map((line) => JSON.parse(line.slice(6)))
    : [JSON.parse(body)];
  const answer = messages.find((message) => message.id === id);
  if (!answer) throw new ext.DispatchError(`no answer (HTTP ${response.status})`);
  return "error" in answer ? { kind: "error", error: answer.error } : { kind: "result", result: answer.result };
}

async function session(era, asked, answer) {
  const options = era === "modern" ? { capabilities: CAPABILITIES, versionNegotiation: { mode: "auto" } } : { capabilities: CAPABILITIES };
  const client = new Client(CLIENT_INFO, options);
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const framing = era === "modern"
    ? { rawDispatch, v2RequestFraming: { protocolVersion: "2026-07-28", clientInfo: CLIENT_INFO, clientCapabilities: CAPABILITIES } }
    : {};
  const tasks = ext.createTaskSessionFromClient(client, {
    endpointId: `interop-managed-${era}`,
    onInputRequest: ext.createApplicationInputHandler({
      elicitation: async (request) => {
        asked.push(request.params.message);
        return answer.current;
      },
      sampling: async () => ({ role: "assistant", content: { type: "text", text: "ok" }, model: "interop" }),
      roots: async () => ({ roots: [] }),
    }),
    onError: () => {},
    ...framing,
  });
  return { client, tasks };
}

async function settle(execution) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not settled within ${SETTLE_MS} ms`)), SETTLE_MS);
  });
  try {
    return (await Promise.race([execution.settle(), timeout])).outcome;
  } finally {
    clearTimeout(timer);
  }
}

async function deploy(tasks, args) {
  const execution = await tasks.callTool("deploy", args, { task: { preference: "prefer" } });
  return { execution, outcome: await settle(execution) };
}

async function drive(era) {
  const asked = [];
  const answer = { current: { action: "accept", content: { approve: true, approver: "grace" } } };
  const { client, tasks } = await session(era, asked, answer);
  check(`managed ${era}: the client negotiated its era`, client.getProtocolEra() === era, client.getProtocolEra());

  await approveAndDecline(era, tasks, asked, answer);

  // Cancelled while the workflow waits: the question (if this era delivers it) is left open
  // until tasks/cancel has landed, then dismissed.
  let cancelledAlready;
  const cancelling = new Promise((resolve) => { cancelledAlready = resolve; });
  answer.current = cancelling.then(() => ({ action: "cancel" }));
  const running = await tasks.callTool("deploy", { version: "v2.2", environment: "staging" }, { task: { preference: "prefer" } });
  await new Promise((resolve) => setTimeout(resolve, 3000)); // the workflow reaches its question
  await tasks.cancelTask(running.handle.taskId);
  cancelledAlready();
  const cancelled = await settle(running);
  check(
    `managed ${era}: the call is the workflow's task, and tasks/cancel stops it`,
    running.kind === "task" && cancelled.status === "cancelled",
    cancelled,
  );
  await tasks.close();
  await client.close();
}

async function approveAndDecline(era, tasks, asked, answer) {
  const approved = await deploy(tasks, { version: "v2.0", environment: "staging", stepSeconds: 1 });
  const output = approved.outcome.result?.structuredContent;
  check(
    `managed ${era}: the workflow's question is answered and the task settles with its output`,
    approved.execution.kind === "task" &&
      approved.outcome.status === "completed" &&
      output?.deployed === "v2.0" &&
      output?.approvedBy === "grace" &&
      asked.includes("Deploy v2.0 to staging?"),
    { outcome: approved.outcome, asked },
  );

  answer.current = { action: "decline" };
  const declined = await deploy(tasks, { version: "v2.1", environment: "production" });
  // A declared tool error. 2026-07-28: the task completes with an isError result. 2025-11-25
  // counts a tool result with isError as a failed task (its tasks/result is that result), and
  // the v1 requester settles it as failed with the statusMessage.
  const rejected = era === "modern"
    ? declined.outcome.status === "completed" &&
      declined.outcome.result?.isError === true &&
      textOf(declined.outcome.result).includes("Rejected")
    : declined.outcome.status === "failed" &&
      String(declined.outcome.task?.statusMessage).includes("Rejected");
  check(`managed ${era}: declined, the workflow's error path ends the task (Rejected)`, rejected, declined.outcome);
}

for (const era of ["legacy", "modern"]) {
  try {
    await drive(era);
  } catch (error) {
    check(`managed ${era}: no unexpected error`, false, describe(error));
  }
}
report();
