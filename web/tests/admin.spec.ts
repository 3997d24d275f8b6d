// The admin view in tokens mode: an admin creates a user, sets their budget, disables and deletes
// them; every user manages their own keys; a user who is not an admin never sees the users panel.
import { expect, openPanel, sidebar, tag, test } from './helpers';

const tokensBase = () => process.env.PROMPTGATE_TOKENS_BASE_URL!;

test('an admin manages users and budgets, and a user their own keys', async ({ page, request }, info) => {
  await page.goto(tokensBase() + '/');
  await page.getByLabel('Access token').fill(process.env.PROMPTGATE_ADMIN_TOKEN!);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const admin = { Authorization: `Bearer ${process.env.PROMPTGATE_ADMIN_TOKEN}` };

  const name = `bo${tag(info)}`;
  await openPanel(page, 'Users');
  const panel = page.getByRole('complementary', { name: 'Users' });
  await panel.getByLabel('User name').fill(name);
  await panel.getByRole('button', { name: 'Create user' }).click();
  const shown = panel.getByRole('status').filter({ hasText: 'shown only now' });
  const secret = (await shown.locator('code').textContent())!;
  expect(secret).toMatch(/^pg_/);
  const card = panel.locator(`li[data-user="${name}"]`);
  await expect(card).toContainText('user, active, 1 key(s)');
  expect((await request.get(`${tokensBase()}/v1/keys`, { headers: { Authorization: `Bearer ${secret}` } })).status()).toBe(200);

  // A budget set in the panel is the one the API reads.
  await card.getByLabel(`Tokens per period for ${name}`).fill('5000');
  await card.getByLabel(`Tokens per minute for ${name}`).fill('300');
  await card.getByRole('button', { name: `Save budget for ${name}` }).click();
  await expect(card.getByRole('status')).toHaveText('Budget saved');
  const users = await (await request.get(`${tokensBase()}/v1/admin/users`, { headers: admin })).json();
  const id = users.data.find((u: { name: string }) => u.name === name).id;
  const budget = await (await request.get(`${tokensBase()}/v1/admin/users/${id}/budget`, { headers: admin })).json();
  expect(budget).toEqual({ period_tokens: 5000, period_cost: null, period_secs: 86400, tokens_per_minute: 300 });

  // Disabled: their key is refused; deleted: gone.
  await card.getByRole('button', { name: `Disable ${name}` }).click();
  await expect(card).toContainText('disabled');
  expect((await request.get(`${tokensBase()}/v1/keys`, { headers: { Authorization: `Bearer ${secret}` } })).status()).toBe(401);
  await card.getByRole('button', { name: `Delete ${name}` }).click();
  await expect(card).toHaveCount(0);

  // The admin's own keys: one made, shown once, revoked.
  await openPanel(page, 'API keys');
  const keys = page.getByRole('complementary', { name: 'API keys' });
  const keyName = `browser-${tag(info)}`;
  await keys.getByLabel('Key name').fill(keyName);
  await keys.getByRole('button', { name: 'Create key' }).click();
  await expect(keys.getByRole('status').locator('code')).toHaveText(/^pg_/);
  await expect(keys.getByRole('list', { name: 'Your keys' })).toContainText(keyName);
  await keys.getByRole('button', { name: `Revoke ${keyName}` }).click();
  await expect(keys.getByRole('list', { name: 'Your keys' })).not.toContainText(keyName);

  // Someone who is not an admin has keys but no users panel.
  await openPanel(page, 'Sign out');
  await page.getByLabel('Access token').fill(process.env.PROMPTGATE_TEST_TOKEN!);
  await page.getByRole('button', { name: 'Sign in' }).click();
  const nav = await sidebar(page);
  await expect(nav.getByRole('button', { name: 'API keys', exact: true })).toBeVisible();
  await expect(nav.getByRole('button', { name: 'Users', exact: true })).toHaveCount(0);
});
