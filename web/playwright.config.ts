import { defineConfig } from '@playwright/test';

// Runs against the system's Chromium (Debian's `chromium` package); Playwright's own browser
// downloads are never used (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 when installing).
export default defineConfig({
  testDir: 'tests',
  globalSetup: './tests/global-setup.ts',
  workers: 1,
  fullyParallel: false,
  timeout: 30_000,
  expect: { timeout: 10_000 },
  reporter: [['list']],
  use: {
    baseURL: process.env.PROMPTGATE_BASE_URL,
    headless: true,
    viewport: { width: 1400, height: 900 },
    launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' },
    trace: 'off',
  },
});
