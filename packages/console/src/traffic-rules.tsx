import { useState } from 'preact/hooks';
import { call } from './api.ts';
import { when } from './format.ts';
import { useLoad } from './route.ts';
import { ConfirmButton, ErrorNote, Notice, TableWrap } from './ui.tsx';

/** A rule as traffic-rules answers it (core/src/tracker/traffic-rules.ts). */
interface TrafficRule {
  id: string;
  website_id: string | null;
  kind: 'cidr' | 'domain' | 'path' | 'country';
  value: string;
  created_at: string;
}

interface TrafficRuleList {
  rules: TrafficRule[];
  account_wide: boolean;
  websites: { id: string; domain: string }[];
}

const KINDS: { value: TrafficRule['kind']; label: string; placeholder: string }[] = [
  { value: 'cidr', label: 'Addresses (IP or CIDR)', placeholder: '203.0.113.0/24' },
  { value: 'domain', label: 'Company domain', placeholder: 'your-agency.com' },
  { value: 'path', label: 'Page path (* matches anything)', placeholder: '/careers*' },
  { value: 'country', label: 'Country (two letters)', placeholder: 'DE' },
];

const kindLabel = (kind: TrafficRule['kind']) => KINDS.find((k) => k.value === kind)?.label ?? kind;

/**
 * Traffic rules (traffic-rules, traffic-rule-create, traffic-rule-delete): the traffic the key's
 * sites exclude from identification, listed, added and removed. Excluded traffic never uses an ID;
 * the traffic mix above counts it by kind.
 */
export function TrafficRules({ apiKey }: { apiKey: string }) {
  const { data, error, reload } = useLoad(() => call<TrafficRuleList>(apiKey, 'traffic-rules'), [apiKey]);
  const [kind, setKind] = useState<TrafficRule['kind']>('cidr');
  const [result, setResult] = useState<{ ok?: string; error?: unknown }>({});
  const [busy, setBusy] = useState(false);
  const siteOf = (id: string | null) => (id === null ? 'All sites' : (data?.websites.find((w) => w.id === id)?.domain ?? 'Another site'));

  const submit = async (e: Event) => {
    e.preventDefault();
    const element = e.currentTarget as HTMLFormElement;
    const form = new FormData(element);
    const scope = String(form.get('scope') ?? '');
    setBusy(true);
    setResult({});
    try {
      const answer = await call<{ rule: TrafficRule; created: boolean }>(apiKey, 'traffic-rule-create', {
        body: { kind, value: String(form.get('value') ?? ''), ...(scope ? { website_id: scope } : {}) },
      });
      setResult({ ok: answer.created ? `Excluding ${answer.rule.value}.` : `${answer.rule.value} was excluded already.` });
      element.reset();
      reload();
    } catch (err) {
      setResult({ error: err });
    } finally {
      setBusy(false);
    }
  };

  const remove = async (rule: TrafficRule) => {
    setResult({});
    try {
      await call(apiKey, 'traffic-rule-delete', { body: { id: rule.id } });
      setResult({ ok: `No longer excluding ${rule.value}.` });
      reload();
    } catch (err) {
      setResult({ error: err });
    }
  };

  const placeholder = KINDS.find((k) => k.value === kind)?.placeholder ?? '';
  return (
    <section class="card" aria-labelledby="rules-h">
      <h2 id="rules-h">Traffic rules</h2>
      <p class="hint">
        Traffic you exclude — your own offices, your agency, staff pages, countries you do not sell to — is never identified and never uses an ID. A
        rule applies from the next page view.
      </p>
      <ErrorNote error={error} />
      {data && (
        <>
          <TableWrap label="Traffic rules">
            <table>
              <thead>
                <tr>
                  <th scope="col">Excludes</th>
                  <th scope="col">Value</th>
                  <th scope="col">Site</th>
                  <th scope="col">Added</th>
                  <th scope="col">Action</th>
                </tr>
              </thead>
              <tbody>
                {data.rules.map((r) => (
                  <tr key={r.id} data-rule={r.value}>
                    <td>{kindLabel(r.kind)}</td>
                    <td>
                      <code>{r.value}</code>
                    </td>
                    <td>{siteOf(r.website_id)}</td>
                    <td>{when(r.created_at)}</td>
                    <td>
                      {(r.website_id !== null || data.account_wide) && (
                        <ConfirmButton label="Remove" confirmLabel={`Stop excluding ${r.value}`} onConfirm={() => void remove(r)} />
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          {data.rules.length === 0 && <p>No traffic is excluded.</p>}
          {(data.account_wide || data.websites.length > 0) && (
            <form class="action" onSubmit={submit} aria-labelledby="rules-add-h" noValidate>
              <h3 id="rules-add-h">Exclude traffic</h3>
              <label>
                Kind
                <select name="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as TrafficRule['kind'])}>
                  {KINDS.map((k) => (
                    <option key={k.value} value={k.value}>
                      {k.label}
                    </option>
                  ))}
                </select>
              </label>
              <label>
                Value
                <input name="value" required maxLength={512} placeholder={placeholder} autocomplete="off" />
              </label>
              <label>
                Site
                <select name="scope">
                  {data.account_wide && <option value="">All sites</option>}
                  {data.websites.map((w) => (
                    <option key={w.id} value={w.id}>
                      {w.domain}
                    </option>
                  ))}
                </select>
              </label>
              <button type="submit" disabled={busy}>
                {busy ? 'Adding…' : 'Exclude'}
              </button>
            </form>
          )}
        </>
      )}
      {result.ok && <Notice>{result.ok}</Notice>}
      <ErrorNote error={result.error} />
    </section>
  );
}
