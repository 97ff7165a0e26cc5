// Settings: research defaults, the model and its runtime, and (off by default) web search.

import { busy, byId, h, replace, showError } from '../dom';
import { errorText, settingsGet, settingsSet } from '../ipc';
import { onShow } from '../nav';
import { validateSettings, type SettingsField } from '../state/settings';
import type { AppSettings } from '../types';
import { settingsChanged } from './research';

let loaded: AppSettings | null = null;

interface NumField {
  field: Exclude<SettingsField, 'searxng_url'>;
  id: string;
  label: string;
  help: string;
  step: number;
  min: number;
  max?: number;
  /** Empty means automatic (the value is `null`). */
  optional?: boolean;
}

const NUMBERS: NumField[] = [
  { field: 'c0', id: 'settings-c0', label: 'Pause cost C0', help: '0–1: higher means fewer questions to you.', step: 0.05, min: 0, max: 1 },
  { field: 'tol', id: 'settings-tol', label: 'Tolerance Tol', help: 'Roughly how many questions you accept per session (above 0).', step: 0.5, min: 0 },
  { field: 'lambda_explore', id: 'settings-lambda-explore', label: 'λ explore', help: 'Weight of exploring new facets (0 or more).', step: 0.1, min: 0 },
  { field: 'lambda_info', id: 'settings-lambda-info', label: 'λ info', help: 'Weight of expected information gain (0 or more).', step: 0.1, min: 0 },
  { field: 'depth', id: 'settings-depth', label: 'Depth', help: 'Levels of follow-up questions (1–6).', step: 1, min: 1, max: 6 },
  { field: 'breadth', id: 'settings-breadth', label: 'Breadth', help: 'Follow-ups per question (1–6).', step: 1, min: 1, max: 6 },
  { field: 'clarify_turns', id: 'settings-clarify-turns', label: 'Clarifying questions', help: 'Asked before research starts (0–5).', step: 1, min: 0, max: 5 },
  { field: 'threads', id: 'settings-threads', label: 'Threads', help: '0 chooses automatically.', step: 1, min: 0 },
  { field: 'gpu_layers', id: 'settings-gpu-layers', label: 'GPU layers', help: 'Empty: as many as fit in the GPU\'s free memory. 0: CPU only.', step: 1, min: 0, optional: true },
];

function fieldBox(f: NumField): HTMLElement {
  return h(
    'div',
    { class: 'field' },
    h('label', { for: f.id }, f.label),
    h('input', {
      id: f.id,
      type: 'number',
      step: f.step,
      min: f.min,
      max: f.max,
      placeholder: f.optional ? 'auto' : undefined,
      'aria-describedby': `${f.id}-help ${f.id}-error`,
    }),
    h('span', { id: `${f.id}-help`, class: 'detail help' }, f.help),
    h('span', { id: `${f.id}-error`, class: 'error field-error', hidden: true }),
  );
}

export function createSettingsScreen(): HTMLElement {
  const save = h('button', { id: 'settings-save', type: 'submit', class: 'primary' }, 'Save');
  const always = h('input', { id: 'settings-always-ask', type: 'checkbox', 'aria-describedby': 'settings-always-ask-help' });
  const web = h('input', { id: 'settings-web-enabled', type: 'checkbox', 'aria-describedby': 'settings-web-disclosure' });
  web.addEventListener('change', () => markDisclosure(web.checked));
  const form = h(
    'form',
    { id: 'settings-form', class: 'settings-form', novalidate: true },
    h(
      'div',
      { class: 'card' },
      h('h3', null, 'Research'),
      h('div', { class: 'field-grid' }, NUMBERS.slice(0, 7).map(fieldBox)),
      h(
        'div',
        { class: 'field' },
        h('label', { for: 'settings-always-ask' }, always, ' Let me choose at every branch'),
        h(
          'span',
          { id: 'settings-always-ask-help', class: 'detail help' },
          'Pause at every branch of the tree instead of only when the pause rule says asking pays off.',
        ),
      ),
    ),
    h(
      'div',
      { class: 'card' },
      h('h3', null, 'Model'),
      h(
        'div',
        { class: 'field-grid' },
        h('div', { class: 'field' }, h('label', { for: 'settings-model' }, 'Chat model'), h('select', { id: 'settings-model' })),
        NUMBERS.slice(7).map(fieldBox),
      ),
    ),
    h(
      'div',
      { class: 'card' },
      h('h3', null, 'Web search'),
      h('label', { class: 'check' }, web, ' Search the web through a SearxNG instance'),
      h('p', { id: 'settings-web-disclosure', class: 'disclosure' }),
      h(
        'div',
        { class: 'field wide' },
        h('label', { for: 'settings-searxng-url' }, 'SearxNG address'),
        h('input', { id: 'settings-searxng-url', type: 'url', placeholder: 'http://localhost:8888', 'aria-describedby': 'settings-searxng-url-error' }),
        h('span', { id: 'settings-searxng-url-error', class: 'error field-error', hidden: true }),
      ),
    ),
    h('div', { class: 'actions' }, save, h('span', { id: 'settings-saved', class: 'saved', role: 'status', hidden: true }, 'Saved.')),
    h('p', { id: 'settings-error', class: 'error', hidden: true }),
  );
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    void saveSettings(save);
  });
  form.addEventListener('input', () => {
    byId('settings-saved').hidden = true;
  });
  onShow('settings', () => void load());
  return h(
    'section',
    { id: 'screen-settings', class: 'screen', 'aria-labelledby': 'settings-heading', hidden: true },
    h('h2', { id: 'settings-heading' }, 'Settings'),
    form,
  );
}

