// A request the model's provider refuses as invalid, sent through the official clients with their
// default retries: the `openai` client's chat completions and Responses API and `@anthropic-ai/sdk`'s
// Messages API (with a cap under the one above which that SDK refuses to wait for a whole answer).
// Each must surface as a 400 the client does not retry. Prints
// {"completions", "responses", "messages"}, each {status, code, message}, as JSON.
//
// usage: node refused-check.mjs <base-url-without-/v1> <model>
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { anthropicCode, apiError, openaiCode } from './api-error.mjs';

const [base, model] = process.argv.slice(2);
if (!base || !model) {
  console.error('usage: node refused-check.mjs <base-url> <model>');
  process.exit(2);
}
const apiKey = 'unused-in-single-user-mode';
const openai = new OpenAI({ baseURL: `${base}/v1`, apiKey });
const anthropic = new Anthropic({ baseURL: base, apiKey });
const words = 'Write a very long story.';

try {
  const completions = await apiError(
    () => openai.chat.completions.create({ model, messages: [{ role: 'user', content: words }], max_tokens: 900000 }),
    openaiCode,
  );
  const responses = await apiError(
    () => openai.responses.create({ model, input: words, max_output_tokens: 900000, store: false }),
    openaiCode,
  );
  const messages = await apiError(
    () => anthropic.messages.create({ model, max_tokens: 20000, messages: [{ role: 'user', content: words }] }),
    anthropicCode,
  );
  process.stdout.write(JSON.stringify({ completions, responses, messages }) + '\n');
} catch (e) {
  process.stdout.write(JSON.stringify({ failure: String(e?.message ?? e) }) + '\n');
  process.exit(1);
}
