// MCP OAuth in the browser: a server that asks for authorization (the official Python SDK's auth
// support, whose authorization server consents at once) is added in the MCP panel, which says it
// needs the user's authorization; Connect opens the authorization in a window of its own, and once
// that window is back on the gateway the panel shows the server connected, with its tools. Reconnect
// runs the whole flow again. The TypeScript SDK's auth router is connected the same way, through
// its consent page, with the gateway's client metadata document as the client id.
import type { APIRequestContext } from '@playwright/test';
import { base_url, expect, openPanel, shot, tag, test } from './helpers';

const peer = () => process.env.PROMPTGATE_AUTH_MCP_URL;

/// What a peer counted (its test hook): authorization codes issued, client registrations...
async function stats(request: APIRequestContext, url: string): Promise<Record<string, number>> {
  return (await request.get(url.replace(/\/mcp$/, '/test/stats'))).json();
}

async function codes(request: APIRequestContext): Promise<number> {
  return (await stats(request, peer()!)).codes;
}

async function removeServers(request: APIRequestContext, name: string) {
  const servers: { id: string; name: string }[] = await (await request.get(base_url() + '/v1/mcp-servers')).json();
  for (const s of servers.filter((s) => s.name === name)) await request.delete(`${base_url()}/v1/mcp-servers/${s.id}`);
}

test('an MCP server that asks for OAuth is connected, then reconnected, from the MCP panel', async ({ page, request }, info) => {
  test.skip(!peer(), 'the Python auth peer is not installed: run crates/promptgate-mcp/tests/peers/install.sh');
  const name = `Notes ${tag(info)}`;
  await page.goto(base_url() + '/');
  await openPanel(page, 'MCP servers');
  await page.getByLabel('Server name').fill(name);
  await page.getByLabel('Server URL').fill(peer()!);
  await page.getByRole('button', { name: 'Add server' }).click();
  const card = page.locator(`[data-mcp-server="${name}"]`);
  const line = card.locator('.auth');
  await expect(line).toHaveAttribute('data-auth-state', 'needs_authorization');
  await expect(line).toContainText('Needs your authorization');
  await expect(card.locator('.probe.ok')).toHaveCount(0);

  try {
    for (const [button, issued] of [
      ['Connect', 1],
      ['Reconnect', 2],
    ] as const) {
      const before = await codes(request);
      const opened = page.waitForEvent('popup');
      await card.getByRole('button', { name: `${button} ${name}` }).click();
      // The window goes to the authorization server, which sends it back to the gateway's
      // callback; the panel closes it once it is back.
      const popup = await opened;
      await popup.waitForEvent('close', { timeout: 15_000 });
      await expect(line).toHaveAttribute('data-auth-state', 'connected');
      await expect(line).toContainText('Connected with your authorization');
      await expect(card.locator('.probe.ok')).toContainText('whoami', { timeout: 15_000 });
      expect(await codes(request), `${button} made one authorization`).toBe(before + 1);
      if (issued === 1) await shot(page, 'mcp-oauth-connected');
    }
  } finally {
    await removeServers(request, name);
  }
});

test("the TypeScript SDK's authorization server is connected through its consent page", async ({ page, request }, info) => {
  const url = process.env.PROMPTGATE_TS_AUTH_MCP_URL!;
  const name = `TS notes ${tag(info)}`;
  await page.goto(base_url() + '/');
  await openPanel(page, 'MCP servers');
  await page.getByLabel('Server name').fill(name);
  await page.getByLabel('Server URL').fill(url);
  await page.getByRole('button', { name: 'Add server' }).click();
  const card = page.locator(`[data-mcp-server="${name}"]`);
  const line = card.locator('.auth');
  await expect(line).toHaveAttribute('data-auth-state', 'needs_authorization');

  try {
    const before = await stats(request, url);
    const opened = page.waitForEvent('popup');
    await card.getByRole('button', { name: `Connect ${name}` }).click();
    // The authorization server asks the user; the click sends the window back to the gateway.
    const popup = await opened;
    await popup.getByRole('button', { name: 'Allow' }).click();
    await popup.waitForEvent('close', { timeout: 15_000 });
    await expect(line).toHaveAttribute('data-auth-state', 'connected');
    await expect(card.locator('.probe.ok')).toContainText('whoami', { timeout: 15_000 });
    await expect(card.locator('.probe.ok')).toContainText('add_note');
    const after = await stats(request, url);
    expect(after.codes, 'one authorization').toBe(before.codes + 1);
    expect(after.registrations, 'the client metadata document, no registration').toBe(before.registrations);
    expect(after.metadata_documents).toBeGreaterThan(before.metadata_documents);
    await shot(page, 'mcp-oauth-typescript-connected');
  } finally {
    await removeServers(request, name);
  }
});

test('a server is connected with the OAuth client the user gives under Advanced', async ({ page, request }, info) => {
  test.skip(!peer(), 'the Python auth peer is not installed: run crates/promptgate-mcp/tests/peers/install.sh');
  const name = `By hand ${tag(info)}`;
  const clientId = `by-hand-${tag(info)}`;
  // The user registered promptgate with the authorization server by hand, as a confidential client.
  const added = await request.post(peer()!.replace(/\/mcp$/, '/test/clients'), {
    data: {
      client_id: clientId,
      client_secret: 'hand secret',
      redirect_uri: `${base_url()}/v1/mcp-servers/oauth/callback`,
      token_endpoint_auth_method: 'client_secret_post',
    },
  });
  expect(added.ok()).toBe(true);
  await page.goto(base_url() + '/');
  await openPanel(page, 'MCP servers');
  await page.getByLabel('Server name').fill(name);
  await page.getByLabel('Server URL').fill(peer()!);
  await page.getByText('Advanced: your own OAuth client').click();
  await page.getByLabel('OAuth client id (optional)').fill(clientId);
  await page.getByLabel('OAuth client secret (optional)').fill('hand secret');
  await page.getByRole('button', { name: 'Add server' }).click();
  const card = page.locator(`[data-mcp-server="${name}"]`);
  await expect(card).toContainText(`OAuth client ${clientId} (with a secret)`);
  const line = card.locator('.auth');
  await expect(line).toHaveAttribute('data-auth-state', 'needs_authorization');

  try {
    const before = await stats(request, peer()!);
    const opened = page.waitForEvent('popup');
    await card.getByRole('button', { name: `Connect ${name}` }).click();
    const popup = await opened;
    await popup.waitForEvent('close', { timeout: 15_000 });
    await expect(line).toHaveAttribute('data-auth-state', 'connected');
    await expect(card.locator('.probe.ok')).toContainText('whoami', { timeout: 15_000 });
    const after = await stats(request, peer()!);
    expect(after.codes, 'one authorization').toBe(before.codes + 1);
    expect(after.registrations, "the user's client, no registration").toBe(before.registrations);
    await shot(page, 'mcp-oauth-own-client');
  } finally {
    await removeServers(request, name);
  }
});
