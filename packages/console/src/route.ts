import { useEffect, useState } from 'preact/hooks';

/** The route is the URL's fragment (`#/children/<id>`): ids only, never a key, and no request carries it. */
export function useRoute(): string[] {
  const read = () => location.hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(decodeURIComponent);
  const [route, setRoute] = useState(read);
  useEffect(() => {
    const onHash = () => setRoute(read());
    addEventListener('hashchange', onHash);
    return () => removeEventListener('hashchange', onHash);
  }, []);
  return route;
}

export const go = (path: string) => {
  location.hash = path;
};

/** Loads once per change of `deps`; `reload` asks again (after an action changed what it shows). */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): { data: T | undefined; error: unknown; reload: () => void } {
  const [state, setState] = useState<{ data: T | undefined; error: unknown }>({ data: undefined, error: null });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    load().then(
      (data) => live && setState({ data, error: null }),
      (error: unknown) => live && setState((s) => ({ data: s.data, error })),
    );
    return () => {
      live = false;
    };
  }, [...deps, tick]);
  return { ...state, reload: () => setTick((t) => t + 1) };
}
