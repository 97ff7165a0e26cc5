// The engine status lines of the Setup screen (an e2e test reads them from the real window).
import type { EngineStatus } from './types';

export type Tone = 'ok' | 'warn';

export interface Line {
  text: string;
  tone: Tone;
}

export function chatModelLine(s: EngineStatus): Line {
  const state = s.chat_model_present ? 'present' : s.chat_model_state || 'missing';
  return {
    text: `Chat model: ${s.chat_model} — ${state}`,
    tone: s.chat_model_present ? 'ok' : 'warn',
  };
}

export function embedModelLine(s: EngineStatus): Line {
  return {
    text: `Embedding model: ${s.embed_model} — ${s.embed_model_present ? 'present' : 'missing'}`,
    tone: s.embed_model_present ? 'ok' : 'warn',
  };
}

/** "8.0 GB": device memory as people read it. */
function gb(bytes: number): string {
  return `${(bytes / 1024 ** 3).toFixed(1)} GB`;
}

/** Where the model runs: the backend, the device, its memory and the layers offloaded. */
export function gpuLine(s: EngineStatus): Line {
  const o = s.offload;
  const setting = s.gpu_layers_setting === 'auto' ? 'automatic' : `pinned to ${s.gpu_layers_setting}`;
  if (o.device && o.layers > 0) {
    const d = o.device;
    return {
      text: `GPU: ${o.backend} — ${d.description}, ${gb(d.memory_free)} free of ${gb(d.memory_total)}; ${o.layers}/${o.layers_total} layers offloaded (${setting})`,
      tone: 'ok',
    };
  }
  if (o.device) {
    const layers = o.layers_total > 0 ? `0/${o.layers_total} layers offloaded` : 'layers planned when the model is on disk';
    const d = o.device;
    return { text: `GPU: ${o.backend} — ${d.description}, ${gb(d.memory_free)} free of ${gb(d.memory_total)}; ${layers} (${setting})`, tone: 'warn' };
  }
  return { text: `GPU: none — the model runs on the CPU (${setting})`, tone: 'warn' };
}

/** What this build lacks for the GPU found and what a faster build gives, or nothing. */
export function gpuBuildNote(s: EngineStatus): string {
  return s.gpu_build_note ?? '';
}

/** The chat model suggested for this machine's memory, or nothing. */
export function recommendationLine(s: EngineStatus): string {
  const r = s.recommendation;
  if (!r) return '';
  const current = r.model === s.chat_model ? ' (the one configured)' : ' (choose it under Settings → Chat model)';
  return `Recommended for this machine: ${r.model}${current} — ${r.reason}`;
}

export function threadsLine(s: EngineStatus): string {
  return `Threads: ${s.threads}`;
}

export function dataDirLine(s: EngineStatus): string {
  return `Data: ${s.data_dir} · Models: ${s.models_dir}`;
}
