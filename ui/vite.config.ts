import { defineConfig } from 'vite';

// The desktop shell loads `dist/` through Tauri's custom protocol (release) or the dev
// server below (`cargo build` without the `custom-protocol` feature).
export default defineConfig({
  clearScreen: false,
  server: {
    port: 5173,
    strictPort: true,
  },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // WebKitGTK 2.4x on Linux, WKWebView on macOS, WebView2 on Windows.
    target: 'es2022',
    sourcemap: false,
  },
});
