// Drives promptgate's Messages API with the official `@anthropic-ai/sdk`: a streamed answer through
// messages.stream (its MessageStream rebuilds the message from the events), a tool-use round trip
// (the call arrives whole, the tool_result goes back, the answer streams), countTokens, and the
// model list and one model. Prints {"streamed", "call", "answer", "count", "models", "model"} as JSON; any event the SDK
// cannot fold, or an error, makes this exit with status 1.
//
// usage: node anthropic-check.mjs <base-url-without-/v1> <model> [api-key]
import Anthropic from '@anthropic-ai/sdk';

const [baseURL, model, apiKey] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node anthropic-check.mjs <base-url> <model> [api-key]');
  process.exit(2);
}
const client = new Anthropic({
  baseURL,
  apiKey: apiKey ?? 'unused-in-single-user-mode',
  maxRetries: 0,
  defaultHeaders: { 'anthropic-beta': 'interleaved-thinking-2025-05-14,some-future-beta-2099-01-01' },
});
const tools = [
  {
    name: 'get_weather',
    description: 'The current weather in a city.',
    input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  },
];

try {
  const texts = [];
  const stream = client.messages.stream({
    model,
    max_tokens: 1024,
    system: [{ type: 'text', text: 'Answer briefly.' }],
    messages: [{ role: 'user', content: 'Say hello.' }],
  });
  stream.on('text', (text) => texts.push(text));
  const streamed = await stream.finalMessage();

  const question = { role: 'user', content: 'What is the weather in Oslo?' };
  const call = await client.messages.create({ model, max_tokens: 1024, tools, messages: [question] });
  const use = call.content.find((block) => block.type === 'tool_use');
  if (!use) throw new Error(`no tool_use block arrived: ${JSON.stringify(call)}`);
  const followUp = client.messages.stream({
    model,
    max_tokens: 1024,
    tools,
    messages: [
      question,
      { role: 'assistant', content: call.content },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: use.id, content: JSON.stringify({ city: use.input.city, sky: 'clear' }) }],
      },
    ],
  });
  const answer = await followUp.finalMessage();

  const count = await client.messages.countTokens({ model, tools, messages: [question] });

  // The SDK pages through the list itself, by `has_more` and `last_id`.
  const models = [];
  for await (const info of client.models.list()) models.push({ id: info.id, type: info.type, display_name: info.display_name, created_at: info.created_at });
  const one = await client.models.retrieve(model);
  process.stdout.write(
    JSON.stringify({
      streamed: { message: streamed, texts },
      call: { stop_reason: call.stop_reason, content: call.content, usage: call.usage },
      answer: { stop_reason: answer.stop_reason, content: answer.content },
      count,
      models,
      model: { id: one.id, type: one.type, display_name: one.display_name },
    }) + '\n',
  );
} catch (e) {
  process.stdout.write(JSON.stringify({ failure: String(e?.message ?? e), status: e?.status ?? null, error: e?.error ?? null }) + '\n');
  process.exit(1);
}
