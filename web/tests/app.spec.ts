// The reference web app in a real browser against a real gateway (see global-setup.ts), at every
// size and theme the config's projects name.
import AxeBuilder from '@axe-core/playwright';
import { SEARCH_RESULTS } from './upstream.mjs';
import { answered, answers, base_url, expect, isPhone, newChat, openPanel, send, sendButton, shot, sidebar, tag, test } from './helpers';

test('a message shows the tool part with its progress title, then the answer; the tool reads as done', async ({ page }, info) => {
  await newChat(page, 'demo');
  const question = `What is new in Rust? Asked from ${tag(info)}`;
  await send(page, question);
  const tool = page.locator('.tool[data-tool="search"]');
  await expect(tool).toBeVisible();
  await expect(answers(page).last()).toContainText('Here is what the tools returned');
  // Once the call ended its title is no longer a progress line.
  await expect(tool).toHaveClass(/\bdone\b/);
  await expect(tool.locator('.tool-outcome')).toHaveText('done');
  await expect(tool.locator('.tool-sub')).toContainText('Searching');
  await expect(tool.locator('summary')).not.toHaveText(/(\.\.\.|…)$/);
  await tool.locator('summary').click();
  await expect(tool.locator('.tool-body')).toContainText('learn.rust.example');
  const threads = await sidebar(page);
  await expect(threads.locator('.threads')).toContainText(question);
  // Search reaches message text, not only titles: the answer says what the tools returned.
  await page.getByLabel('Search threads').fill(`tools returned ${tag(info)}`);
  await expect(page.locator('.threads li')).toHaveCount(1);
  await page.getByLabel('Search threads').fill('nothing like this anywhere');
  await expect(page.locator('.threads li')).toHaveCount(0);
  await page.getByLabel('Search threads').fill('');
  await shot(page, 'chat-with-tool');
});

test('sources are a list with favicons, and the [N] chips link to them', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Please cite sources about Rust');
  const answer = answers(page).last();
  await expect(answer).toContainText('is documented');
  await expect(answer.locator('a.cite')).toHaveCount(2);
  const list = answer.getByRole('region', { name: 'Sources' });
  await expect(list.getByRole('listitem')).toHaveCount(2);
  for (const [i, source] of SEARCH_RESULTS.entries()) {
    const chip = answer.locator(`a.cite[data-citation="${i + 1}"]`);
    await expect(chip).toHaveAttribute('title', source.title);
    const target = (await chip.getAttribute('href'))!;
    expect(target).toMatch(/^#source-/);
    const entry = list.locator(target);
    await expect(entry.getByRole('link')).toHaveAttribute('href', source.url);
    await expect(entry.getByRole('link')).toHaveText(source.title);
  }
  // Each source shows its site's favicon, loaded from the site (the page's CSP allows it); these
  // sites never answer, so each shows its initial instead.
  await expect(list.getByRole('listitem').nth(0).locator('.favicon.letter')).toHaveText('L');
  await expect(list.getByRole('listitem').nth(1).locator('.favicon.letter')).toHaveText('N');
  await expect(list.getByRole('listitem').nth(1)).toContainText('nomicon.rust.example');
  // A chip takes the reader (and the keyboard focus) to its source.
  await answer.locator('a.cite[data-citation="2"]').click();
  await expect(list.getByRole('link', { name: SEARCH_RESULTS[1].title })).toBeFocused();
  await shot(page, 'citations');
});

