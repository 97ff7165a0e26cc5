import { describe, expect, it } from 'vitest';
import { COVERAGE_LABEL, coverage, stem, stems } from '../../src/state/coverage';

describe('coverage (word overlap with findings)', () => {
  it('is labelled as word overlap, not as coverage', () => {
    expect(COVERAGE_LABEL).toBe('word overlap with findings');
  });

  it('stems plurals and verb forms alike', () => {
    expect(stem('effects')).toBe(stem('effect'));
    expect(stem('studies')).toBe(stem('study'));
    expect(stem('sleeping')).toBe(stem('sleep'));
    expect(stem('caused')).toBe(stem('cause'));
    expect(stem('red')).toBe('red');
  });

  it('drops stopwords, short words and checklist verbs', () => {
    expect([...stems('Covers the cost of a desk')]).toEqual(['cost', 'desk']);
    expect([...stems('Ça coûte 200 €')]).toEqual(['coût', '200']);
  });

  it('counts learnings sharing a stem with each item', () => {
    const items = ['Covers clinical evidence on back pain', 'Covers cost of standing desks', 'Covers sleep quality'];
    const learnings = [
      'Trials found standing desks modestly reduce back pain.',
      'Sit-stand desks cost between 200 and 600 euros.',
      'Anti-fatigue mats reduce leg discomfort.',
      'Clinical trials are small.',
    ];
    const c = coverage(items, learnings);
    expect(c.map((x) => x.matched)).toEqual([2, 2, 0]);
    expect(c[0]).toMatchObject({ item: items[0], total: 4, fraction: 0.5 });
    expect(c[2]?.fraction).toBe(0);
  });

  it('is zero without learnings, and matches case-insensitively', () => {
    expect(coverage(['Back pain'], [])).toEqual([{ item: 'Back pain', matched: 0, total: 0, fraction: 0 }]);
    expect(coverage(['BACK PAIN'], ['back pains'])[0]?.fraction).toBe(1);
  });
});
