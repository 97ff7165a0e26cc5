// The report viewer's HTML. The engine renders the report's Markdown with pulldown-cmark and
// sanitises it with ammonia before it reaches the window; this module is a second, client-side
// pass (defence in depth) and the one place in the window where a string becomes markup.

import { safeHref } from './dom';

/** Elements dropped with everything inside them. */
const DROP = new Set([
  'script',
  'style',
  'iframe',
  'frame',
  'frameset',
  'object',
  'embed',
  'link',
  'meta',
  'base',
  'form',
  'input',
  'button',
  'textarea',
  'select',
  'template',
  'noscript',
  'svg',
  'math',
  // Reports are text with links; an image could only load from elsewhere (or be a carrier
  // for handlers), so none are kept.
  'img',
  'picture',
  'source',
  'video',
  'audio',
  'track',
]);

/** Attributes whose value is a URL. */
const URL_ATTRS = new Set(['href', 'src', 'action', 'formaction', 'xlink:href', 'poster', 'cite']);

function cleanElement(el: Element): void {
  for (const attr of Array.from(el.attributes)) {
    const name = attr.name.toLowerCase();
    if (name.startsWith('on') || name === 'style' || name === 'srcdoc' || name === 'srcset') {
      el.removeAttribute(attr.name);
    } else if (URL_ATTRS.has(name)) {
      const value = attr.value.trim();
      // Remote resources would leave the machine (and the CSP blocks them anyway).
      const remote = name !== 'href' && name !== 'cite' && !value.startsWith('#');
      if (!safeHref(value) || remote) el.removeAttribute(attr.name);
    }
  }
}

/**
 * Parses `html` into an inert document (nothing in it runs or loads) and removes scripts,
 * event-handler attributes, inline styles and `javascript:` URLs. Returns the cleaned body.
 */
export function sanitizeReportHtml(html: string): HTMLElement {
  const doc = new DOMParser().parseFromString(html, 'text/html');
  const body = doc.body;
  for (const el of Array.from(body.querySelectorAll('*'))) {
    if (DROP.has(el.tagName.toLowerCase())) {
      el.remove();
      continue;
    }
    cleanElement(el);
  }
  return body;
}

/**
 * Puts the engine-sanitised report HTML (`ReportView.html`) into `el`. This is the only place
 * where the window turns a string into markup: the report is rich text (headings, lists,
 * links to its references) that cannot be shown with textContent. It is parsed with DOMParser
 * into an inert document, cleaned again here, and its nodes are then moved into the page.
 */
export function insertSanitisedReport(el: HTMLElement, html: string): void {
  const body = sanitizeReportHtml(html);
  while (el.firstChild) el.removeChild(el.firstChild);
  for (const node of Array.from(body.childNodes)) {
    el.appendChild(document.adoptNode(node));
  }
}
