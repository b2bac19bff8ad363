// What the web console's browser tests share: Debian's Chromium launched as the machine needs it
// (no sandbox as root, none of its background network calls), the console's login, screenshots
// into test/browser/screenshots/ (git-ignored), and the dialogs and page errors a page produced.
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { chromium } from 'playwright-core';
import { REPO_ROOT } from '../support/broker-process.ts';
import { CHROMIUM } from '../support/ensure-test-deps.ts';

export const SCREENSHOTS = join(REPO_ROOT, 'test', 'browser', 'screenshots');
/** Bound on one wait for the page, ms. */
export const WAIT_MS = 15_000;

export async function launchChromium(): Promise<Browser> {
  await mkdir(SCREENSHOTS, { recursive: true });
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    timeout: 30_000,
  });
}

/** What a page did that a test must see: dialogs it opened (a confirm is accepted) and errors. */
export interface PageWatch {
  readonly dialogs: string[];
  readonly errors: string[];
}

/** A new page in a new context of `browser`, watched. */
export async function watchedPage(browser: Browser, watch: PageWatch): Promise<Page> {
  const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
  const page = await context.newPage();
  page.on('dialog', (dialog) => {
    watch.dialogs.push(`${dialog.type()}: ${dialog.message()}`);
    // The console asks before deleting: a confirm is expected there and nowhere else.
    if (dialog.type() === 'confirm') void dialog.accept();
    else void dialog.dismiss();
  });
  page.on('pageerror', (err) => watch.errors.push(err.message));
  return page;
}

/** Log in through the console's form at `base`. */
export async function logIn(page: Page, base: string, user: string, password: string): Promise<void> {
  await page.goto(`${base}/`, { timeout: WAIT_MS });
  await page.fill('input[name=username]', user, { timeout: WAIT_MS });
  await page.fill('input[name=password]', password);
  await page.click('button[type=submit]');
  await page.waitForSelector('[data-testid=whoami]', { timeout: WAIT_MS });
}

export async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** `probe()` until it returns something, at most `ms`. */
export async function waitFor<T>(probe: () => Promise<T | undefined>, ms = WAIT_MS): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 100));
  }
}
