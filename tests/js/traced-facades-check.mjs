// Sends one streamed request through each of promptgate's Responses and Messages APIs with the
// official clients (`openai`'s responses.stream, `@anthropic-ai/sdk`'s messages.stream), each with
// the W3C `traceparent` of a caller's span, so the test can find the trace each request made.
// Prints {"responses": {"text"}, "messages": {"text"}} as JSON; exits with status 1 when a client
// rejects anything.
//
// The upstream answers the test queues, in this order: a text answer, a text answer.
//
// usage: node traced-facades-check.mjs <base-url-without-/v1> <model> <traceparent-for-responses> <traceparent-for-messages>
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';

const [baseURL, model, responsesParent, messagesParent] = process.argv.slice(2);
if (!baseURL || !model || !responsesParent || !messagesParent) {
  console.error('usage: node traced-facades-check.mjs <base-url> <model> <traceparent> <traceparent>');
  process.exit(2);
}
const apiKey = 'unused-in-single-user-mode';

try {
  const openai = new OpenAI({ baseURL: `${baseURL}/v1`, apiKey, maxRetries: 0 });
  const response = await openai.responses
    .stream({ model, input: 'Say hello' }, { headers: { traceparent: responsesParent } })
    .finalResponse();

  const anthropic = new Anthropic({ baseURL, apiKey, maxRetries: 0 });
  const message = await anthropic.messages
    .stream(
      { model, max_tokens: 256, messages: [{ role: 'user', content: 'Say goodbye.' }] },
      { headers: { traceparent: messagesParent } },
    )
    .finalMessage();

  console.log(
    JSON.stringify({
      responses: { text: response.output_text },
      messages: { text: message.content.filter((b) => b.type === 'text').map((b) => b.text).join('') },
    }),
  );
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.message ?? err) }));
  process.exit(1);
}
