// Every screen of the app at each size and theme (the @screens tests run in all four projects):
// it fits the screen without sideways scrolling, follows the system's light or dark theme, and axe
// finds no serious or critical accessibility violation on it.
import AxeBuilder from '@axe-core/playwright';
import type { Page } from '@playwright/test';
import { answers, base_url, expect, isPhone, newChat, openPanel, send, sidebar, test } from './helpers';

/// Checks `within` (default: the whole page; a panel once the page around it was checked, which
/// keeps the suite fast) for serious and critical axe violations.
async function expectAccessible(page: Page, screen: string, within?: string) {
  const axe = new AxeBuilder({ page }).exclude('.artifact iframe');
  const results = await (within ? axe.include(within) : axe).analyze();
  const bad = results.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${screen}: ${v.id} (${v.impact}) ${v.help}\n  ${v.nodes.map((n) => n.target.join(' ')).join('\n  ')}`);
  expect(bad, bad.join('\n')).toEqual([]);
}

async function expectFits(page: Page) {
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
  expect(overflow).toBeLessThanOrEqual(0);
}

const PANELS = ['Settings', 'MCP servers', 'Skills', 'Projects', 'Integrations', 'Keyboard shortcuts'];

test('every screen fits, follows the system theme and passes axe @screens', async ({ page }, info) => {
  // About ten axe runs, each a few seconds on a busy machine.
  test.setTimeout(120_000);
  await newChat(page, 'scripted');
  await send(page, 'Please cite sources about Rust');
  await expect(answers(page).last()).toContainText('is documented');
  await expectFits(page);
  await expectAccessible(page, 'chat');

  // The theme is the system's: a dark page under a dark system, a light one otherwise.
  const background = await page.evaluate(() => getComputedStyle(document.querySelector('.topbar')!).backgroundColor);
  const [r, g, b] = background.match(/\d+/g)!.map(Number);
  const dark = info.project.use.colorScheme === 'dark';
  expect((r + g + b) / 3 < 128, `topbar background ${background}`).toBe(dark);

  // Tool input and output, opened.
  await page.locator('.tool summary').first().click();
  await expectAccessible(page, 'tool details', '.tool');

  if (isPhone(page)) {
    // The thread list is a drawer over the chat, closed until asked for.
    const nav = page.getByRole('navigation', { name: 'Threads' });
    await expect(nav).toBeHidden();
    await sidebar(page);
    await expect(nav).toBeVisible();
    await expectAccessible(page, 'drawer', '#sidebar');
    await page.keyboard.press('Escape');
    await expect(nav).toBeHidden();
  } else {
    await expect(page.getByRole('navigation', { name: 'Threads' })).toBeVisible();
    await expect(page.getByRole('button', { name: 'Threads', exact: true })).toBeHidden();
  }

  for (const name of PANELS) {
    await openPanel(page, name);
    const panel = page.getByRole('complementary', { name });
    await expect(panel.getByRole('heading', { level: 2 })).toBeVisible();
    await expectFits(page);
    if (isPhone(page)) {
      // On a phone a panel covers the screen.
      const box = (await panel.boundingBox())!;
      expect(box.width).toBe(page.viewportSize()!.width);
    }
    await expectAccessible(page, name, 'aside.panel');
    await page.keyboard.press('Escape');
    await expect(panel).toHaveCount(0);
  }

  await answers(page).last().getByRole('button', { name: 'Inspect' }).click();
  const inspector = page.getByRole('complementary', { name: 'Inspector' });
  await expect(inspector.getByTestId('prompt-preview')).not.toBeEmpty();
  await expectFits(page);
  if (isPhone(page)) expect((await inspector.boundingBox())!.width).toBe(page.viewportSize()!.width);
  await expectAccessible(page, 'inspector', 'aside.inspector');
});

test('the page fits a 360 px screen @screens', async ({ page }) => {
  test.skip(!isPhone(page), 'a phone size');
  await page.setViewportSize({ width: 360, height: 740 });
  await page.goto(base_url() + '/');
  await expect(page.getByRole('heading', { level: 1 })).toBeVisible();
  await expectFits(page);
  await openPanel(page, 'Settings');
  await expectFits(page);
});

test('the sign-in screen passes axe @screens', async ({ page }) => {
  await page.goto(process.env.PROMPTGATE_TOKENS_BASE_URL! + '/');
  await expect(page.getByLabel('Access token')).toBeVisible();
  await expectFits(page);
  await expectAccessible(page, 'sign-in');
});
