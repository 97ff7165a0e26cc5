// Builds the window: a left nav and one section per screen. Everything the engine returns is
// untrusted text and is rendered with textContent only (see dom.ts); the report viewer's
// sanitised HTML is the one exception (see sanitize.ts).

import { button, byId, h } from './dom';
import { NAV, currentScreen, show } from './nav';
import { createHistoryScreen } from './screens/history';
import { createImportScreen } from './screens/import';
import { createReportScreen } from './screens/report';
import { createResearchScreen, listenForResearch } from './screens/research';
import { createSessionsScreen } from './screens/sessions';
import { createSettingsScreen } from './screens/settings';
import { createSetupScreen, modelsReady, refresh } from './screens/setup';
import { createYouScreen } from './screens/you';

function mount(root: HTMLElement): void {
  root.append(
    h(
      'header',
      { class: 'app-header' },
      h('h1', null, 'Rudder'),
      h('p', { class: 'tagline' }, 'Private, steerable deep research on your own machine'),
    ),
    h(
      'nav',
      { class: 'app-nav', 'aria-label': 'Screens' },
      NAV.map((n) => button(n.label, () => show(n.id), { id: `nav-${n.id}`, class: 'nav-button' })),
    ),
    h(
      'main',
      { class: 'app-main' },
      createSetupScreen(),
      createImportScreen(),
      createHistoryScreen(),
      createYouScreen(),
      createResearchScreen(),
      createReportScreen(),
      createSessionsScreen(),
      createSettingsScreen(),
    ),
  );
}

async function start(): Promise<void> {
  mount(byId('app'));
  try {
    await listenForResearch();
  } catch {
    // Outside the desktop app there are no events; every screen still renders.
  }
  const status = await refresh();
  // The first screen follows the engine status, unless the user picked one while it loaded
  // (on a busy machine that takes seconds; switching then would hide what they opened).
  if (currentScreen() === null) show(modelsReady(status) ? 'research' : 'setup');
}

void start();