test('checked citations show their class, and the passage on hover, keyboard focus and after a reload', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Please verify the tide facts');
  const answer = answers(page).last();
  await expect(answer).toContainText('is online');
  const chips = answer.locator('a.cite');
  await expect(chips).toHaveCount(4);
  const states = async () =>
    chips.evaluateAll((all) => all.map((c) => `${c.getAttribute('data-check')}${c.hasAttribute('data-snippet-only') ? ' snippet' : ''}`));
  await expect.poll(states).toEqual(['supported', 'weak', 'unsupported', 'supported snippet']);
  await expect(chips.nth(2)).toHaveAccessibleName(/not supported by the source/);

  // The passage shows on hover, and on keyboard focus, where it is also the chip's description.
  const passages = answer.locator('.cite-passage');
  await expect(passages.nth(0)).toBeHidden();
  await chips.nth(0).hover();
  await expect(passages.nth(0)).toBeVisible();
  await expect(passages.nth(0)).toContainText('measured from chart datum');
  await page.mouse.move(0, 0);
  await chips.nth(3).focus();
  await expect(passages.nth(3)).toBeVisible();
  await expect(chips.nth(3)).toHaveAccessibleDescription(/only seen as a search snippet: “The Rust book and more.”/);
  const axe = await new AxeBuilder({ page }).include('.msg.assistant').analyze();
  const bad = axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  expect(bad.map((v) => `${v.id}: ${v.help}`)).toEqual([]);
  await shot(page, 'citation-checks');

  // The classes are stored with the answer.
  await page.reload();
  await expect(answers(page).last().locator('a.cite')).toHaveCount(4);
  await expect.poll(states).toEqual(['supported', 'weak', 'unsupported', 'supported snippet']);
});

test('formulas are typeset, and dollar amounts stay text', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Show me a formula');
  const answer = answers(page).last();
  await expect(answer.locator('.katex')).toHaveCount(2);
  await expect(answer.locator('.math .katex-display')).toHaveCount(1);
  await expect(answer).toContainText('a price of $5 and $10 stays text');
  await shot(page, 'math');
});

test('an artifact renders in a sandboxed iframe', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Make me a page with a clock');
  const frame = page.locator('.artifact iframe');
  await expect(frame).toBeVisible();
  await expect(frame).toHaveAttribute('sandbox', 'allow-scripts');
  await expect(frame).toHaveAttribute('src', /\/v1\/artifacts\/[^/]+\/view\?.*sig=/);
  await expect(page.frameLocator('.artifact iframe').locator('h1')).toHaveText('Tick tock');
  await expect(answers(page).last()).toContainText('Here is your page.');
  await expect(page.locator('.tool[data-tool="render_html"] summary')).not.toContainText('Rendering artifact...');
  await shot(page, 'artifact');
});

test('Escape stops an answer mid-stream; it is labelled stopped at once and after a reload', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Answer slow please');
  await expect(answers(page).last()).toContainText('word3');
  await page.keyboard.press('Escape');
  await expect(sendButton(page)).toBeVisible();
  await expect(answers(page).last().getByTestId('answer-status')).toHaveText('Answer stopped');
  await page.reload();
  await expect(answers(page).last()).toContainText('word3');
  await expect(answers(page).last().getByTestId('answer-status')).toHaveText('Answer stopped');
  await expect(answers(page).last()).not.toContainText('word599');
});

test('a reload mid-answer resumes the answer in the page', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Answer so that I can resume');
  await expect(answers(page).last()).toContainText('part3');
  await expect(page).toHaveURL(/thread=/);
  await page.reload();
  // The same answer streams on to its end in this page, once, without a second reload.
  await expect(answers(page).last()).toContainText('part39', { timeout: 15_000 });
  await expect(answers(page)).toHaveCount(1);
  const text = (await answers(page).last().locator('.md').textContent())!;
  expect(text.match(/part1 /g)).toHaveLength(1);
  await expect(sendButton(page)).toBeVisible();
  await expect(answers(page).last().getByTestId('answer-status')).toHaveCount(0);
});

test('a failed answer is labelled, also after a reload', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Please break now');
  await expect(page.locator('.chat-error[role=alert]')).toBeVisible();
  await expect(answers(page).last().getByTestId('answer-status')).toContainText('Answer failed');
  await page.reload();
  await expect(answers(page).last().getByTestId('answer-status')).toContainText('Answer failed');
});

