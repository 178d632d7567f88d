import { render } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError, call } from './api.ts';
import { BrandContext, useLoadedBrand } from './brand.ts';
import { PartnerView } from './partner.tsx';
import { go, useRoute } from './route.ts';
import { forgetSession, loadSession, type Session, saveSession } from './session.ts';
import { SiteView } from './site.tsx';
import { ErrorNote } from './ui.tsx';

/**
 * Which view a key opens: the pool answers a partner's master key; any other valid key is refused
 * there (403) and reads its websites' visitors instead. A 401 (or anything else) is the API's error.
 */
async function viewFor(key: string): Promise<Session['view']> {
  try {
    await call(key, 'partner-pool-state');
    return 'partner';
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 403) throw err;
  }
  await call(key, 'list-visitors', { query: { limit: 1 } });
  return 'site';
}

function SignIn({ onSignedIn }: { onSignedIn: (s: Session) => void }) {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const form = e.currentTarget as HTMLFormElement;
    const input = form.elements.namedItem('key') as HTMLInputElement;
    const key = input.value.trim();
    setBusy(true);
    setError(null);
    try {
      const view = await viewFor(key);
      input.value = '';
      onSignedIn({ key, view });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <h1>Sign in</h1>
      <p>Sign in with an API key. A partner’s master key opens the partner view; a site’s key opens its visitors.</p>
      <p class="hint">The key is kept in this tab only and forgotten when you sign out or close the tab.</p>
      <form onSubmit={submit}>
        <label for="key">API key</label>
        <input id="key" name="key" type="password" required autocomplete="off" spellcheck={false} />
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}

function App() {
  const [session, setSession] = useState<Session | null>(loadSession);
  const route = useRoute();
  if (!session) {
    return (
      <SignIn
        onSignedIn={(s) => {
          saveSession(s);
          go('/');
          setSession(s);
        }}
      />
    );
  }
  const signOut = () => {
    forgetSession();
    go('/');
    setSession(null);
  };
  return <SignedIn session={session} route={route} onSignOut={signOut} />;
}

function SignedIn({ session, route, onSignOut }: { session: Session; route: string[]; onSignOut: () => void }) {
  const brand = useLoadedBrand(session.key);
  return (
    <BrandContext.Provider value={brand}>
      {session.view === 'partner' ? (
        <PartnerView apiKey={session.key} route={route} onSignOut={onSignOut} />
      ) : (
        <SiteView apiKey={session.key} route={route} onSignOut={onSignOut} />
      )}
    </BrandContext.Provider>
  );
}

const root = document.getElementById('app');
if (root) render(<App />, root);
