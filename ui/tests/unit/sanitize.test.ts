import { describe, expect, it } from 'vitest';
import { insertSanitisedReport, sanitizeReportHtml } from '../../src/sanitize';

describe('report sanitising', () => {
  it('removes scripts, event handlers and javascript: URLs', () => {
    const body = sanitizeReportHtml(
      '<h1>Title</h1><script>window.__pwned=1</script>' +
        '<p onclick="steal()">Text <img src=x onerror="window.__pwned=1"></p>' +
        '<a href="javascript:alert(1)">bad</a><a href=" JaVa\tScRiPt:alert(1)">bad2</a>' +
        '<object></object><form action="javascript:x"><button>go</button></form><p style="color:red">styled</p>',
    );
    expect(body.querySelector('script, object, form, button')).toBeNull();
    expect(body.innerHTML).not.toMatch(/onerror|onclick|javascript|style=/i);
    const links = Array.from(body.querySelectorAll('a'));
    expect(links.map((a) => a.hasAttribute('href'))).toEqual([false, false]);
    // Images too: nothing in a report loads from elsewhere.
    expect(body.querySelector('img')).toBeNull();
    expect(body.querySelector('p')?.textContent).toBe('Text ');
  });

  it('keeps text, structure and citation links', () => {
    const body = sanitizeReportHtml(
      '<h2>Evidence</h2><p>Standing helps <a href="#ref-1">[1]</a> &amp; so does walking &lt;sometimes&gt;.</p><ul><li>one</li></ul>',
    );
    expect(body.querySelector('h2')?.textContent).toBe('Evidence');
    expect(body.querySelector('a')?.getAttribute('href')).toBe('#ref-1');
    expect(body.querySelector('p')?.textContent).toBe('Standing helps [1] & so does walking <sometimes>.');
    expect(body.querySelectorAll('li')).toHaveLength(1);
  });

  it('keeps plain web links as links', () => {
    const body = sanitizeReportHtml('<a href="https://example.org/a">site</a>');
    expect(body.querySelector('a')?.getAttribute('href')).toBe('https://example.org/a');
  });

  it('inserts the cleaned report into an element', () => {
    const el = document.createElement('article');
    el.append(document.createTextNode('old'));
    insertSanitisedReport(el, '<p>New <b>text</b></p><script>window.__pwned=1</script>');
    expect(el.textContent).toBe('New text');
    expect(el.querySelector('script')).toBeNull();
    expect((window as unknown as { __pwned?: number }).__pwned).toBeUndefined();
  });
});
