import { useState } from 'preact/hooks';
import { ApiError, apiBase, call } from './api.ts';
import type { Visitor } from './types.ts';

interface Marks {
  is_watched: boolean;
  is_pinned: boolean;
}

/**
 * A feed row's watch and pin toggles (visitor-mark): buttons whose pressed state is the mark, named
 * for the visitor so a screen reader's list of buttons tells the rows apart. An api row has no
 * visitor to mark. `onMarked` runs after a change (a filtered feed reloads).
 */
export function MarkToggles({ apiKey, visitor, onMarked }: { apiKey: string; visitor: Visitor; onMarked: () => void }) {
  const [marks, setMarks] = useState<Marks>({ is_watched: visitor.is_watched, is_pinned: visitor.is_pinned });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const site = visitor.tracker_site;
  if (visitor.source !== 'tracker' || !site) return <span class="hint">—</span>;
  const name = visitor.display_name || visitor.company_name;
  const toggle = async (mark: keyof Marks) => {
    setBusy(true);
    setError('');
    try {
      const next = await call<Marks>(apiKey, 'visitor-mark', { body: { tracker_site: site, ip: visitor.ip, [mark]: !marks[mark] } });
      setMarks({ is_watched: next.is_watched, is_pinned: next.is_pinned });
      onMarked();
    } catch (err) {
      setError(err instanceof Error ? err.message : 'The mark was not saved.');
    } finally {
      setBusy(false);
    }
  };
  return (
    <span class="marks">
      <button
        type="button"
        class="toggle"
        aria-pressed={marks.is_watched}
        aria-label={`Watch ${name}`}
        disabled={busy}
        onClick={() => toggle('is_watched')}
      >
        Watch
      </button>
      <button
        type="button"
        class="toggle"
        aria-pressed={marks.is_pinned}
        aria-label={`Pin ${name}`}
        disabled={busy}
        onClick={() => toggle('is_pinned')}
      >
        Pin
      </button>
      {error && (
        <span class="error" role="alert">
          {error}
        </span>
      )}
    </span>
  );
}

/**
 * Downloads visitors-export for the feed's filter. The key travels in the header, never in a URL
 * (a link would put it in the history and the server's logs): the file is fetched, then saved from a
 * Blob URL that lives only until the download has started.
 */
export function ExportButton({ apiKey, query }: { apiKey: string; query: Record<string, string | undefined> }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const run = async () => {
    setBusy(true);
    setError('');
    try {
      const url = new URL('visitors-export', apiBase());
      for (const [k, v] of Object.entries(query)) if (v) url.searchParams.set(k, v);
      let res: Response;
      try {
        res = await fetch(url, { headers: { 'x-access-key': apiKey }, credentials: 'omit', cache: 'no-store' });
      } catch {
        throw new ApiError(0, 'The API could not be reached; check the connection and try again.', undefined, {});
      }
      if (!res.ok) {
        const body = (await res.json().catch(() => ({}))) as Record<string, unknown>;
        throw new ApiError(res.status, typeof body.error === 'string' ? body.error : `The API answered ${res.status}.`, undefined, body);
      }
      const blob = await res.blob();
      const name = /filename="([^"]+)"/.exec(res.headers.get('content-disposition') ?? '')?.[1] ?? 'visitors.csv';
      const href = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = href;
      link.download = name;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(href), 1000);
    } catch (err) {
      setError(err instanceof Error ? err.message : 'The export failed.');
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" disabled={busy} onClick={run}>
        {busy ? 'Exporting…' : 'Export CSV'}
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </>
  );
}
