// Consent in the middle of a turn, in the app: the user authorized the Python SDK's auth peer, whose
// authorization server then forgets every grant as the next tool call arrives; the call shows a card
// with an Authorize button and waits (also after a reload). Authorize opens the authorization in a
// new tab, which consents at once and lands on the gateway's callback; the same answer then goes on
// with the tool's result, and the card says it was authorized. Stop ends the wait instead. A server
// never connected opens the answer with a card that waits for nothing and connects it.
import AxeBuilder from '@axe-core/playwright';
import type { APIRequestContext, Page } from '@playwright/test';
import { answers, base_url, expect, newChat, send, sendButton, shot, tag, test } from './helpers';

const peer = () => process.env.PROMPTGATE_AUTH_MCP_URL;

/// Registers the peer as `name` and authorizes it as the user would (the peer consents at once);
/// returns the server's id.
async function connect(request: APIRequestContext, name: string): Promise<string> {
  const created = await request.post(`${base_url()}/v1/mcp-servers`, { data: { name, url: peer() } });
  expect(created.status()).toBe(201);
  const id = (await created.json()).id;
  const started = await request.post(`${base_url()}/v1/mcp-servers/${id}/authorize`, { data: {} });
  expect(started.ok()).toBe(true);
  const consented = await request.get((await started.json()).authorization_url, { maxRedirects: 0 });
  expect(consented.status()).toBe(302);
  const callback = await request.get(consented.headers()['location']);
  expect(callback.ok()).toBe(true);
  // Reading who it is changes nothing, but says nothing of that either: let it run unasked.
  const allowed = await request.put(`${base_url()}/v1/settings`, { data: { tool_approval: { mcp_servers: { [name]: 'allow' } } } });
  expect(allowed.ok()).toBe(true);
  return id;
}

/// The peer's authorization server forgets every grant when the next tool call arrives.
async function revokeOnNextCall(request: APIRequestContext) {
  const armed = await request.post(peer()!.replace(/\/mcp$/, '/test/revoke-grants-on-next-call'));
  expect(armed.ok()).toBe(true);
}

const card = (page: Page, name: string) => page.getByRole('group', { name: `${name} needs your authorization` });
const stopButton = (page: Page) => page.getByRole('button', { name: 'Stop', exact: true });

async function expectCard(page: Page, name: string) {
  await expect(card(page, name)).toBeVisible({ timeout: 15_000 });
  await expect(card(page, name)).toContainText('notes');
  await expect(card(page, name).getByRole('link', { name: `Authorize ${name}` })).toBeVisible();
  await expect(card(page, name).getByRole('status')).toContainText('Waiting for your authorization');
  await expect(stopButton(page)).toBeVisible();
  await expect(page.getByRole('status').filter({ hasText: 'A tool waits for your authorization above' })).toBeVisible();
}

/// A new chat calls `tool` of the connected server `name` after arming the revocation: the answer
/// waits on the authorization card.
async function callAfterRevocation(page: Page, request: APIRequestContext, name: string, tool: string) {
  await revokeOnNextCall(request);
  await newChat(page, 'scripted');
  await send(page, `Please call ${tool} for me`);
  await expectCard(page, name);
}

test.describe('consent in the middle of a turn', () => {
  test.skip(!peer(), 'the Python auth peer is not installed: run crates/promptgate-mcp/tests/peers/install.sh');
  let server = '';
  test.afterEach(async ({ request }) => {
    await request.delete(`${base_url()}/v1/mcp-servers/${server}`);
  });

  test('a revoked grant brings the card; authorizing in a new tab lets the same call finish', async ({ page, request }, info) => {
    const name = `Vault ${tag(info)}`;
    const tool = `vault_${tag(info)}_whoami`;
    server = await connect(request, name);
    await callAfterRevocation(page, request, name, tool);
    const axe = await new AxeBuilder({ page }).include('.authorization').analyze();
    expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
    await shot(page, 'authorization');
    // The call still waits after a reload: the card comes back with the running answer.
    await expect(page).toHaveURL(/thread=/);
    await page.reload();
    await expectCard(page, name);

    const opened = page.waitForEvent('popup');
    await card(page, name).getByRole('link', { name: `Authorize ${name}` }).click();
    const tab = await opened;
    // The peer consents at once and sends the tab back to the gateway's callback.
    await expect(tab.locator('body')).toContainText(`${name} is connected`, { timeout: 15_000 });
    await tab.close();

    const answer = answers(page).last();
    await expect(answer).toContainText('The notes server said: py-auth-peer', { timeout: 15_000 });
    await expect(card(page, name)).toHaveCount(0);
    await expect(answer.locator('.authorization-ended')).toContainText('Authorized');
    await expect(sendButton(page)).toBeVisible();
    await page.reload();
    await expect(answers(page).last().locator('.authorization-ended')).toContainText('Authorized');
  });

  test('Stop ends the wait for an authorization', async ({ page, request }, info) => {
    const name = `Safe ${tag(info)}`;
    const tool = `safe_${tag(info)}_whoami`;
    server = await connect(request, name);
    await callAfterRevocation(page, request, name, tool);
    await stopButton(page).click();
    await expect(card(page, name)).toHaveCount(0);
    await expect(answers(page).last().locator('.authorization-ended')).toBeVisible();
    await expect(sendButton(page)).toBeVisible();
  });

  test('a server that was never connected opens the answer with a card that connects it', async ({ page, request }, info) => {
    const name = `Ledger ${tag(info)}`;
    const created = await request.post(`${base_url()}/v1/mcp-servers`, { data: { name, url: peer() } });
    expect(created.status()).toBe(201);
    server = (await created.json()).id;
    await newChat(page, 'scripted');
    await send(page, 'Hello there');
    const needed = page.getByRole('group', { name: `${name} is not connected` });
    await expect(needed).toBeVisible({ timeout: 15_000 });
    await expect(sendButton(page)).toBeVisible();
    // Nothing waits: the card stays as it is once the answer ended, and a reload shows it again.
    await page.reload();
    await expect(needed).toBeVisible();
    const opened = page.waitForEvent('popup');
    await needed.getByRole('link', { name: `Connect ${name}` }).click();
    const tab = await opened;
    await expect(tab.locator('body')).toContainText(`${name} is connected`, { timeout: 15_000 });
    await tab.close();
    const listed = await (await request.get(`${base_url()}/v1/mcp-servers/${server}`)).json();
    expect(listed.authorization?.state).toBe('connected');
    await shot(page, 'authorization-needed');
  });
});
