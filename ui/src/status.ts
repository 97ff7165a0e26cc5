// Mirrors `rudder::status::EngineStatus` (serialised by serde with its Rust field names).
export interface EngineStatus {
  data_dir: string;
  models_dir: string;
  chat_model: string;
  chat_model_present: boolean;
  /** `present`, `missing`, `incomplete` or `unknown`. */
  chat_model_state: string;
  embed_model: string;
  embed_model_present: boolean;
  threads: number;
  gpu_layers: number;
}

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
  const gpu = s.gpu_layers > 0 ? `${s.gpu_layers} GPU layers` : 'CPU only';
  return `Threads: ${s.threads} · ${gpu}`;
}

export function dataDirLine(s: EngineStatus): string {
  return `Data: ${s.data_dir} · Models: ${s.models_dir}`;
}

/** Errors from `invoke` are the command's `Err(String)`, or an Error outside Tauri. */
export function errorText(err: unknown): string {
  if (typeof err === 'string') return err;
  if (err instanceof Error) return err.message;
  return String(err);
}
