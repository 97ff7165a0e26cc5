// The replies the research loop accepts, built from what the user ticked and typed.

import type { ClarifyReply, PauseReply } from '../types';

/** Positive whole numbers, once each, in ascending order. */
function numbers(xs: readonly number[]): number[] {
  return [...new Set(xs.filter((n) => Number.isInteger(n) && n >= 1))].sort((a, b) => a - b);
}

/** New follow-up questions typed one per line; list bullets are dropped. */
export function splitQuestions(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.replace(/^\s*(?:[-*•]|\d+[.)])\s*/, '').trim())
    .filter((l) => l.length > 0);
}

export function buildClarifyReply(choices: readonly number[], text: string, skip: boolean): ClarifyReply {
  return { kind: 'clarify', choices: numbers(choices), text: text.trim(), skip };
}

export function buildPauseReply(chosen: readonly number[], newQuestions: string): PauseReply {
  return { kind: 'pause', chosen: numbers(chosen), new_questions: splitQuestions(newQuestions), text: '' };
}
