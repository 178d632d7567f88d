import { useState } from 'preact/hooks';
import { call } from './api.ts';
import { when } from './format.ts';
import { useLoad } from './route.ts';
import { ConfirmButton, ErrorNote, Notice, TableWrap } from './ui.tsx';

/** An integration as `integrations` answers it (core/src/integrations/integration-schemas.ts). */
interface Integration {
  id: string;
  kind: 'slack' | 'teams' | 'hubspot' | 'pipedrive';
  name: string;
  website_id: string | null;
  signals: string[];
  cooldown_seconds: number;
  digest: boolean;
  status: 'active' | 'paused';
  paused_reason: string | null;
  created_at: string;
}

interface Delivery {
  id: string;
  integration_id: string;
  signal: string;
  created_at: string;
  delivery_status: 'pending' | 'delivered' | 'failed' | 'no_destination';
  attempts: number;
  last_error: string | null;
}

const KINDS: { value: Integration['kind']; label: string; credential: 'webhook_url' | 'token'; hint: string }[] = [
  { value: 'slack', label: 'Slack', credential: 'webhook_url', hint: 'The channel’s incoming-webhook URL' },
  { value: 'teams', label: 'Microsoft Teams', credential: 'webhook_url', hint: 'The workflow’s webhook URL' },
  { value: 'hubspot', label: 'HubSpot', credential: 'token', hint: 'A private app’s access token' },
  { value: 'pipedrive', label: 'Pipedrive', credential: 'token', hint: 'The API token' },
];

const SIGNALS: { value: string; label: string }[] = [
  { value: 'visitor_identified', label: 'A company is identified' },
  { value: 'visitor_returned', label: 'A company returns' },
  { value: 'high_intent', label: 'A visit shows high intent' },
  { value: 'icp_qualified', label: 'A company fits an ICP' },
  { value: 'watched_visit', label: 'A watched visitor is back' },
];

const kindOf = (kind: Integration['kind']) => KINDS.find((k) => k.value === kind) ?? (KINDS[0] as (typeof KINDS)[number]);

/**
 * Alerts and CRM pushes (integrations, integration-create, -update, -delete, -deliveries,
 * -delivery-replay): where the key's signals go, whether each destination is working, and what
 * was sent. A paused integration says why and can be resumed; a failed delivery can be sent again.
 */
