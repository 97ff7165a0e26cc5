import { describe, expect, it } from 'vitest';
import { append, h, replace, safeHref, setAttr } from '../../src/dom';

const XSS = '<script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">';

describe('h()', () => {
  it('puts strings in as text, never as markup', () => {
    const el = h('div', { class: 'x' }, XSS);
    expect(el.textContent).toBe(XSS);
    expect(el.querySelector('script, img')).toBeNull();
    expect(el.childNodes).toHaveLength(1);
    expect(el.firstChild?.nodeType).toBe(Node.TEXT_NODE);
  });

  it('treats attribute values as text too', () => {
    const el = h('span', { title: XSS, 'data-x': '"><script>' });
    expect(el.getAttribute('title')).toBe(XSS);
    expect(el.children).toHaveLength(0);
  });

  it('nests children, numbers and arrays, and skips empty ones', () => {
    const el = h('ul', null, [h('li', null, 1), null, false, undefined, [h('li', null, 'two')]]);
    expect(Array.from(el.querySelectorAll('li')).map((li) => li.textContent)).toEqual(['1', 'two']);
  });

  it('refuses event-handler attributes, style and unknown attributes', () => {
    expect(() => h('img' as 'span', { onerror: 'x' })).toThrow(/not allowed/);
    expect(() => h('div', { ONCLICK: 'x' })).toThrow(/not allowed/);
    expect(() => h('div', { style: 'color:red' })).toThrow(/not allowed/);
    expect(() => h('div', { srcdoc: 'x' })).toThrow(/not allowed/);
    expect(() => h('script' as 'div')).toThrow(/not allowed/);
  });

  it('drops javascript: links', () => {
    expect(h('a', { href: 'javascript:alert(1)' }).hasAttribute('href')).toBe(false);
    expect(h('a', { href: '  JAVA\nSCRIPT:alert(1)' }).hasAttribute('href')).toBe(false);
    expect(h('a', { href: 'data:text/html,<script>' }).hasAttribute('href')).toBe(false);
    expect(h('a', { href: '#ref-2' }).getAttribute('href')).toBe('#ref-2');
    expect(safeHref('https://example.org')).toBe(true);
  });

  it('sets boolean attributes', () => {
    const b = h('button', { disabled: true, hidden: false });
    expect(b.disabled).toBe(true);
    expect(b.hasAttribute('hidden')).toBe(false);
    setAttr(b, 'disabled', false);
    expect(b.disabled).toBe(false);
  });

  it('replace() and append() keep text as text', () => {
    const el = h('p', null, 'old');
    replace(el, XSS);
    append(el, '!');
    expect(el.textContent).toBe(`${XSS}!`);
    expect(el.querySelector('*')).toBeNull();
  });
});