test('regenerate replaces the answer, also after a reload', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Tell me a fact');
  await expect(answers(page).last()).toContainText('to: Tell me a fact');
  const firstText = (await answers(page).last().locator('.md').textContent())!;
  await page.getByRole('button', { name: 'Regenerate' }).click();
  await expect(answers(page).last().locator('.md')).not.toHaveText(firstText);
  await expect(answers(page).last()).toContainText('to: Tell me a fact');
  await expect(answers(page)).toHaveCount(1);
  const second = await answers(page).last().locator('.md').textContent();
  await page.reload();
  await expect(answers(page)).toHaveCount(1);
  await expect(answers(page).last().locator('.md')).toHaveText(second!);
});

test('editing an earlier message replaces it and what followed; reload keeps the history', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'First question');
  await expect(answers(page).last()).toContainText('to: First question');
  await send(page, 'Second question');
  await expect(answers(page).last()).toContainText('to: Second question');
  await expect(page).toHaveURL(/thread=/);

  await page.locator('.msg.user').first().getByRole('button', { name: 'Edit this message' }).click();
  await page.getByLabel('Edit message').fill('Edited question');
  await page.getByRole('button', { name: 'Save and send' }).click();
  await expect(answers(page).last()).toContainText('to: Edited question');
  await expect(page.locator('.msg')).toHaveCount(2);

  await page.reload();
  await expect(page.locator('.msg.user')).toHaveCount(1);
  await expect(page.locator('.msg.user')).toContainText('Edited question');
  await expect(answers(page)).toHaveCount(1);
  await expect(answers(page).last()).toContainText('to: Edited question');
  await shot(page, 'after-edit');
});

test('an attachment is sent with the message and kept in the thread', async ({ page }) => {
  await newChat(page, 'scripted');
  // A 1×1 PNG.
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
  await page.getByLabel('Attach files').setInputFiles({ name: 'dot.png', mimeType: 'image/png', buffer: png });
  await expect(page.locator('.attached')).toHaveText('1 file(s)');
  await send(page, 'What is in this picture?');
  // The scripted model takes no images, so the gateway tells it what was attached instead.
  await expect(answers(page).last()).toContainText('[Attached file: dot.png (image/png)]');
  await expect(page.locator('.msg.user img.attachment')).toHaveAttribute('src', /^data:image\/png;base64,/);
  await page.reload();
  await expect(page.locator('.msg.user img.attachment')).toHaveAttribute('alt', 'dot.png');
});

test('a setting changed in the app shows in the inspector', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Hello there');
  await answered(page, 'to: Hello there');

  await openPanel(page, 'Settings');
  await page.getByLabel('Your name').fill('Ada Lovelace');
  await page.getByLabel('Place').fill('London');
  await page.getByLabel('Time zone').fill('Europe/London');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect(page.getByRole('status')).toHaveText('Saved');
  await shot(page, 'settings');
  await page.getByRole('button', { name: 'Close panel' }).click();

  await page.getByRole('button', { name: 'Inspector', exact: true }).click();
  await expect(page.getByTestId('prompt-preview')).toContainText('Ada Lovelace');
  // What of the thread the next send shows the model, and what this answer's model saw.
  await expect(page.getByTestId('next-context')).toContainText('2 message(s) sent');
  // This gateway has a search backend and web tools are on.
  await expect(page.getByTestId('web-tools')).toHaveText('web tools on');
  await page.keyboard.press('Escape');
  await answers(page).last().getByRole('button', { name: 'Inspect' }).click();
  await expect(page.locator('.answer-details')).toContainText('scripted');
  await expect(page.getByTestId('answer-context')).toContainText('1 message(s) sent');
  // The answer names its trace and links to it in the configured trace UI.
  const trace = page.getByTestId('answer-trace').getByRole('link');
  await expect(trace).toHaveText(/^[0-9a-f]{32}$/);
  const traceId = (await trace.textContent()) ?? '';
  await expect(trace).toHaveAttribute('href', `http://traces.test/trace/${traceId}`);
  await shot(page, 'inspector');
});

