// Sends chat turns to promptgate with one AI SDK release's own DefaultChatTransport and rebuilds each
// answer with that release's readUIMessageStream, as `useChat` of that release would. The release is
// one of the npm aliases in package.json (`ai-5-0-100`, `ai-5`, `ai-6`) or `ai` itself (7.x).
// Prints, for each turn in order: {"chunks": [<chunk objects>], "message": <UIMessage>,
// "errors": [<texts of error chunks>], "failure": <what the SDK refused, or null>} as a JSON array.
// An `error` chunk is an answer, not a failure; a chunk the SDK's schema refuses is a failure.
//
// usage: node ui-stream-versions-check.mjs <release> <api-url> <turns-json>
//   turns-json: [{"chatId", "messages", "body"?, "headers"?, "stopAfter"?}]
//   stopAfter: a chunk type; once one arrives the script asks the gateway to stop the turn
//              (POST <api-url>/<chatId>/stop), as the app's Stop button does.
const [release, api, turnsJson] = process.argv.slice(2);
if (!release || !api || !turnsJson) {
  console.error('usage: node ui-stream-versions-check.mjs <release> <api-url> <turns-json>');
  process.exit(2);
}
const { DefaultChatTransport, readUIMessageStream } = await import(release);

async function turn(request) {
  const transport = new DefaultChatTransport({ api, headers: request.headers ?? {}, body: request.body ?? {} });
  const chunks = [];
  const errors = [];
  let failure = null;
  let message = null;
  let stopped = false;
  try {
    const stream = await transport.sendMessages({
      chatId: request.chatId,
      messages: request.messages,
      trigger: 'submit-message',
      messageId: undefined,
      abortSignal: undefined,
    });
    const recorded = stream.pipeThrough(
      new TransformStream({
        async transform(chunk, controller) {
          chunks.push(chunk);
          if (chunk.type === 'error') errors.push(chunk.errorText);
          if (!stopped && chunk.type === request.stopAfter) {
            stopped = true;
            await fetch(`${api}/${request.chatId}/stop`, { method: 'POST', headers: request.headers ?? {} });
          }
          controller.enqueue(chunk);
        },
      }),
    );
    // The reader reports both here: an `error` chunk (already in `errors`) and a chunk its schema
    // refused, which ends the stream.
    const onError = (e) => {
      const text = String(e?.message ?? e);
      if (!errors.includes(text)) failure ??= text;
    };
    for await (const update of readUIMessageStream({ stream: recorded, onError })) {
      message = update;
    }
  } catch (e) {
    failure = String(e?.message ?? e);
  }
  return { chunks, message, errors, failure };
}

const results = [];
for (const request of JSON.parse(turnsJson)) {
  results.push(await turn(request));
}
process.stdout.write(JSON.stringify(results) + '\n');
