// Which screen is showing. Each screen registers a hook that refreshes it when shown.

export type ScreenId = 'setup' | 'import' | 'history' | 'you' | 'research' | 'sessions' | 'settings' | 'report';

export const NAV: { id: Exclude<ScreenId, 'report'>; label: string }[] = [
  { id: 'setup', label: 'Setup' },
  { id: 'import', label: 'Import' },
  { id: 'history', label: 'History' },
  { id: 'you', label: 'You' },
  { id: 'research', label: 'Research' },
  { id: 'sessions', label: 'Sessions' },
  { id: 'settings', label: 'Settings' },
];

const hooks = new Map<ScreenId, () => void>();
let current: ScreenId | null = null;

export function onShow(id: ScreenId, hook: () => void): void {
  hooks.set(id, hook);
}

export function currentScreen(): ScreenId | null {
  return current;
}

export function show(id: ScreenId): void {
  current = id;
  for (const section of Array.from(document.querySelectorAll<HTMLElement>('section.screen'))) {
    section.hidden = section.id !== `screen-${id}`;
  }
  for (const b of Array.from(document.querySelectorAll<HTMLElement>('nav.app-nav button'))) {
    if (b.id === `nav-${id}`) b.setAttribute('aria-current', 'page');
    else b.removeAttribute('aria-current');
  }
  hooks.get(id)?.();
}
