import { invoke } from '@tauri-apps/api/core';
import {
  chatModelLine,
  dataDirLine,
  embedModelLine,
  errorText,
  threadsLine,
  type EngineStatus,
  type Line,
} from './status';

// Everything the engine returns is untrusted text: it is rendered with textContent only.

function byId(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing element #${id}`);
  return el;
}

function showLine(el: HTMLElement, line: Line): void {
  el.textContent = line.text;
  el.classList.remove('status-pending', 'status-ok', 'status-warn');
  el.classList.add(line.tone === 'ok' ? 'status-ok' : 'status-warn');
}

async function refresh(): Promise<void> {
  const model = byId('model-status');
  const embed = byId('embed-status');
  const threads = byId('threads-status');
  const dataDir = byId('data-dir');
  const error = byId('engine-error');
  try {
    const status = await invoke<EngineStatus>('engine_status');
    showLine(model, chatModelLine(status));
    showLine(embed, embedModelLine(status));
    threads.textContent = threadsLine(status);
    dataDir.textContent = dataDirLine(status);
    error.hidden = true;
    error.textContent = '';
  } catch (err) {
    model.textContent = 'Chat model: unknown — engine unavailable';
    model.classList.remove('status-pending', 'status-ok');
    model.classList.add('status-warn');
    error.textContent = errorText(err);
    error.hidden = false;
  }
}

void refresh();
