// The reference web app in a real browser against a real gateway (see global-setup.ts).
import { expect, test, type Page } from '@playwright/test';
import path from 'node:path';
import { SEARCH_RESULTS } from './upstream.mjs';

const base = () => process.env.PROMPTGATE_BASE_URL!;

async function shot(page: Page, name: string) {
  await page.screenshot({ path: path.join(process.env.PROMPTGATE_SCREENSHOTS!, `${name}.png`), fullPage: true });
}

async function newChat(page: Page, model: 'demo' | 'scripted') {
  await page.goto(base() + '/');
  await page.getByLabel('Model').selectOption(model);
  await page.getByRole('button', { name: 'New chat' }).click();
}

async function send(page: Page, text: string) {
  // While an answer is still streaming the composer offers Stop and Enter sends nothing; its text can
  // show before the stream has finished, so wait for Send as a user would.
  await expect(sendButton(page)).toBeVisible();
  const box = page.getByLabel('Message', { exact: true });
  await box.fill(text);
  await box.press('Enter');
}

// The gateway serves the page under a strict Content Security Policy: nothing the app does may trip it.
let violations: string[] = [];
test.beforeEach(({ page }) => {
  violations = [];
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) violations.push(message.text());
  });
});
test.afterEach(() => {
  expect(violations).toEqual([]);
});

const answers = (page: Page) => page.locator('.msg.assistant');
const sendButton = (page: Page) => page.getByRole('button', { name: 'Send', exact: true });

test('a message shows the tool part with its progress title, then the answer', async ({ page }) => {
  await newChat(page, 'demo');
  await send(page, 'What is new in Rust?');
  const tool = page.locator('.tool[data-tool="search"]');
  await expect(tool).toBeVisible();
  await expect(answers(page).last()).toContainText('Here is what the tools returned');
  await expect(tool.locator('.tool-sub')).toContainText('Searching');
  await tool.locator('summary').click();
  await expect(tool.locator('.tool-body')).toContainText('rust-lang.org');
  await expect(page.locator('.threads')).toContainText('What is new in Rust?');
  // Search reaches message text, not only titles: the answer quoted the search result's snippet.
  await page.getByLabel('Search threads').fill('Rust book');
  await expect(page.locator('.threads li')).toHaveCount(1);
  await page.getByLabel('Search threads').fill('nothing like this anywhere');
  await expect(page.locator('.threads li')).toHaveCount(0);
  await page.getByLabel('Search threads').fill('');
  await shot(page, 'chat-with-tool');
});

test('citations are chips linking to the registered sources', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Please cite sources about Rust');
  const answer = answers(page).last();
  await expect(answer).toContainText('is documented');
  await expect(answer.locator('a.cite')).toHaveCount(2);
  for (const [i, source] of SEARCH_RESULTS.entries()) {
    const chip = answer.locator(`a.cite[data-citation="${i + 1}"]`);
    await expect(chip).toHaveAttribute('href', source.url);
    await expect(chip).toHaveAttribute('title', source.title);
  }
  await shot(page, 'citations');
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
  await shot(page, 'artifact');
});

test('Escape stops an answer mid-stream and the partial answer is kept', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'Answer slow please');
  await expect(answers(page).last()).toContainText('word3');
  await page.keyboard.press('Escape');
  await expect(sendButton(page)).toBeVisible();
  await page.reload();
  await expect(answers(page).last()).toContainText('word3');
  await expect(answers(page).last()).toContainText('Answer stopped');
  await expect(answers(page).last()).not.toContainText('word599');
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
  await expect(answers(page).last()).toContainText('to: Hello there');

  await page.getByRole('button', { name: 'Settings' }).click();
  await page.getByLabel('Your name').fill('Ada Lovelace');
  await page.getByLabel('Place').fill('London');
  await page.getByLabel('Time zone').fill('Europe/London');
  await page.getByRole('button', { name: 'Save settings' }).click();
  await expect(page.getByRole('status')).toHaveText('Saved');
  await shot(page, 'settings');
  await page.getByRole('button', { name: 'Close panel' }).click();

  await page.getByRole('button', { name: 'Inspector' }).click();
  await expect(page.getByTestId('prompt-preview')).toContainText('Ada Lovelace');
  // What of the thread the next send shows the model, and what this answer's model saw.
  await expect(page.getByTestId('next-context')).toContainText('2 message(s) sent');
  await answers(page).last().getByRole('button', { name: 'Inspect' }).click();
  await expect(page.locator('.answer-details')).toContainText('scripted');
  await expect(page.getByTestId('answer-context')).toContainText('1 message(s) sent');
  await shot(page, 'inspector');
});

