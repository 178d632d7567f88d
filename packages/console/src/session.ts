/**
 * The signed-in key, kept for this tab only. sessionStorage, never localStorage or a cookie: the
 * key dies with the tab, is never sent by the browser on its own, and no other tab reads it. The key
 * is never put in a URL (routes are hash paths of ids) nor logged.
 */
const SLOT = 'sightline.console.key';

export type View = 'partner' | 'site';

export interface Session {
  key: string;
  view: View;
}

export function loadSession(): Session | null {
  const raw = sessionStorage.getItem(SLOT);
  if (!raw) return null;
  try {
    const parsed = JSON.parse(raw) as Partial<Session>;
    if (typeof parsed.key === 'string' && (parsed.view === 'partner' || parsed.view === 'site')) return { key: parsed.key, view: parsed.view };
  } catch {
    // A slot this console did not write: forget it.
  }
  sessionStorage.removeItem(SLOT);
  return null;
}

export function saveSession(session: Session): void {
  sessionStorage.setItem(SLOT, JSON.stringify(session));
}

export function forgetSession(): void {
  sessionStorage.removeItem(SLOT);
}
