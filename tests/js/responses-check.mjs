// Drives promptgate's Responses API with the official `openai` client: `responses.create`,
// `responses.stream` (whose accumulator refuses any event out of order or of an unknown type), a
// `previous_response_id` chain, a function tool round trip, and the kept response read back, paged
// and deleted. Prints what each step saw as one JSON object; exits with status 1 when the client
// rejects anything.
//
// The upstream answers the test queues, in this order: a text answer, a streamed text answer, a
// text answer, a call of `get_weather`, a text answer.
//
// usage: node responses-check.mjs <base-url-ending-in-/v1> <model> [api-key]
import OpenAI from 'openai';

const [baseURL, model, apiKey] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node responses-check.mjs <base-url> <model> [api-key]');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: apiKey ?? 'unused-in-single-user-mode', maxRetries: 0 });

const weather = {
  type: 'function',
  name: 'get_weather',
  description: 'The weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
  strict: false,
};

function summary(response) {
  return {
    id: response.id,
    status: response.status,
    text: response.output_text,
    types: response.output.map((item) => item.type),
    usage: response.usage ?? null,
    previous: response.previous_response_id ?? null,
  };
}

try {
  const created = await client.responses.create({ model, input: 'Say hello', metadata: { run: 'js' } });

  const stream = client.responses.stream({ model, input: 'Tell me a story', instructions: 'Be brief.' });
  const seen = [];
  let deltas = '';
  for await (const event of stream) {
    seen.push(event.type);
    if (event.type === 'response.output_text.delta') deltas += event.delta;
  }
  const streamed = await stream.finalResponse();

  const chained = await client.responses.create({
    model,
    input: 'And then?',
    previous_response_id: streamed.id,
  });

  const asked = await client.responses.create({ model, input: 'Weather in Oslo?', tools: [weather] });
  const call = asked.output.find((item) => item.type === 'function_call');
  const answered = await client.responses.create({
    model,
    previous_response_id: asked.id,
    tools: [weather],
    input: [{ type: 'function_call_output', call_id: call.call_id, output: JSON.stringify({ celsius: 4 }) }],
  });

  const retrieved = await client.responses.retrieve(created.id);
  const items = [];
  for await (const item of client.responses.inputItems.list(answered.id, { limit: 1 })) {
    items.push(item.type);
  }
  await client.responses.delete(created.id);
  let gone = null;
  try {
    await client.responses.retrieve(created.id);
  } catch (e) {
    gone = e.status ?? String(e);
  }

  process.stdout.write(
    JSON.stringify({
      created: { ...summary(created), metadata: created.metadata },
      streamed: { ...summary(streamed), events: seen, deltas },
      chained: summary(chained),
      asked: { ...summary(asked), call: { name: call.name, arguments: JSON.parse(call.arguments), call_id: call.call_id } },
      answered: summary(answered),
      retrieved: summary(retrieved),
      items,
      gone,
    }) + '\n',
  );
} catch (e) {
  process.stdout.write(JSON.stringify({ failure: String(e?.stack ?? e?.message ?? e) }) + '\n');
  process.exit(1);
}
