// The one way the window builds elements. Text goes in only as text nodes, never as HTML, so
// untrusted strings (history, documents, model output, file names) cannot become markup.
// Attributes are whitelisted: no event-handler attributes, no `style` (the CSP forbids inline
// styles), and no `javascript:` links.

export type Child = Node | string | number | null | undefined | false | Child[];
export type AttrValue = string | number | boolean | null | undefined;
export type Attrs = Record<string, AttrValue>;

const ALLOWED = new Set([
  'id',
  'class',
  'type',
  'name',
  'value',
  'placeholder',
  'for',
  'title',
  'role',
  'href',
  'target',
  'rel',
  'disabled',
  'checked',
  'hidden',
  'min',
  'max',
  'step',
  'low',
  'high',
  'optimum',
  'rows',
  'cols',
  'multiple',
  'selected',
  'tabindex',
  'colspan',
  'scope',
  'datetime',
  'open',
  'autocomplete',
  'spellcheck',
  'required',
  'maxlength',
  'lang',
  'dir',
  'start',
  'novalidate',
]);

/** Whether a URL is safe as an `href`: not a script, data or vbscript URL. */
export function safeHref(url: string): boolean {
  // Browsers ignore control characters and whitespace inside the scheme ("java\tscript:").
  // eslint-disable-next-line no-control-regex
  const squashed = url.replace(/[\u0000-\u0020\u007f-\u009f]/g, '').toLowerCase();
  return !/^(javascript|data|vbscript):/.test(squashed);
}

function allowed(name: string): boolean {
  const n = name.toLowerCase();
  if (n.startsWith('on')) return false;
  return ALLOWED.has(n) || n.startsWith('aria-') || n.startsWith('data-');
}

export function setAttr(el: Element, name: string, value: AttrValue): void {
  if (!allowed(name)) throw new Error(`attribute not allowed: ${name}`);
  if (value === null || value === undefined || value === false) {
    el.removeAttribute(name);
    return;
  }
  const text = value === true ? '' : String(value);
  if (name.toLowerCase() === 'href' && !safeHref(text)) {
    el.removeAttribute(name);
    return;
  }
  el.setAttribute(name, text);
}

export function append(parent: Node, ...children: Child[]): void {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(parent, ...child);
    else if (child instanceof Node) parent.appendChild(child);
    else parent.appendChild(document.createTextNode(String(child)));
  }
}

/** `h('p', { class: 'note' }, 'text', child)`: an element with text-only string children. */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs?: Attrs | null,
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  if (tag.toLowerCase() === 'script' || tag.toLowerCase() === 'style') {
    throw new Error(`element not allowed: ${tag}`);
  }
  const el = document.createElement(tag);
  if (attrs) for (const [k, v] of Object.entries(attrs)) setAttr(el, k, v);
  append(el, ...children);
  return el;
}

/** Removes every child. */
export function clear(el: Element): void {
  while (el.firstChild) el.removeChild(el.firstChild);
}

/** Replaces the children of `el`. */
export function replace(el: Element, ...children: Child[]): void {
  clear(el);
  append(el, ...children);
}

export function byId<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`missing element #${id}`);
  return el as T;
}

/** A button that runs `action` on click. */
export function button(label: Child, action: (ev: MouseEvent) => void, attrs?: Attrs): HTMLButtonElement {
  const b = h('button', { type: 'button', ...attrs }, label);
  b.addEventListener('click', action);
  return b;
}

/**
 * Runs a call that may take a while: the button is disabled and marked busy (a spinner in
 * CSS) until it settles. Returns the call's result.
 */
export async function busy<T>(btn: HTMLButtonElement | null, work: () => Promise<T>): Promise<T> {
  if (btn) {
    btn.disabled = true;
    btn.classList.add('busy');
    btn.setAttribute('aria-busy', 'true');
  }
  try {
    return await work();
  } finally {
    if (btn) {
      btn.disabled = false;
      btn.classList.remove('busy');
      btn.removeAttribute('aria-busy');
    }
  }
}

/** Shows an error (or clears it with an empty message) in an element with class `error`. */
export function showError(el: HTMLElement, message: string): void {
  el.textContent = message;
  el.hidden = message === '';
}
