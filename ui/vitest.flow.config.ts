import { defineConfig } from 'vitest/config';

// Flow tests: the real app in headless Chromium (Debian's /usr/bin/chromium) over an
// in-page fake engine; the test process itself runs in Node.
export default defineConfig({
  test: {
    environment: 'node',
    include: ['tests/flow/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
});
