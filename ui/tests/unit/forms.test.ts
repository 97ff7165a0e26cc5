import { describe, expect, it } from 'vitest';
import { buildClarifyReply, buildPauseReply, splitQuestions } from '../../src/state/replies';
import { validateSettings } from '../../src/state/settings';
import { gpuBuildNote, gpuLine, recommendationLine, threadsLine } from '../../src/status';
import type { AppSettings, EngineStatus } from '../../src/types';

const ok: AppSettings = {
  chat_model: 'qwen2.5-1.5b-instruct',
  chat_models: ['qwen2.5-1.5b-instruct'],
  threads: 0,
  gpu_layers: null,
  depth: 2,
  breadth: 3,
  c0: 0.7,
  tol: 3,
  lambda_explore: 0.5,
  lambda_info: 0.5,
  clarify_turns: 3,
  always_ask: false,
  web_enabled: false,
  searxng_url: '',
  web_disclosure: 'Your search queries are sent to the SearxNG instance.',
};

describe('settings validation', () => {
  it('accepts the defaults', () => {
    expect(validateSettings(ok)).toEqual({});
  });

  it('flags each value out of range', () => {
    const e = validateSettings({
      ...ok,
      c0: 1.2,
      tol: 0,
      lambda_explore: -0.1,
      lambda_info: Number.NaN,
      depth: 7,
      breadth: 0,
      clarify_turns: 6,
      threads: -1,
      gpu_layers: 1.5,
    });
    expect(Object.keys(e).sort()).toEqual(
      ['breadth', 'c0', 'clarify_turns', 'depth', 'gpu_layers', 'lambda_explore', 'lambda_info', 'threads', 'tol'].sort(),
    );
    expect(e.c0).toMatch(/between 0 and 1/);
    expect(e.tol).toMatch(/above 0/);
  });

  it('accepts the edges of each range', () => {
    expect(validateSettings({ ...ok, c0: 0, depth: 1, breadth: 6, lambda_info: 0, tol: 0.01 })).toEqual({});
    expect(validateSettings({ ...ok, c0: 1, depth: 6, breadth: 1, clarify_turns: 0 })).toEqual({});
  });

  it('needs a SearxNG address only with web search on', () => {
    expect(validateSettings({ ...ok, web_enabled: true }).searxng_url).toMatch(/SearxNG/);
    expect(validateSettings({ ...ok, web_enabled: true, searxng_url: 'ftp://x' }).searxng_url).toBeDefined();
    expect(validateSettings({ ...ok, web_enabled: true, searxng_url: 'http://localhost:8888' })).toEqual({});
  });
});

describe('replies', () => {
  it('builds a pause reply from ticked directions and new questions', () => {
    expect(buildPauseReply([2], 'Does standing cause varicose veins?\n\n  - What about treadmill desks?  \n')).toEqual({
      kind: 'pause',
      chosen: [2],
      new_questions: ['Does standing cause varicose veins?', 'What about treadmill desks?'],
      text: '',
    });
  });

  it('sorts and dedupes chosen numbers and drops invalid ones', () => {
    expect(buildPauseReply([3, 1, 3, 0, -2, 1.5], '').chosen).toEqual([1, 3]);
    expect(buildPauseReply([], '   ')).toEqual({ kind: 'pause', chosen: [], new_questions: [], text: '' });
  });

  it('strips list numbering from typed questions', () => {
    expect(splitQuestions('1. first\n2) second\n• third')).toEqual(['first', 'second', 'third']);
  });

  it('builds clarify replies, including skip', () => {
    expect(buildClarifyReply([3, 1], '  budget matters ', false)).toEqual({ kind: 'clarify', choices: [1, 3], text: 'budget matters', skip: false });
    expect(buildClarifyReply([], '', true)).toEqual({ kind: 'clarify', choices: [], text: '', skip: true });
  });
});

describe('status lines', () => {
  const base: EngineStatus = {
    data_dir: '/d',
    models_dir: '/m',
    chat_model: 'c',
    chat_model_present: true,
    chat_model_state: 'present',
    embed_model: 'e',
    embed_model_present: true,
    threads: 2,
    gpu_layers_setting: 'auto',
    offload: { backend: 'CPU', device: null, layers: 0, layers_total: 29, needed_bytes: null, reason: 'no GPU' },
    recommendation: null,
    gpu_build_note: null,
  };
  const gpu = {
    index: 0,
    name: 'CUDA0',
    description: 'NVIDIA GeForce RTX 4060 Laptop GPU',
    backend: 'CUDA',
    memory_total: 8 * 1024 ** 3,
    memory_free: 7 * 1024 ** 3,
    integrated: false,
  };

  it('recommends a model only when the engine has one, and says whether it is configured', () => {
    expect(recommendationLine(base)).toBe('');
    const r = { model: 'c', reason: 'the largest chat model this machine runs well (no GPU; 24.0 GB of RAM and 2 cores)' };
    expect(recommendationLine({ ...base, recommendation: r })).toBe(
      'Recommended for this machine: c (the one configured) — the largest chat model this machine runs well (no GPU; 24.0 GB of RAM and 2 cores)',
    );
    expect(recommendationLine({ ...base, recommendation: { ...r, model: 'big' } })).toContain('choose it under Settings');
  });

  it('shows threads', () => {
    expect(threadsLine(base)).toBe('Threads: 2');
  });

  it('says when the model runs on the CPU, and why the setting is what it is', () => {
    expect(gpuLine(base)).toEqual({ text: 'GPU: none — the model runs on the CPU (automatic)', tone: 'warn' });
    expect(gpuLine({ ...base, gpu_layers_setting: '0' }).text).toContain('(pinned to 0)');
  });

  it('names the device, its memory and the layers offloaded', () => {
    const line = gpuLine({ ...base, offload: { ...base.offload, backend: 'CUDA', device: gpu, layers: 29 } });
    expect(line).toEqual({
      text: 'GPU: CUDA — NVIDIA GeForce RTX 4060 Laptop GPU, 7.0 GB free of 8.0 GB; 29/29 layers offloaded (automatic)',
      tone: 'ok',
    });
    const none = gpuLine({ ...base, offload: { ...base.offload, backend: 'CPU', device: gpu, layers: 0 } });
    expect(none.text).toContain('0/29 layers offloaded');
    expect(none.tone).toBe('warn');
  });

  it('says what this build lacks for the GPU only when the engine has something to say', () => {
    expect(gpuBuildNote(base)).toBe('');
    const note = 'this Vulkan build lacks the cooperative-matrix shaders';
    expect(gpuBuildNote({ ...base, gpu_build_note: note })).toBe(note);
  });
});
