// What ui-stream-check.mjs and resume-check.mjs share: a UI message stream read to its end with the
// AI SDK's own readUIMessageStream, recording each chunk's type on the way.
import { readUIMessageStream } from 'ai';

// Rebuilds the message `stream` carries. `chunks` receives every chunk's type as it passes. Returns
// the last message and the first failure: an `error` chunk, or a chunk the SDK rejected (null when
// neither came).
export async function rebuildMessage(stream, chunks) {
  let failure = null;
  const recorded = stream.pipeThrough(
    new TransformStream({
      transform(chunk, controller) {
        chunks.push(chunk.type);
        if (chunk.type === 'error') failure = `error chunk: ${chunk.errorText}`;
        controller.enqueue(chunk);
      },
    }),
  );
  let message = null;
  for await (const update of readUIMessageStream({
    stream: recorded,
    terminateOnError: true,
    onError: (e) => {
      failure = `stream rejected: ${e?.message ?? e}`;
    },
  })) {
    message = update;
  }
  return { message, failure };
}
