// Starts what the flow tests drive: a Vite dev server for the harness page, and Debian's
// headless Chromium through playwright-core (no browser download).

import { mkdirSync } from 'node:fs';
import { createServer as netServer } from 'node:net';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';
import { createServer, type ViteDevServer } from 'vite';

export const UI_DIR = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
export const ARTIFACTS = resolve(UI_DIR, 'test-artifacts');
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function freePort(): Promise<number> {
  return new Promise((res, rej) => {
    const s = netServer();
    s.once('error', rej);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      s.close(() => res(port));
    });
  });
}

export interface Harness {
  url: string;
  browser: Browser;
  close(): Promise<void>;
}

export async function startHarness(): Promise<Harness> {
  mkdirSync(ARTIFACTS, { recursive: true });
  const port = await freePort();
  const server: ViteDevServer = await createServer({
    root: UI_DIR,
    configFile: false,
    logLevel: 'warn',
    clearScreen: false,
    server: { host: '127.0.0.1', port, strictPort: true, hmr: false, watch: null },
    // Serve the (ESM) dependencies as they are: no optimiser run, so no reload mid-test.
    optimizeDeps: { noDiscovery: true, include: [] },
  });
  await server.listen();
  let browser: Browser;
  try {
    browser = await chromium.launch({
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
    });
  } catch (err) {
    await server.close();
    throw err;
  }
  return {
    url: `http://127.0.0.1:${port}/tests/flow/harness.html`,
    browser,
    async close() {
      await browser.close();
      await server.close();
    },
  };
}
