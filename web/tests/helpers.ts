// What the browser tests share: a `test` that fails on any Content Security Policy violation, and
// the steps a user takes (open the thread list on a phone, start a chat, send, open a panel).
import { expect, test as base, type Page, type TestInfo } from '@playwright/test';
import path from 'node:path';

export { expect };

// The gateway serves the page under a strict Content Security Policy: nothing the app does may trip it.
export const test = base.extend<{ cspViolations: void }>({
  cspViolations: [
    async ({ page }, use) => {
      const violations: string[] = [];
      page.on('console', (message) => {
        if (message.type() === 'error' && /Content Security Policy/i.test(message.text())) violations.push(message.text());
      });
      await use();
      expect(violations).toEqual([]);
    },
    { auto: true },
  ],
});

export const base_url = () => process.env.PROMPTGATE_BASE_URL!;

/// A word naming the test's project (size and theme), for data that must not meet another
/// project's in the shared gateway.
export const tag = (info: TestInfo) => info.project.name.replace(/-/g, '');

export async function shot(page: Page, name: string) {
  const project = test.info().project.name;
  await page.screenshot({ path: path.join(process.env.PROMPTGATE_SCREENSHOTS!, `${name}-${project}.png`), fullPage: true });
}

export const isPhone = (page: Page) => (page.viewportSize()?.width ?? 1280) <= 760;

/// On a phone the thread list (and the panel buttons under it) is a drawer: open it.
export async function sidebar(page: Page) {
  const toggle = page.getByRole('button', { name: 'Threads', exact: true });
  if (isPhone(page) && (await toggle.getAttribute('aria-expanded')) !== 'true') await toggle.click();
  return page.getByRole('navigation', { name: 'Threads' });
}

export async function openPanel(page: Page, name: string) {
  // On a phone an open panel covers the screen, and the way to the next one is to close it.
  const close = page.getByRole('button', { name: 'Close panel' });
  if (isPhone(page) && (await close.isVisible())) await close.click();
  await (await sidebar(page)).getByRole('button', { name, exact: true }).click();
}

export async function newChat(page: Page, model: 'demo' | 'scripted') {
  await page.goto(base_url() + '/');
  await page.getByLabel('Model').selectOption(model);
  await (await sidebar(page)).getByRole('button', { name: 'New chat' }).click();
}

export const answers = (page: Page) => page.locator('.msg.assistant');
export const sendButton = (page: Page) => page.getByRole('button', { name: 'Send', exact: true });

/// Waits for the last answer to show `text` and for its stream to end (Send is back): the text shows
/// before the end, and while an answer runs Escape stops it instead of closing a panel.
export async function answered(page: Page, text: string) {
  await expect(answers(page).last()).toContainText(text);
  await expect(sendButton(page)).toBeVisible();
}

export async function send(page: Page, text: string) {
  // While an answer is still streaming the composer offers Stop and Enter sends nothing; its text can
  // show before the stream has finished, so wait for Send as a user would.
  await expect(sendButton(page)).toBeVisible();
  const box = page.getByLabel('Message', { exact: true });
  await box.fill(text);
  await box.press('Enter');
}
