// A function-tool round trip through promptgate's chat-completions facade with the official `openai`
// client: the model's call arrives through the client's streaming helper, the tool's result goes back
// in a `tool` message, and the answer comes whole. Prints
// {"call": {"finish_reason", "tool_calls"}, "answer": {"content", "finish_reason"}} as JSON; exits with
// status 1 when the client rejects a response or no call arrives.
//
// usage: node openai-tools-check.mjs <base-url-ending-in-/v1> <model> [api-key]
import OpenAI from 'openai';

const [baseURL, model, apiKey] = process.argv.slice(2);
if (!baseURL || !model) {
  console.error('usage: node openai-tools-check.mjs <base-url> <model> [api-key]');
  process.exit(2);
}
const client = new OpenAI({ baseURL, apiKey: apiKey ?? 'unused-in-single-user-mode', maxRetries: 0 });
const tools = [
  {
    type: 'function',
    function: {
      name: 'get_weather',
      description: 'The current weather in a city.',
      parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    },
  },
];
const messages = [{ role: 'user', content: 'What is the weather in Oslo?' }];

try {
  const stream = client.chat.completions.stream({ model, messages, tools });
  const first = await stream.finalChatCompletion();
  const choice = first.choices[0];
  const call = choice.message.tool_calls?.[0];
  if (!call) throw new Error(`no tool call arrived: ${JSON.stringify(choice)}`);
  const args = JSON.parse(call.function.arguments);
  messages.push({ role: 'assistant', content: choice.message.content, tool_calls: choice.message.tool_calls });
  messages.push({ role: 'tool', tool_call_id: call.id, content: JSON.stringify({ city: args.city, sky: 'clear' }) });
  const second = await client.chat.completions.create({ model, messages, tools });
  process.stdout.write(
    JSON.stringify({
      call: { finish_reason: choice.finish_reason, tool_calls: choice.message.tool_calls },
      answer: { content: second.choices[0].message.content, finish_reason: second.choices[0].finish_reason },
    }) + '\n',
  );
} catch (e) {
  process.stdout.write(JSON.stringify({ failure: String(e?.message ?? e) }) + '\n');
  process.exit(1);
}