test('the inspector of a new chat shows the prompt its first send gets, and says why web tools are off', async ({ page }) => {
  const notFound: string[] = [];
  page.on('response', (r) => r.status() === 404 && r.url().includes('/prompt') && notFound.push(r.url()));
  await page.goto(base_url() + '/');
  await page.getByLabel('Model').selectOption('scripted');
  await page.getByRole('button', { name: 'Inspector', exact: true }).click();
  await expect(page.getByTestId('new-chat-note')).toBeVisible();
  // The prompt of the first send, before anything is sent: no messages yet, the tools it offers.
  await expect(page.getByTestId('prompt-preview')).toContainText('# Tools');
  await expect(page.getByTestId('next-context')).toContainText('0 message(s) sent');
  await expect(page.getByTestId('web-tools')).toHaveText('web tools on');
  await expect(page.getByTestId('prompt-preview')).toContainText('Web lookups use');
  await shot(page, 'inspector-new-chat');
  await page.keyboard.press('Escape');
  await send(page, 'Hello, gate');
  await answered(page, 'to: Hello, gate');
  expect(notFound).toEqual([]);

  // Turned off in Settings, the inspector says so, for the thread and for a new chat alike.
  await openPanel(page, 'Settings');
  await expect(page.getByTestId('web-tools-hint')).toContainText('the Inspector says');
  await page.getByLabel('Web tools').uncheck();
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect(page.getByRole('status')).toHaveText('Saved');
  await page.keyboard.press('Escape');
  await page.getByRole('button', { name: 'Inspector', exact: true }).click();
  await expect(page.getByTestId('prompt-preview')).not.toBeEmpty();
  await expect(page.getByTestId('web-tools')).toHaveText('web tools off (turned off in Settings)');
  await page.keyboard.press('Escape');
  await (await sidebar(page)).getByRole('button', { name: 'New chat' }).click();
  await page.getByRole('button', { name: 'Inspector', exact: true }).click();
  await expect(page.getByTestId('new-chat-note')).toBeVisible();
  await expect(page.getByTestId('web-tools')).toHaveText('web tools off (turned off in Settings)');
  await expect(page.getByTestId('prompt-preview')).not.toContainText('Web lookups use');
  await page.keyboard.press('Escape');
  await openPanel(page, 'Settings');
  await page.getByLabel('Web tools').check();
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect(page.getByRole('status')).toHaveText('Saved');
});

test('keyboard: Escape closes panels and gives the focus back, the prompt scrolls by keyboard, shortcuts are listed', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'A thread to inspect');
  await answered(page, 'to: A thread to inspect');
  await expect(page.getByRole('heading', { level: 1 })).toHaveText('promptgate');

  // A panel opened from the keyboard takes the focus; Escape closes it and the focus goes back.
  const settings = (await sidebar(page)).getByRole('button', { name: 'Settings', exact: true });
  await settings.focus();
  await page.keyboard.press('Enter');
  const panel = page.getByRole('complementary', { name: 'Settings' });
  await expect(panel).toBeFocused();
  await page.keyboard.press('Escape');
  await expect(panel).toHaveCount(0);
  if (!isPhone(page)) await expect(settings).toBeFocused();

  // The inspector's prompt is reached with Tab and scrolls with the arrow keys.
  const inspectorButton = page.getByRole('button', { name: 'Inspector', exact: true });
  await inspectorButton.focus();
  await page.keyboard.press('Enter');
  const prompt = page.getByTestId('prompt-preview');
  await expect(prompt).not.toBeEmpty();
  for (let i = 0; i < 40 && !(await prompt.evaluate((el) => el === document.activeElement)); i++) await page.keyboard.press('Tab');
  await expect(prompt).toBeFocused();
  const scrollable = await prompt.evaluate((el) => el.scrollHeight > el.clientHeight);
  expect(scrollable).toBe(true);
  await page.keyboard.press('PageDown');
  await expect.poll(() => prompt.evaluate((el) => el.scrollTop)).toBeGreaterThan(0);
  await page.keyboard.press('Escape');
  await expect(page.getByRole('complementary', { name: 'Inspector' })).toHaveCount(0);
  await expect(inspectorButton).toBeFocused();

  // The shortcuts are listed, and they work.
  await page.keyboard.press('Control+/');
  const shortcuts = page.getByRole('complementary', { name: 'Keyboard shortcuts' });
  await expect(shortcuts).toContainText('Escape');
  await expect(shortcuts).toContainText('Search threads');
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+k');
  await expect(page.getByLabel('Search threads')).toBeFocused();
  await page.keyboard.press('Escape');
  await page.keyboard.press('Control+Shift+O');
  await expect(page.getByLabel('Message', { exact: true })).toBeFocused();
});

