// The admin view's usage chart: real sends by two new users on two models show up per day, per user
// (with the budget an admin set) and per model, at desktop and phone size, and axe finds nothing
// serious on it.
import AxeBuilder from '@axe-core/playwright';
import type { APIRequestContext, Page } from '@playwright/test';
import { expect, openPanel, shot, tag, test } from './helpers';

const tokensBase = () => process.env.PROMPTGATE_TOKENS_BASE_URL!;
const admin = () => ({ Authorization: `Bearer ${process.env.PROMPTGATE_ADMIN_TOKEN}` });
const today = () => new Date().toISOString().slice(0, 10);

/// A send in a new thread as `secret` on `model`, read to its end; the tokens the turn reported.
async function sendAs(request: APIRequestContext, secret: string, model: string, text: string): Promise<number> {
  const thread = `usage-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  const res = await request.post(`${tokensBase()}/v1/chat`, {
    headers: { Authorization: `Bearer ${secret}` },
    data: { id: thread, model, trigger: 'submit-message', messages: [{ id: `u-${thread}`, role: 'user', parts: [{ type: 'text', text }] }] },
  });
  expect(res.status()).toBe(200);
  let tokens = 0;
  for (const line of (await res.text()).split('\n')) {
    if (!line.startsWith('data: {')) continue;
    const usage = JSON.parse(line.slice(6)).messageMetadata?.usage;
    if (usage) tokens = usage.inputTokens + usage.outputTokens;
  }
  expect(tokens).toBeGreaterThan(0);
  return tokens;
}

/// The tokens the ledger holds today for `model`, everyone's (what the chart's series starts from).
async function modelTokensToday(request: APIRequestContext, model: string): Promise<number> {
  const report = await (await request.get(`${tokensBase()}/v1/usage?group_by=day&then_by=model&from=${today()}`, { headers: admin() })).json();
  const row = report.data.find((r: { group: string; subgroup: string }) => r.group === today() && r.subgroup === model);
  return row ? row.input_tokens + row.output_tokens : 0;
}

async function createUser(request: APIRequestContext, name: string): Promise<{ id: string; secret: string }> {
  const res = await request.post(`${tokensBase()}/v1/admin/users`, { headers: admin(), data: { name } });
  expect(res.status()).toBe(201);
  const created = await res.json();
  return { id: created.user.id, secret: created.key.secret };
}

async function expectAccessible(page: Page, within: string) {
  const results = await new AxeBuilder({ page }).include(within).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}) ${v.help}\n  ${v.nodes.map((n) => n.target.join(' ')).join('\n  ')}`);
  expect(bad, bad.join('\n')).toEqual([]);
}

test('the admin view charts usage per day by user and by model, with budgets', async ({ page, request }, info) => {
  test.setTimeout(90_000);
  const ann = `ann${tag(info)}`;
  const ben = `ben${tag(info)}`;
  const a = await createUser(request, ann);
  const b = await createUser(request, ben);

  // Real sends: Ann on both models, Ben on one. Then Ann gets a budget (in money as well: after
  // her send to the unpriced model, which a money budget would refuse).
  const liteBefore = await modelTokensToday(request, 'demo-lite');
  const annDemo = await sendAs(request, a.secret, 'demo', 'What can you do?');
  const annLite = await sendAs(request, a.secret, 'demo-lite', 'Say hello');
  const benDemo = await sendAs(request, b.secret, 'demo', 'Tell me about tides');
  const budget = { period_tokens: 50000, period_cost: 2.5, period_secs: 86400 };
  expect((await request.put(`${tokensBase()}/v1/admin/users/${a.id}/budget`, { headers: admin(), data: budget })).status()).toBe(200);
  const hourly = { period_tokens: 100000, period_secs: 3600 };
  expect((await request.put(`${tokensBase()}/v1/admin/users/${b.id}/budget`, { headers: admin(), data: hourly })).status()).toBe(200);

  await page.goto(tokensBase() + '/');
  await page.getByLabel('Access token').fill(process.env.PROMPTGATE_ADMIN_TOKEN!);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await openPanel(page, 'Users');
  const panel = page.getByRole('complementary', { name: 'Users' });
  const chart = panel.getByRole('img', { name: /Tokens per day by user/ });
  await expect(chart).toBeVisible();

  // By user: each user's bar today holds what their sends used; the legend names the budget.
  await expect(chart.locator(`rect[data-series="${ann}"][data-day="${today()}"]`)).toHaveAttribute('data-tokens', String(annDemo + annLite));
  await expect(chart.locator(`rect[data-series="${ben}"][data-day="${today()}"]`)).toHaveAttribute('data-tokens', String(benDemo));
  const legend = panel.getByRole('list', { name: 'Usage by user' });
  await expect(legend.locator(`li[data-series="${ann}"]`)).toContainText(`${(annDemo + annLite).toLocaleString('en-US')} tokens`);
  await expect(legend.locator(`li[data-series="${ann}"]`)).toContainText('budget: 50,000 tokens a day, 2.5 a day');
  await expect(legend.locator(`li[data-series="${ann}"]`)).toContainText('cost');
  // A period of whole hours reads in hours, not as a fraction of a day.
  await expect(legend.locator(`li[data-series="${ben}"]`)).toContainText('budget: 100,000 tokens an hour');
  const box = await chart.boundingBox();
  expect(box!.width).toBeLessThanOrEqual(page.viewportSize()!.width);
  expect(box!.height).toBeGreaterThan(50);
  await expectAccessible(page, 'section[aria-labelledby="usage-title"]');
  await shot(page, 'usage-chart');

  // By model: the new model's bar grew by exactly Ann's send on it.
  await panel.getByRole('button', { name: 'By model' }).click();
  const byModel = panel.getByRole('img', { name: /Tokens per day by model/ });
  await expect(byModel.locator(`rect[data-series="demo-lite"][data-day="${today()}"]`)).toHaveAttribute('data-tokens', String(liteBefore + annLite));
  await expect(byModel.locator(`rect[data-series="demo"][data-day="${today()}"]`)).toHaveCount(1);
  await expect(panel.getByRole('list', { name: 'Usage by model' }).locator('li[data-series="demo-lite"]')).toBeVisible();
  await expect(panel.getByRole('button', { name: 'By model' })).toHaveAttribute('aria-pressed', 'true');
  await expectAccessible(page, 'section[aria-labelledby="usage-title"]');
});