test('an MCP server is added and probed, and its tools join the next send', async ({ page }) => {
  await page.goto(base() + '/');
  await page.getByRole('button', { name: 'MCP servers' }).click();
  await page.getByLabel('Server name').fill('Everything');
  await page.getByLabel('Server URL').fill(process.env.PROMPTGATE_MCP_URL!);
  await page.getByRole('button', { name: 'Add server' }).click();
  const card = page.locator('[data-mcp-server="Everything"]');
  await expect(card.locator('.probe.ok')).toContainText('tools', { timeout: 15_000 });
  await expect(card.locator('.probe.ok')).toContainText('echo');
  await shot(page, 'mcp-servers');
  await page.getByRole('button', { name: 'Close panel' }).click();

  await page.getByLabel('Model').selectOption('scripted');
  await send(page, 'Hi MCP');
  await expect(answers(page).last()).toContainText('to: Hi MCP');
  await page.getByRole('button', { name: 'Inspector' }).click();
  await expect(page.locator('.tool-list')).toContainText('everything_echo');

  // A call of an MCP tool is marked with its server.
  await send(page, 'Please echo something');
  const tool = page.locator('.tool[data-tool="everything_echo"]');
  await expect(answers(page).last()).toContainText('The MCP server echoed.');
  await expect(tool.locator('.badge.mcp')).toHaveText('MCP · Everything');
  await tool.locator('summary').click();
  await expect(tool.locator('.tool-body')).toContainText('hello from the browser');
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
  await page.getByRole('button', { name: 'Sign out' }).click();
  await expect(page.getByLabel('Access token')).toBeVisible();
});

test('threads are renamed and deleted; skills and projects are added', async ({ page }) => {
  await newChat(page, 'scripted');
  await send(page, 'A thread to rename');
  await expect(answers(page).last()).toContainText('to: A thread to rename');
  const item = page.locator('.threads li', { hasText: 'A thread to rename' });
  await item.getByRole('button', { name: 'Rename A thread to rename' }).click();
  await page.getByLabel('New title').fill('Renamed thread');
  await page.getByRole('button', { name: 'Save' }).click();
  const renamed = page.locator('.threads li', { hasText: 'Renamed thread' });
  await expect(renamed).toHaveCount(1);
  page.once('dialog', (dialog) => dialog.accept());
  await renamed.getByRole('button', { name: 'Delete Renamed thread' }).click();
  await expect(renamed).toHaveCount(0);

  await page.getByRole('button', { name: 'Skills' }).click();
  await page.getByLabel('Slug').fill('haiku');
  await page.getByLabel('Name', { exact: true }).fill('Haiku');
  await page.getByLabel('Description').fill('Answer in a haiku');
  await page.getByLabel('Instructions').fill('Answer in three lines of 5, 7 and 5 syllables.');
  await page.getByRole('button', { name: 'Add skill' }).click();
  await expect(page.locator('.panel .cards')).toContainText('/haiku');

  await page.getByRole('button', { name: 'Projects', exact: true }).click();
  await page.getByLabel('Project name').fill('Garden');
  await page.getByLabel('Instructions').fill('Everything is about my vegetable garden.');
  await page.getByRole('button', { name: 'Add project' }).click();
  await expect(page.locator('.panel .cards')).toContainText('Garden');

  await page.getByRole('button', { name: 'Integrations' }).click();
  await expect(page.locator('.panel .cards')).toContainText('Google');
  // This gateway registered no OAuth clients: the app shows the gateway's reason.
  await page.getByRole('button', { name: 'Connect Google' }).click();
  await expect(page.locator('.panel [role=status]')).toContainText('no OAuth client for google');
  await shot(page, 'integrations');
});

test('the thread list loads more as it scrolls, and a send reads only the thread it changed', async ({ page, request }) => {
  // More threads than one page of the list (50 by default), created through the API.
  const title = (n: number) => `Scroll thread ${String(n).padStart(2, '0')}`;
  for (let n = 1; n <= 70; n++) {
    const res = await request.post(base() + '/v1/threads', { data: { title: title(n) } });
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
  await page.goto(base() + '/');
  const item = (n: number) => page.locator('.thread-title', { hasText: new RegExp(`^${title(n)}$`) });
  await expect(item(70)).toBeVisible();
  await expect(item(1)).toHaveCount(0);
  expect(listReads).toEqual(['']);

  // Scrolling to the end of the list brings the next pages, each thread once.
  await expect(async () => {
    await page.locator('.threads').evaluate((el) => el.scrollTo(0, el.scrollHeight));
    await expect(item(1)).toHaveCount(1, { timeout: 1_000 });
  }).toPass();
  await expect(page.locator('.thread-title', { hasText: /^Scroll thread \d\d$/ })).toHaveCount(70);
  expect(listReads.length).toBeGreaterThan(1);
  expect(listReads.slice(1).every((search) => search.includes('cursor='))).toBe(true);
  await shot(page, 'thread-list-scrolled');

  // A send reads back the one thread it wrote to, which moves to the top; the list is not read again.
  await page.getByLabel('Model').selectOption('scripted');
  await page.getByRole('button', { name: 'New chat' }).click();
  listReads.length = 0;
  await send(page, 'A thread after the scroll');
  await expect(answers(page).last()).toContainText('to: A thread after the scroll');
  await expect(page.locator('.threads li').first()).toContainText('A thread after the scroll');
  expect(listReads).toEqual([]);
  expect(threadReads.length).toBeGreaterThan(0);
  await expect(page.locator('.thread-title', { hasText: /^Scroll thread \d\d$/ })).toHaveCount(70);
});