test('an MCP server is added and probed, and its tools join the next send', async ({ page, request }) => {
  const name = 'Everything';
  await page.goto(base_url() + '/');
  await openPanel(page, 'MCP servers');
  await page.getByLabel('Server name').fill(name);
  await page.getByLabel('Server URL').fill(process.env.PROMPTGATE_MCP_URL!);
  await page.getByRole('button', { name: 'Add server' }).click();
  const card = page.locator(`[data-mcp-server="${name}"]`);
  await expect(card.locator('.probe.ok')).toContainText('tools', { timeout: 15_000 });
  await expect(card.locator('.probe.ok')).toContainText('echo');
  await shot(page, 'mcp-servers');
  await page.getByRole('button', { name: 'Close panel' }).click();

  try {
    await page.getByLabel('Model').selectOption('scripted');
    await send(page, 'Hi MCP');
    await answered(page, 'to: Hi MCP');
    await page.getByRole('button', { name: 'Inspector', exact: true }).click();
    await expect(page.locator('.tool-list')).toContainText('everything_echo');
    await page.keyboard.press('Escape');

    // A call of an MCP tool is marked with its server.
    await send(page, 'Please echo something');
    const tool = page.locator('.tool[data-tool="everything_echo"]');
    await expect(answers(page).last()).toContainText('The MCP server echoed.');
    await expect(tool.locator('.badge.mcp')).toHaveText(`MCP · ${name}`);
    await tool.locator('summary').click();
    await expect(tool.locator('.tool-body')).toContainText('hello from the browser');
  } finally {
    // The next project's run adds its own server under the same tool names.
    const servers: { id: string; name: string }[] = await (await request.get(base_url() + '/v1/mcp-servers')).json();
    for (const s of servers.filter((s) => s.name === name)) await request.delete(`${base_url()}/v1/mcp-servers/${s.id}`);
  }
});

test('tokens mode: sign in with a token, and artifacts load through signed links', async ({ page }) => {
  const tokensBase = process.env.PROMPTGATE_TOKENS_BASE_URL!;
  await page.goto(tokensBase + '/');
  await page.getByLabel('Access token').fill('pg_not-a-real-token');
  await page.getByRole('button', { name: 'Sign in' }).click();
  await expect(page.getByRole('alert')).toContainText('unknown or revoked');
  await shot(page, 'sign-in');
  await page.getByLabel('Access token').fill(process.env.PROMPTGATE_TEST_TOKEN!);
  await page.getByRole('button', { name: 'Sign in' }).click();

  await send(page, 'Make me a tiny page');
  const frame = page.locator('.artifact iframe');
  await expect(frame).toHaveAttribute('src', new RegExp(`^${tokensBase}/v1/artifacts/[^/]+/view\\?`));
  await expect(frame).not.toHaveAttribute('src', new RegExp(process.env.PROMPTGATE_TEST_TOKEN!));
  await expect(page.frameLocator('.artifact iframe').locator('h1')).toHaveText('Made by the offline demo model');

  // The token stays in this browser: a reload goes straight to the thread.
  await page.reload();
  await expect(page.locator('.msg.user')).toContainText('Make me a tiny page');
  await openPanel(page, 'Sign out');
  await expect(page.getByLabel('Access token')).toBeVisible();
});