function markDisclosure(on: boolean): void {
  const d = byId('settings-web-disclosure');
  d.classList.toggle('disclosure-on', on);
  d.setAttribute('data-web', on ? 'on' : 'off');
}

function fill(s: AppSettings): void {
  for (const f of NUMBERS) {
    const v = s[f.field];
    byId<HTMLInputElement>(f.id).value = v === null ? '' : String(v);
  }
  const models = s.chat_models.includes(s.chat_model) ? s.chat_models : [s.chat_model, ...s.chat_models];
  const select = byId<HTMLSelectElement>('settings-model');
  replace(select, models.map((m) => h('option', { value: m }, m)));
  select.value = s.chat_model;
  byId<HTMLInputElement>('settings-always-ask').checked = s.always_ask;
  byId<HTMLInputElement>('settings-web-enabled').checked = s.web_enabled;
  byId<HTMLInputElement>('settings-searxng-url').value = s.searxng_url;
  byId('settings-web-disclosure').textContent = s.web_disclosure || 'With web search on, your search queries are sent to the SearxNG instance above.';
  markDisclosure(s.web_enabled);
}

async function load(): Promise<void> {
  const error = byId('settings-error');
  showError(error, '');
  try {
    loaded = await settingsGet();
    fill(loaded);
  } catch (err) {
    showError(error, errorText(err));
  }
}

function read(base: AppSettings): AppSettings {
  const s: AppSettings = { ...base };
  for (const f of NUMBERS) {
    const raw = byId<HTMLInputElement>(f.id).value.trim();
    const value = raw === '' ? (f.optional ? null : Number.NaN) : Number(raw);
    if (f.field === 'gpu_layers') s.gpu_layers = value;
    else s[f.field] = value ?? Number.NaN;
  }
  s.chat_model = byId<HTMLSelectElement>('settings-model').value || base.chat_model;
  s.always_ask = byId<HTMLInputElement>('settings-always-ask').checked;
  s.web_enabled = byId<HTMLInputElement>('settings-web-enabled').checked;
  s.searxng_url = byId<HTMLInputElement>('settings-searxng-url').value.trim();
  return s;
}

async function saveSettings(btn: HTMLButtonElement): Promise<void> {
  const error = byId('settings-error');
  showError(error, '');
  byId('settings-saved').hidden = true;
  if (!loaded) {
    await load();
    if (!loaded) return;
  }
  const next = read(loaded);
  const problems = validateSettings(next);
  const ids: Record<string, string> = { searxng_url: 'settings-searxng-url' };
  for (const f of NUMBERS) ids[f.field] = f.id;
  for (const [field, id] of Object.entries(ids)) {
    const message = problems[field as SettingsField] ?? '';
    showError(byId(`${id}-error`), message);
    byId(id).setAttribute('aria-invalid', message ? 'true' : 'false');
  }
  if (Object.keys(problems).length) {
    showError(error, 'Some values are out of range; see the messages above.');
    return;
  }
  try {
    loaded = await busy(btn, () => settingsSet(next));
    fill(loaded);
    settingsChanged();
    byId('settings-saved').hidden = false;
  } catch (err) {
    showError(error, errorText(err));
  }
}
