// What an official client threw for a call the server answered with an error: its status, the
// error's code as `codeOf` reads it from the client's error, its message and `retry-after`.
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';

export async function apiError(call, codeOf) {
  try {
    await call();
    return { status: null, code: null, message: null, retryAfter: null };
  } catch (e) {
    if (!(e instanceof OpenAI.APIError) && !(e instanceof Anthropic.APIError)) throw e;
    return { status: e.status, ...codeOf(e), retryAfter: e.headers?.get?.('retry-after') ?? null };
  }
}

// The code and message of an OpenAI-shaped error, and of an Anthropic-shaped one (its `type`).
export const openaiCode = (e) => ({ code: e.error?.code ?? null, message: e.error?.message ?? null });
export const anthropicCode = (e) => ({ code: e.error?.error?.type ?? null, message: e.error?.error?.message ?? null });
