import { defineConfig } from 'vitest/config';

// Unit tests: pure modules and DOM helpers under happy-dom.
export default defineConfig({
  test: {
    environment: 'happy-dom',
    include: ['tests/unit/**/*.test.ts'],
  },
});
