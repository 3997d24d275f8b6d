import { defineConfig, type PlaywrightTestOptions } from '@playwright/test';

// Runs against the system's Chromium (Debian's `chromium` package); Playwright's own browser
// downloads are never used (PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 when installing).
//
// The whole suite runs at desktop size in the light theme and at phone size in the dark one; the
// tests tagged @screens (every screen, checked with axe) run in all four combinations.
const desktop: Partial<PlaywrightTestOptions> = { viewport: { width: 1280, height: 800 } };
const phone: Partial<PlaywrightTestOptions> = { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true };

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
    launchOptions: { executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium' },
    trace: 'off',
    screenshot: 'only-on-failure',
  },
  projects: [
    { name: 'desktop-light', use: { ...desktop, colorScheme: 'light' } },
    { name: 'phone-dark', use: { ...phone, colorScheme: 'dark' } },
    { name: 'desktop-dark', grep: /@screens/, use: { ...desktop, colorScheme: 'dark' } },
    { name: 'phone-light', grep: /@screens/, use: { ...phone, colorScheme: 'light' } },
  ],
});
