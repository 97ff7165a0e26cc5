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

export function threadsLine(s: EngineStatus): string {
  return `Threads: ${s.threads} · GPU layers: ${s.gpu_layers}`;
}

export function dataDirLine(s: EngineStatus): string {
  return `Data: ${s.data_dir} · Models: ${s.models_dir}`;
}