test('threads are renamed and deleted; skills and projects are added', async ({ page }, info) => {
  const title = `A thread to rename ${tag(info)}`;
  await newChat(page, 'scripted');
  await send(page, title);
  await answered(page, `to: ${title}`);
  const threads = await sidebar(page);
  const item = threads.locator('.threads li', { hasText: title });
  await item.getByRole('button', { name: `Rename ${title}` }).click();
  await page.getByLabel('New title').fill(`Renamed ${tag(info)}`);
  await page.getByRole('button', { name: 'Save' }).click();
  const renamed = page.locator('.threads li', { hasText: `Renamed ${tag(info)}` });
  await expect(renamed).toHaveCount(1);
  page.once('dialog', (dialog) => dialog.accept());
  await renamed.getByRole('button', { name: `Delete Renamed ${tag(info)}` }).click();
  await expect(renamed).toHaveCount(0);

  await openPanel(page, 'Skills');
  await page.getByLabel('Slug').fill(`haiku${tag(info)}`);
  await page.getByLabel('Name', { exact: true }).fill('Haiku');
  await page.getByLabel('Description').fill('Answer in a haiku');
  await page.getByLabel('Instructions').fill('Answer in three lines of 5, 7 and 5 syllables.');
  await page.getByRole('button', { name: 'Add skill' }).click();
  await expect(page.locator('.panel .cards')).toContainText(`/haiku${tag(info)}`);

  await openPanel(page, 'Projects');
  await page.getByLabel('Project name').fill('Garden');
  await page.getByLabel('Instructions').fill('Everything is about my vegetable garden.');
  await page.getByRole('button', { name: 'Add project' }).click();
  await expect(page.locator('.panel .cards')).toContainText('Garden');

  await openPanel(page, 'Integrations');
  await expect(page.locator('.panel .cards')).toContainText('Google');
  // This gateway registered no OAuth clients: the app shows the gateway's reason.
  await page.getByRole('button', { name: 'Connect Google' }).click();
  await expect(page.locator('.panel [role=status]')).toContainText('no OAuth client for google');
  await shot(page, 'integrations');
});

test('the thread list loads more as it scrolls, and a send reads only the thread it changed', async ({ page, request }, info) => {
  // More threads than one page of the list (50 by default), created through the API.
  const prefix = `Scroll ${tag(info)}`;
  const title = (n: number) => `${prefix} ${String(n).padStart(2, '0')}`;
  for (let n = 1; n <= 70; n++) {
    const res = await request.post(base_url() + '/v1/threads', { data: { title: title(n) } });
    expect(res.status()).toBe(201);
  }
  const listReads: string[] = [];
  const threadReads: string[] = [];
  page.on('request', (r) => {
    const url = new URL(r.url());
    if (r.method() !== 'GET') return;
    if (url.pathname === '/v1/threads') listReads.push(url.search);
    else if (/^\/v1\/threads\/[^/]+$/.test(url.pathname)) threadReads.push(url.pathname);
  });
  await page.goto(base_url() + '/');
  await sidebar(page);
  const item = (n: number) => page.locator('.thread-title', { hasText: new RegExp(`^${title(n)}$`) });
  const ours = page.locator('.thread-title', { hasText: new RegExp(`^${prefix} \\d\\d$`) });
  await expect(item(70)).toBeVisible();
  await expect(item(1)).toHaveCount(0);
  expect(listReads).toEqual(['']);

  // Scrolling to the end of the list brings the next pages, each thread once.
  await expect(async () => {
    await page.locator('.threads').evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await expect(item(1)).toHaveCount(1, { timeout: 1_000 });
  }).toPass();
  await expect(ours).toHaveCount(70);
  expect(listReads.length).toBeGreaterThan(1);
  expect(listReads.slice(1).every((search) => search.includes('cursor='))).toBe(true);
  await shot(page, 'thread-list-scrolled');

  // A send reads back the one thread it wrote to, which moves to the top; the list is not read again.
  await page.getByLabel('Model').selectOption('scripted');
  await (await sidebar(page)).getByRole('button', { name: 'New chat' }).click();
  listReads.length = 0;
  await send(page, 'A thread after the scroll');
  await expect(answers(page).last()).toContainText('to: A thread after the scroll');
  await sidebar(page);
  await expect(page.locator('.threads li').first()).toContainText('A thread after the scroll');
  expect(listReads).toEqual([]);
  expect(threadReads.length).toBeGreaterThan(0);
  await expect(ours).toHaveCount(70);
});
