// Drives the tool approval round trip with the AI SDK's own chat (AbstractChat, what `useChat`
// wraps): sends a message, waits for the part in `approval-requested`, answers it with
// `addToolApprovalResponse`, and lets `sendAutomaticallyWhen:
// lastAssistantMessageIsCompleteWithApprovalResponses` send the answer, as a frontend would.
// Prints {"messages", "requested", "status", "failure"} as JSON; exits 1 on any failure.
//   requested: the tool part as it looked while waiting for the user
//
// usage: node approval-check.mjs <ai-package> <api-url> <request-json>
//   ai-package: `ai` (7.x) or `ai-6`
//   request-json: {"chatId", "text", "approved", "reason"?, "headers"?, "body"?}
const [pkg, api, requestJson] = process.argv.slice(2);
if (!pkg || !api || !requestJson) {
  console.error('usage: node approval-check.mjs <ai-package> <api-url> <request-json>');
  process.exit(2);
}
const { AbstractChat, DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } = await import(pkg);
const request = JSON.parse(requestJson);

/** The least a chat needs to keep its state: an array, changed in place. */
class State {
  status = 'ready';
  error = undefined;
  messages = [];
  pushMessage = (message) => {
    this.messages = this.messages.concat(message);
  };
  popMessage = () => {
    this.messages = this.messages.slice(0, -1);
  };
  replaceMessage = (index, message) => {
    this.messages = [...this.messages.slice(0, index), message, ...this.messages.slice(index + 1)];
  };
  snapshot = (thing) => structuredClone(thing);
}

class Chat extends AbstractChat {
  constructor(options) {
    super({ ...options, state: new State() });
  }
}

let failure = null;
let requested = null;
const chat = new Chat({
  id: request.chatId,
  transport: new DefaultChatTransport({ api, headers: request.headers ?? {}, body: request.body ?? {} }),
  sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  onError: (e) => {
    failure = `chat error: ${e?.message ?? e}`;
  },
});

/** Waits until the chat is idle (its request and any automatic one are done). */
async function settled() {
  for (let i = 0; i < 400; i++) {
    await new Promise((resolve) => setTimeout(resolve, 25));
    if (chat.status === 'ready' || chat.status === 'error') return;
  }
  throw new Error(`the chat never settled (status ${chat.status})`);
}

try {
  await chat.sendMessage({ text: request.text });
  await settled();
  const last = chat.messages.at(-1);
  const part = last?.parts.find((p) => p.state === 'approval-requested');
  if (!part) throw new Error(`no part waits for approval: ${JSON.stringify(last)}`);
  requested = structuredClone(part);
  await chat.addToolApprovalResponse({ id: part.approval.id, approved: request.approved, reason: request.reason });
  await settled();
  process.stdout.write(
    JSON.stringify({ messages: chat.messages, requested, status: chat.status, failure }) + '\n',
  );
  process.exit(failure || chat.status !== 'ready' ? 1 : 0);
} catch (e) {
  process.stdout.write(
    JSON.stringify({ messages: chat.messages, requested, status: chat.status, failure: String(e?.message ?? e) }) + '\n',
  );
  process.exit(1);
}
