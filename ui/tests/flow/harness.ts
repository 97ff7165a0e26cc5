// The flow tests' entry: installs the fake engine, then starts the real app unchanged.

import { emit } from '@tauri-apps/api/event';
import { mockIPC, mockWindows } from '@tauri-apps/api/mocks';
import { handle, record } from './mock-backend';

declare global {
  interface Window {
    __mock: typeof record;
    __mockEmit: typeof emit;
    __pwned?: unknown;
  }
}

// The webview API (drag and drop) needs to know which window it is in.
mockWindows('main');
mockIPC((cmd, args) => handle(cmd, (args ?? {}) as Record<string, unknown>), { shouldMockEvents: true });
window.__mock = record;
window.__mockEmit = emit;

void import('../../src/main');
