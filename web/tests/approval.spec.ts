// Tool approval in the app: a call of a tool whose policy is `ask` shows a card with the tool and its
// input; Approve runs it and Deny (with a reason) refuses it, and the same answer goes on either way.
// The card also shows after a reload and in another browser, and works there.
import AxeBuilder from '@axe-core/playwright';
import type { APIRequestContext, Page } from '@playwright/test';
import { answers, base_url, expect, newChat, send, sendButton, shot, tag, test } from './helpers';

/// The scripted model adds a task on "remind me to …"; the user's settings make that tool ask.
async function askForTasks(request: APIRequestContext, on: boolean) {
  const body = on ? { experimental_tasks: true, tool_approval: { tools: { addTasks: 'ask' } } } : { experimental_tasks: false };
  const res = await request.put(`${base_url()}/v1/settings`, { data: body });
  expect(res.ok()).toBe(true);
}

const card = (page: Page) => page.getByRole('group', { name: /Allow addTasks to run/ });

async function expectCardFor(page: Page, task: string) {
  await expect(card(page)).toBeVisible();
  await expect(card(page).getByLabel('Input of addTasks')).toContainText(task);
  await expect(card(page).getByRole('button', { name: 'Approve' })).toBeEnabled();
  await expect(page.locator('.tool[data-tool="addTasks"] .tool-outcome')).toHaveText('waits for your approval');
}

/// A new chat asks to be reminded of `task`: the answer waits on the approval card for it.
async function askToRemind(page: Page, task: string) {
  await newChat(page, 'scripted');
  await send(page, `Please remind me to ${task}`);
  await expectCardFor(page, task);
}

test.describe('tool approval', () => {
  test.beforeEach(async ({ request }) => askForTasks(request, true));
  test.afterEach(async ({ request }) => askForTasks(request, false));

  test('an approved call runs and shows its output, and the answer continues', async ({ page }, info) => {
    const task = `water the plants ${tag(info)}`;
    await askToRemind(page, task);
    // The card is reached and answered from the keyboard.
    await card(page).getByRole('button', { name: 'Approve' }).focus();
    await page.keyboard.press('Enter');
    const tool = page.locator('.tool[data-tool="addTasks"]');
    await expect(answers(page).last()).toContainText('Added to your task list.');
    await expect(card(page)).toHaveCount(0);
    await expect(tool.locator('.tool-outcome')).toHaveText('done');
    await tool.locator('summary').click();
    await expect(tool.locator('.tool-body')).toContainText('Output');
    await expect(tool.locator('.tool-body pre').last()).toContainText(task);
    // One answer: the approval continued it rather than starting another.
    await expect(answers(page)).toHaveCount(1);
    await page.reload();
    await expect(answers(page).last()).toContainText('Added to your task list.');
    await expect(page.locator('.tool[data-tool="addTasks"] .tool-outcome')).toHaveText('done');
  });

  test('a denied call shows as denied with its reason, and the answer continues', async ({ page }, info) => {
    await newChat(page, 'scripted');
    await send(page, `Please remind me to sell the car ${tag(info)}`);
    await expectCardFor(page, 'sell the car');
    const axe = await new AxeBuilder({ page }).include('.approval').analyze();
    expect(axe.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')).toEqual([]);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(overflow).toBeLessThanOrEqual(0);
    await shot(page, 'approval');

    await card(page).getByLabel('Reason for a denial (optional)').fill('I still need the car');
    await card(page).getByRole('button', { name: 'Deny' }).click();
    const answer = answers(page).last();
    await expect(answer).toContainText('Nothing was added.');
    // The model read the user's reason.
    await expect(answer.locator('.md')).toContainText('I still need the car');
    const tool = page.locator('.tool[data-tool="addTasks"]');
    await expect(tool.locator('.tool-outcome')).toHaveText('denied');
    await expect(tool.locator('.tool-denied-reason')).toHaveText('Denied: I still need the car');
    await expect(answers(page)).toHaveCount(1);
    await page.reload();
    await expect(page.locator('.tool[data-tool="addTasks"] .tool-outcome')).toHaveText('denied');
    await expect(answers(page).last()).toContainText('Nothing was added.');
  });

  test('a waiting call shows after a reload and in another browser, and is approved there', async ({ page, browser }, info) => {
    const task = `call the plumber ${tag(info)}`;
    await askToRemind(page, task);
    await expect(page).toHaveURL(/thread=/);

    // Another browser (its own storage and cookies) opens the thread and sees the same card.
    const other = await browser.newContext();
    try {
      const second = await other.newPage();
      await second.goto(page.url());
      await expectCardFor(second, task);
    } finally {
      await other.close();
    }

    await page.reload();
    await expectCardFor(page, task);
    // Until the call is answered the thread takes no other message, and the page says why.
    await expect(sendButton(page)).toBeDisabled();
    await expect(page.getByRole('status').filter({ hasText: 'Approve or deny the tool call above' })).toBeVisible();
    await card(page).getByRole('button', { name: 'Approve' }).click();
    await expect(answers(page).last()).toContainText('Added to your task list.');
    await expect(page.locator('.tool[data-tool="addTasks"] .tool-outcome')).toHaveText('done');
    await expect(answers(page)).toHaveCount(1);
    await expect(sendButton(page)).toBeVisible();
    // The thread takes messages again.
    await send(page, 'Thanks, that is all');
    await expect(answers(page).last()).toContainText('to: Thanks, that is all');
  });

  test('a card answered in another browser meanwhile shows the stored outcome here', async ({ page, browser }, info) => {
    const task = `book the ferry ${tag(info)}`;
    await askToRemind(page, task);
    // The other browser has the default model picked; the model that asked goes on all the same.
    const other = await browser.newContext();
    try {
      const second = await other.newPage();
      await second.goto(page.url());
      await card(second).getByLabel('Reason for a denial (optional)').fill('decided on my phone');
      // Enter in the reason field denies.
      await card(second).getByLabel('Reason for a denial (optional)').press('Enter');
      await expect(answers(second).last()).toContainText('Nothing was added.');
    } finally {
      await other.close();
    }
    // This page still shows the card; its answer is refused, and the page shows the call as it is stored.
    await card(page).getByRole('button', { name: 'Approve' }).click();
    const tool = page.locator('.tool[data-tool="addTasks"]');
    await expect(tool.locator('.tool-outcome')).toHaveText('denied');
    await expect(tool.locator('.tool-denied-reason')).toHaveText('Denied: decided on my phone');
    await expect(answers(page).last()).toContainText('Nothing was added.');
    await expect(card(page)).toHaveCount(0);
    await expect(page.locator('.chat-error[role=alert]')).toContainText('is not waiting in this thread');
  });
});
