// Client-side checks of the settings form, mirroring the ranges the engine enforces
// (`rudder::app::settings::validate`), so mistakes are shown beside the field before saving.

import type { AppSettings } from '../types';

export type SettingsField =
  | 'c0'
  | 'tol'
  | 'lambda_explore'
  | 'lambda_info'
  | 'depth'
  | 'breadth'
  | 'clarify_turns'
  | 'threads'
  | 'gpu_layers'
  | 'searxng_url';

export type SettingsErrors = Partial<Record<SettingsField, string>>;

const isInt = (n: number): boolean => Number.isInteger(n);

export function validateSettings(s: AppSettings): SettingsErrors {
  const errors: SettingsErrors = {};
  if (!(Number.isFinite(s.c0) && s.c0 >= 0 && s.c0 <= 1)) {
    errors.c0 = 'C0 must be between 0 and 1.';
  }
  if (!(Number.isFinite(s.tol) && s.tol > 0)) errors.tol = 'Tol must be above 0.';
  if (!(Number.isFinite(s.lambda_explore) && s.lambda_explore >= 0)) {
    errors.lambda_explore = 'λ explore must be 0 or more.';
  }
  if (!(Number.isFinite(s.lambda_info) && s.lambda_info >= 0)) {
    errors.lambda_info = 'λ info must be 0 or more.';
  }
  if (!(isInt(s.depth) && s.depth >= 1 && s.depth <= 6)) errors.depth = 'Depth must be a whole number from 1 to 6.';
  if (!(isInt(s.breadth) && s.breadth >= 1 && s.breadth <= 6)) {
    errors.breadth = 'Breadth must be a whole number from 1 to 6.';
  }
  if (!(isInt(s.clarify_turns) && s.clarify_turns >= 0 && s.clarify_turns <= 5)) {
    errors.clarify_turns = 'Clarifying questions: a whole number from 0 to 5.';
  }
  if (!(isInt(s.threads) && s.threads >= 0)) errors.threads = 'Threads: 0 (automatic) or more.';
  if (s.gpu_layers !== null && !(isInt(s.gpu_layers) && s.gpu_layers >= 0)) {
    errors.gpu_layers = 'GPU layers: empty (automatic), 0 (CPU only) or more.';
  }
  if (s.web_enabled && !/^https?:\/\/\S+$/i.test(s.searxng_url.trim())) {
    errors.searxng_url = 'Web search needs the address of a SearxNG instance (http:// or https://).';
  }
  return errors;
}