export function Integrations({ apiKey }: { apiKey: string }) {
  const list = useLoad(() => call<{ integrations: Integration[] }>(apiKey, 'integrations'), [apiKey]);
  const sent = useLoad(() => call<{ deliveries: Delivery[] }>(apiKey, 'integration-deliveries', { query: { limit: '20' } }), [apiKey]);
  const [kind, setKind] = useState<Integration['kind']>('slack');
  const [result, setResult] = useState<{ ok?: string; error?: unknown }>({});
  const [busy, setBusy] = useState(false);
  const reload = () => {
    list.reload();
    sent.reload();
  };
  const act = async (done: string, run: () => Promise<unknown>) => {
    setResult({});
    try {
      await run();
      setResult({ ok: done });
      reload();
    } catch (err) {
      setResult({ error: err });
    }
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    const element = e.currentTarget as HTMLFormElement;
    const form = new FormData(element);
    const credential = kindOf(kind).credential;
    setBusy(true);
    setResult({});
    try {
      await call(apiKey, 'integration-create', {
        body: {
          kind,
          name: String(form.get('name') ?? ''),
          [credential]: String(form.get('credential') ?? ''),
          signals: form.getAll('signals').map(String),
          ...(credential === 'webhook_url' && form.get('digest') ? { digest: true } : {}),
        },
      });
      setResult({ ok: `${kindOf(kind).label} connected. Its ${credential === 'token' ? 'token' : 'URL'} is stored sealed and not shown again.` });
      element.reset();
      reload();
    } catch (err) {
      setResult({ error: err });
    } finally {
      setBusy(false);
    }
  };

  const nameOf = (id: string) => list.data?.integrations.find((i) => i.id === id)?.name ?? 'Removed';
  return (
    <section class="card" aria-labelledby="integrations-h">
      <h2 id="integrations-h">Alerts and CRM</h2>
      <p class="hint">Tell a Slack or Teams channel when a company you care about visits, or push it to HubSpot or Pipedrive.</p>
      <ErrorNote error={list.error} />
      {list.data && (
        <>
          <TableWrap label="Integrations">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Sends to</th>
                  <th scope="col">Signals</th>
                  <th scope="col">Status</th>
                  <th scope="col">Action</th>
                </tr>
              </thead>
              <tbody>
                {list.data.integrations.map((i) => (
                  <tr key={i.id} data-integration={i.name}>
                    <td>{i.name}</td>
                    <td>
                      {kindOf(i.kind).label}
                      {i.digest ? ' (daily digest)' : ''}
                    </td>
                    <td>{i.signals.map((s) => SIGNALS.find((x) => x.value === s)?.label ?? s).join(', ')}</td>
                    <td data-status={i.status}>{i.status === 'paused' ? `Paused: ${i.paused_reason ?? ''}` : 'Active'}</td>
                    <td>
                      {i.status === 'paused' && (
                        <button
                          type="button"
                          onClick={() =>
                            void act(`${i.name} resumed.`, () =>
                              call(apiKey, 'integration-update', { body: { integration_id: i.id, status: 'active' } }),
                            )
                          }
                        >
                          Resume {i.name}
                        </button>
                      )}
                      <ConfirmButton
                        label="Remove"
                        confirmLabel={`Remove ${i.name}`}
                        onConfirm={() => void act(`${i.name} removed.`, () => call(apiKey, 'integration-delete', { body: { integration_id: i.id } }))}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          {list.data.integrations.length === 0 && <p>Nothing is connected.</p>}
          <form class="action" onSubmit={submit} aria-labelledby="integrations-add-h" noValidate>
            <h3 id="integrations-add-h">Connect</h3>
            <label>
              Destination
              <select name="kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as Integration['kind'])}>
                {KINDS.map((k) => (
                  <option key={k.value} value={k.value}>
                    {k.label}
                  </option>
                ))}
              </select>
            </label>
            <label>
              Name
              <input name="name" required maxLength={200} placeholder="Sales channel" autocomplete="off" />
            </label>
            <label>
              {kindOf(kind).hint}
              <input name="credential" type="password" required maxLength={2048} autocomplete="off" />
            </label>
            <fieldset>
              <legend>Send when</legend>
              {SIGNALS.map((s) => (
                <label key={s.value} class="check">
                  <input type="checkbox" name="signals" value={s.value} defaultChecked={s.value === 'visitor_identified'} />
                  {s.label}
                </label>
              ))}
            </fieldset>
            {kindOf(kind).credential === 'webhook_url' && (
              <label class="check">
                <input type="checkbox" name="digest" value="1" />
                One message a day (digest)
              </label>
            )}
            <button type="submit" disabled={busy}>
              {busy ? 'Connecting…' : 'Connect'}
            </button>
          </form>
        </>
      )}
      {(result.ok || result.error !== undefined) && (
        <div aria-live="polite">
          {result.ok && <Notice>{result.ok}</Notice>}
          <ErrorNote error={result.error} />
        </div>
      )}
      <h3>Recently sent</h3>
      <ErrorNote error={sent.error} />
      {sent.data && sent.data.deliveries.length === 0 && <p>Nothing sent yet.</p>}
      {sent.data && sent.data.deliveries.length > 0 && (
        <TableWrap label="Deliveries">
          <table>
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">To</th>
                <th scope="col">Signal</th>
                <th scope="col">Status</th>
                <th scope="col">Action</th>
              </tr>
            </thead>
            <tbody>
              {sent.data.deliveries.map((d) => (
                <tr key={d.id} data-delivery={d.delivery_status}>
                  <td>{when(d.created_at)}</td>
                  <td>{nameOf(d.integration_id)}</td>
                  <td>{d.signal}</td>
                  <td>
                    {d.delivery_status}
                    {d.last_error ? ` (${d.last_error})` : ''}
                  </td>
                  <td>
                    {(d.delivery_status === 'failed' || d.delivery_status === 'delivered') && (
                      <button
                        type="button"
                        onClick={() => void act('Sent again.', () => call(apiKey, 'integration-delivery-replay', { body: { delivery_id: d.id } }))}
                      >
                        Send again
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </section>
  );
}
