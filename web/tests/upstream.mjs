// A scripted stand-in for two outside services, on loopback only: an OpenAI-compatible chat
// completions endpoint (streamed) and a SearXNG-style search endpoint. What the "model" does is
// decided by words in the user's last message, so each browser test picks its own script.
import http from 'node:http';

export const SEARCH_RESULTS = [
  // `.example` names never resolve, so nothing the page loads for a source (its favicon) leaves the machine.
  { url: 'https://learn.rust.example/book', title: 'Learn Rust', content: 'The Rust book and more.' },
  { url: 'https://nomicon.rust.example/', title: 'The Rustonomicon', content: 'Unsafe Rust, explained.' },
];

let answers = 0;
/// This server's own address, for the page the "verify" script reads.
let selfBase = '';

/// A page the gateway may read from here ([web.fetch] allows this one address).
const TIDES_PAGE = `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Reading a tide table</title></head>
<body><article><h1>Reading a tide table</h1>
<p>Heights in a tide table are measured from chart datum, roughly the lowest level the sea reaches in ordinary
conditions. A height near zero means the flats are almost dry; five metres means they are deep under water.</p>
<p>Start a crossing on foot only after high water has turned, and be back well before the next low water.</p>
</article></body></html>`;

function chunk(delta, finish = null) {
  return `data: ${JSON.stringify({ id: 'chatcmpl-test', object: 'chat.completion.chunk', created: 0, model: 'upstream-model', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
}

function textOf(message) {
  if (typeof message?.content === 'string') return message.content;
  if (Array.isArray(message?.content)) return message.content.map((p) => p.text ?? '').join('');
  return '';
}

function toolCall(res, name, args) {
  res.write(chunk({ role: 'assistant', tool_calls: [{ index: 0, id: `call_${name}_${Date.now()}`, type: 'function', function: { name, arguments: JSON.stringify(args) } }] }));
  res.write(chunk({}, 'tool_calls'));
  res.end('data: [DONE]\n\n');
}

async function streamText(res, pieces, delayMs = 0) {
  res.write(chunk({ role: 'assistant', content: '' }));
  for (const piece of pieces) {
    if (res.destroyed) return;
    res.write(chunk({ content: piece }));
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
  }
  res.write(chunk({}, 'stop'));
  res.end('data: [DONE]\n\n');
}

function completions(body, res) {
  const messages = body.messages ?? [];
  const lastUser = [...messages].reverse().find((m) => m.role === 'user');
  const question = textOf(lastUser);
  if (/\bbreak\b/i.test(question)) {
    res.writeHead(400, { 'content-type': 'application/json' });
    return res.end(JSON.stringify({ error: { message: 'the scripted upstream refuses this', type: 'invalid_request_error' } }));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  const afterTool = messages.at(-1)?.role === 'tool';
  if (/\bcite\b/i.test(question)) {
    if (!afterTool) return toolCall(res, 'search', { query: 'rust language' });
    return streamText(res, ['Rust is fast ', '[1] and its unsafe side ', 'is documented [2].']);
  }
  if (/\bverify\b/i.test(question)) {
    // Reads a page (source 1), searches (sources 2 and 3, seen only as snippets), then cites: backed
    // by the page, partly backed, not backed, and backed by a snippet only.
    const tools = messages.filter((m) => m.role === 'tool').length;
    if (tools === 0) return toolCall(res, 'fetch_content', { url: `${selfBase}/pages/tides` });
    if (tools === 1) return toolCall(res, 'search', { query: 'rust book' });
    return streamText(res, [
      'Heights in a tide table are measured from chart datum [1]. ',
      'Chart datum is the lowest level, and ferries cross the flats at noon every Sunday [1]. ',
      'The harbour sells ice cream to visitors [1]. ',
      'The Rust book and more is online [2].',
    ]);
  }
  if (/\bpage\b/i.test(question)) {
    if (!afterTool) return toolCall(res, 'render_html', { title: 'Clock', html: '<!DOCTYPE html><html><body><h1>Tick tock</h1></body></html>' });
    return streamText(res, ['Here is your page.']);
  }
  if (/\bformula\b/i.test(question)) {
    return streamText(res, ['Euler: $e^{i\\pi} + 1 = 0$, a price of $5 and $10 stays text, and\n\n', '$$\\int_0^1 x\\,dx = \\frac{1}{2}$$\n']);
  }
  if (/\becho\b/i.test(question)) {
    if (!afterTool) return toolCall(res, 'everything_echo', { message: 'hello from the browser' });
    return streamText(res, ['The MCP server echoed.']);
  }
  if (/\bbook a table at\b/i.test(question)) {
    // Calls the Python peer's booking tool, whose server asks the user for the details mid-call;
    // then repeats what the tool answered.
    const restaurant = /\bbook a table at (\S+)/i.exec(question)?.[1] ?? 'Luigi';
    if (!afterTool) return toolCall(res, 'bookings_book_table', { restaurant });
    return streamText(res, ['The booking tool said: ', textOf(messages.at(-1)).slice(0, 200)]);
  }
  if (/\bcall (\w+_whoami)\b/i.test(question)) {
    // Calls the Python auth peer's tool under the prefix the question names; then repeats its answer.
    const tool = /\bcall (\w+_whoami)\b/i.exec(question)[1];
    if (!afterTool) return toolCall(res, tool, {});
    return streamText(res, ['The notes server said: ', textOf(messages.at(-1)).slice(0, 200)]);
  }
  if (/\bremind\b/i.test(question)) {
    // Adds the line after "remind me to" as a task, then says how the call went: the tool's result,
    // or the denial (with the user's reason) the gateway answers in its place.
    if (!afterTool) return toolCall(res, 'addTasks', { tasks: [question.replace(/^.*\bremind me to\s*/i, '').slice(0, 80)] });
    const result = textOf(messages.at(-1));
    if (/denied/i.test(result)) return streamText(res, ['Nothing was added. ', result.slice(0, 200)]);
    return streamText(res, ['Added to your task list.']);
  }
  if (/\bresume\b/i.test(question)) {
    return streamText(res, Array.from({ length: 40 }, (_, i) => `part${i} `), 100);
  }
  if (/\bslow\b/i.test(question)) {
    return streamText(res, Array.from({ length: 600 }, (_, i) => `word${i} `), 100);
  }
  answers += 1;
  const quoted = question.split('\n')[0].slice(0, 80);
  return streamText(res, [`Answer ${answers} `, `to: ${quoted}`]);
}

export function startUpstream() {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url, 'http://127.0.0.1');
    if (req.method === 'GET' && url.pathname === '/pages/tides') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      return res.end(TIDES_PAGE);
    }
    if (req.method === 'GET' && url.pathname === '/search') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ query: url.searchParams.get('q'), results: SEARCH_RESULTS }));
    }
    // The gateway exports its traces here; an empty protobuf answer is a collector's "accepted".
    if (req.method === 'POST' && url.pathname === '/v1/traces') {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end());
      return;
    }
    if (req.method === 'POST' && url.pathname.endsWith('/chat/completions')) {
      let raw = '';
      req.on('data', (d) => (raw += d));
      req.on('end', () => {
        let body = {};
        try {
          body = JSON.parse(raw);
        } catch {
          res.writeHead(400).end();
          return;
        }
        completions(body, res);
      });
      return;
    }
    res.writeHead(404).end();
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      selfBase = `http://127.0.0.1:${server.address().port}`;
      resolve(server);
    }),
  );
}
