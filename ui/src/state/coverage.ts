// How well the findings so far touch each persona checklist item. The events carry no
// per-item score (PauseDecided has one alignment number for a whole node), so this is an
// honest, plainly-labelled proxy: the share of learnings that share at least one content word
// stem with the item. The window labels it "word overlap with findings", never "coverage".

export const COVERAGE_LABEL = 'word overlap with findings';

const STOPWORDS = new Set(
  (
    'a about above after again against all also am an and any are as at be because been before ' +
    'being below between both but by can could did do does doing down during each few for from ' +
    'further had has have having he her here hers herself him himself his how i if in into is it ' +
    'its itself just me more most my myself no nor not now of off on once only or other our ours ' +
    'ourselves out over own same she should so some such than that the their theirs them ' +
    'themselves then there these they this those through to too under until up very was we were ' +
    'what when where which while who whom why will with would you your yours yourself ' +
    'yourselves may might must shall us via per etc ' +
    // Words that checklist items use to say what a report must do, not what it is about.
    'cover covers covered covering include includes including explain explains explained ' +
    'discuss discusses mention mentions describe describes address addresses report reports ' +
    'provide provides give gives list lists compare compares how what which'
  ).split(/\s+/),
);

/** A crude stem: enough to match "effects"/"effect" and "sleeping"/"sleep". */
export function stem(word: string): string {
  let w = word;
  const rules: [RegExp, string][] = [
    [/ies$/, 'y'],
    [/(ss)es$/, '$1'],
    [/([^s])s$/, '$1'],
    [/ing$/, ''],
    [/ed$/, ''],
    [/ly$/, ''],
  ];
  for (const [re, to] of rules) {
    const next = w.replace(re, to);
    // Keep a stem of at least three letters ("red" must not become "r").
    if (next !== w && next.length >= 3) {
      w = next;
      break;
    }
  }
  // "caused" → "caus", "cause" → "caus".
  return w.length > 3 ? w.replace(/e$/, '') : w;
}

/** The content-word stems of a text (lower-cased, stopwords and one- or two-letter words out). */
export function stems(text: string): Set<string> {
  const out = new Set<string>();
  for (const raw of text.toLowerCase().split(/[^\p{L}\p{N}]+/u)) {
    if (raw.length < 3 || STOPWORDS.has(raw)) continue;
    out.add(stem(raw));
  }
  return out;
}

export interface ItemCoverage {
  item: string;
  /** Learnings sharing at least one stem with the item. */
  matched: number;
  total: number;
  /** matched / total, 0 when there are no learnings yet. */
  fraction: number;
}

export function coverage(checklist: readonly string[], learnings: readonly string[]): ItemCoverage[] {
  const learned = learnings.map(stems);
  return checklist.map((item) => {
    const words = stems(item);
    let matched = 0;
    for (const l of learned) {
      for (const w of words) {
        if (l.has(w)) {
          matched += 1;
          break;
        }
      }
    }
    const total = learnings.length;
    return { item, matched, total, fraction: total ? matched / total : 0 };
  });
}
