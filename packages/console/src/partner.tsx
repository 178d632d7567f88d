import { useEffect, useState } from 'preact/hooks';
import { ApiError, apiRoot, call } from './api.ts';
import { useBrand } from './brand.ts';
import { day, num, when } from './format.ts';
import { Layout } from './layout.tsx';
import { useLoad } from './route.ts';
import type {
  Child,
  ChildrenPage,
  CreatedChild,
  InstallCheck,
  PartnerEvent,
  PoolState,
  Released,
  RotatedKey,
  Transferred,
  UpdatedChild,
  WebhookSet,
} from './types.ts';
import { ConfirmButton, ErrorNote, Gauge, Notice, Pager, Secret, ShownOnce, snippetFor, TableWrap, UsageBar } from './ui.tsx';

interface ViewProps {
  apiKey: string;
  route: string[];
  onSignOut: () => void;
}

export function PartnerView({ apiKey, route, onSignOut }: ViewProps) {
  const [section = '', id] = route;
  const nav = [
    { href: '#/', label: 'Overview', current: section === '' },
    { href: '#/new', label: 'New child', current: section === 'new' },
    { href: '#/events', label: 'Events', current: section === 'events' },
    { href: '#/brand', label: 'Brand', current: section === 'brand' },
  ];
  if (section === 'brand')
    return (
      <Layout title="Brand" nav={nav} onSignOut={onSignOut}>
        <BrandForm apiKey={apiKey} />
      </Layout>
    );
  if (section === 'new')
    return (
      <Layout title="New child" nav={nav} onSignOut={onSignOut}>
        <CreateChild apiKey={apiKey} />
      </Layout>
    );
  if (section === 'events')
    return (
      <Layout title="Events" nav={nav} onSignOut={onSignOut}>
        <Events apiKey={apiKey} />
      </Layout>
    );
  if (section === 'children' && id)
    return (
      <Layout title="Child" nav={nav} onSignOut={onSignOut}>
        <ChildPage apiKey={apiKey} id={id} />
      </Layout>
    );
  return (
    <Layout title="Overview" nav={nav} onSignOut={onSignOut}>
      <Pool apiKey={apiKey} />
      <Children apiKey={apiKey} />
    </Layout>
  );
}

function Pool({ apiKey }: { apiKey: string }) {
  const { data, error } = useLoad(() => call<PoolState>(apiKey, 'partner-pool-state'), [apiKey]);
  if (!data) return error ? <ErrorNote error={error} /> : <p>Loading the pool…</p>;
  const { pool, auto_reload: reload } = data;
  return (
    <section aria-labelledby="pool-h" class="card pool">
      <h2 id="pool-h">Pool</h2>
      <Gauge
        used={pool.ids_used_this_period}
        quota={pool.monthly_id_quota}
        label={`${num(pool.ids_used_this_period)} of ${num(pool.monthly_id_quota)} IDs used this period`}
      />
      <dl class="facts">
        <dt>IDs used this period</dt>
        <dd>
          {num(pool.ids_used_this_period)} of {num(pool.monthly_id_quota)}
        </dd>
        <dt>Available</dt>
        <dd data-fact="available">{num(pool.available)}</dd>
        <dt>Top-up balance</dt>
        <dd data-fact="pool-topup">{num(pool.topup_balance)}</dd>
        <dt>Period ends</dt>
        <dd>{when(pool.current_period_end)}</dd>
        <dt>Billing</dt>
        <dd>{pool.pool_billing_mode === 'prepaid' ? 'Prepaid' : 'Invoiced monthly'}</dd>
        <dt>Auto-reload</dt>
        <dd>{autoReloadState(reload)}</dd>
      </dl>
    </section>
  );
}

/** Whether the pool refills itself, and if it is on but cannot, why. */
function autoReloadState(r: PoolState['auto_reload']): string {
  if (!r.enabled) return 'Off';
  if (!r.payment_method_id) return 'On, but not refilling: no card is saved';
  if (r.consecutive_declines > 0)
    return `On, but not refilling: the card was declined ${num(r.consecutive_declines)} time(s), last ${when(r.last_declined_at)}`;
  return `On: ${num(r.topup_amount_ids)} IDs when fewer than ${num(r.threshold_ids)} are available`;
}

/** Every child of the partner, read in pages of 500; search and the status filter run in the page. */
async function allChildren(apiKey: string): Promise<Child[]> {
  const all: Child[] = [];
  let offset: number | null | undefined = 0;
  while (offset !== null && offset !== undefined) {
    const page: ChildrenPage = await call<ChildrenPage>(apiKey, 'partner-list-children', { query: { include_inactive: true, limit: 500, offset } });
    all.push(...page.children);
    offset = page.next_offset;
  }
  return all;
}

const PAGE = 20;

function Children({ apiKey }: { apiKey: string }) {
  const { data, error } = useLoad(() => allChildren(apiKey), [apiKey]);
  const [search, setSearch] = useState('');
  const [filter, setFilter] = useState<'active' | 'inactive' | 'all'>('all');
  const [offset, setOffset] = useState(0);
  const term = search.trim().toLowerCase();
  const shown = (data ?? []).filter(
    (c) =>
      (filter === 'all' || (filter === 'active') === (c.status === 'active')) &&
      (!term || c.name.toLowerCase().includes(term) || (c.domain ?? '').includes(term)),
  );
  return (
    <section aria-labelledby="children-h" class="card">
      <h2 id="children-h">Children</h2>
      <div class="filters">
        <label>
          Search
          <input
            type="search"
            value={search}
            onInput={(e) => {
              setSearch(e.currentTarget.value);
              setOffset(0);
            }}
          />
        </label>
        <label>
          Status
          <select
            value={filter}
            onChange={(e) => {
              setFilter(e.currentTarget.value as typeof filter);
              setOffset(0);
            }}
          >
            <option value="all">All</option>
            <option value="active">Active</option>
            <option value="inactive">Suspended or revoked</option>
          </select>
        </label>
        <a class="button" href="#/new">
          New child
        </a>
      </div>
      <ErrorNote error={error} />
      {!data && !error && <p>Loading the children…</p>}
      {data && (
        <>
          <TableWrap label="Children">
            <table>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Domain</th>
                  <th scope="col">Status</th>
                  <th scope="col">IDs used</th>
                  <th scope="col">Top-up</th>
                  <th scope="col">Period ends</th>
                  <th scope="col">Webhook</th>
                </tr>
              </thead>
              <tbody>
                {shown.slice(offset, offset + PAGE).map((c) => (
                  <tr key={c.child_api_key_id}>
                    <td>
                      <a href={`#/children/${c.child_api_key_id}`}>{c.name}</a>
                    </td>
                    <td>{c.domain ?? '—'}</td>
                    <td>
                      <span class={`status ${c.status}`}>{c.status}</span>
                    </td>
                    <td>
                      <UsageBar used={c.ids_used_this_period} of={c.monthly_id_quota} label={`IDs used by ${c.name}`} />
                    </td>
                    <td>{num(c.topup_balance)}</td>
                    <td>{day(c.current_period_end)}</td>
                    <td>{c.has_webhook ? 'Yes' : 'No'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager offset={offset} pageSize={PAGE} total={shown.length} onPage={setOffset} />
        </>
      )}
    </section>
  );
}

/** The fields of the create form, in the order an error naming several is matched. */
const CHILD_FIELDS = ['webhook_secret', 'webhook_url', 'monthly_id_quota', 'brand_name', 'domain', 'name'] as const;
type ChildField = (typeof CHILD_FIELDS)[number];

/** The field an API error is about: the API's message names the field it concerns. */
function fieldOf(err: unknown): ChildField | undefined {
  if (!(err instanceof ApiError)) return undefined;
  return CHILD_FIELDS.find((f) => err.message.includes(f));
}

function Field({ name, label, error, children }: { name: ChildField; label: string; error: unknown; children: preact.ComponentChildren }) {
  const mine = fieldOf(error) === name;
  return (
    <div class={mine ? 'field invalid' : 'field'}>
      <label for={`f-${name}`}>{label}</label>
      {children}
      {mine && (
        <p class="error" id={`f-${name}-error`} role="alert">
          {(error as ApiError).message}
        </p>
      )}
    </div>
  );
}

function CreateChild({ apiKey }: { apiKey: string }) {
  const [error, setError] = useState<unknown>(null);
  const [created, setCreated] = useState<CreatedChild | null>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    const f = new FormData(e.currentTarget as HTMLFormElement);
    const text = (k: string) => String(f.get(k) ?? '').trim();
    const body: Record<string, unknown> = { name: text('name'), domain: text('domain') };
    if (text('monthly_id_quota')) body.monthly_id_quota = Number(text('monthly_id_quota'));
    if (text('webhook_url')) body.webhook_url = text('webhook_url');
    if (text('brand_name')) body.brand_name = text('brand_name');
    setBusy(true);
    setError(null);
    try {
      setCreated(await call<CreatedChild>(apiKey, 'partner-create-child-key', { body }));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  if (created) {
    return (
      <section aria-labelledby="created-h" class="card">
        <h2 id="created-h">{created.child.name} is created</h2>
        <ShownOnce>
          <Secret label="API key" value={created.child.key} />
          {created.webhook.secret && <Secret label="Webhook secret" value={created.webhook.secret} />}
          <Secret label="Install snippet" value={snippetFor(apiRoot(), created.website.tracking_script_id)} />
        </ShownOnce>
        <p>
          <a href={`#/children/${created.child.api_key_id}`} onClick={() => setCreated(null)}>
            Open {created.child.name}
          </a>
        </p>
      </section>
    );
  }
  const invalid = (name: ChildField) => (fieldOf(error) === name ? { 'aria-invalid': true, 'aria-describedby': `f-${name}-error` } : {});
  return (
    <form class="card form" onSubmit={submit} noValidate>
      <Field name="name" label="Name" error={error}>
        <input id="f-name" name="name" maxLength={200} {...invalid('name')} />
      </Field>
      <Field name="domain" label="Domain (a bare host, like shop.example.com)" error={error}>
        <input id="f-domain" name="domain" maxLength={300} autocomplete="off" {...invalid('domain')} />
      </Field>
      <Field name="monthly_id_quota" label="Monthly ID quota" error={error}>
        <input id="f-monthly_id_quota" name="monthly_id_quota" type="number" min={0} inputMode="numeric" {...invalid('monthly_id_quota')} />
      </Field>
      <Field name="webhook_url" label="Webhook URL (optional)" error={error}>
        <input id="f-webhook_url" name="webhook_url" type="url" maxLength={2048} {...invalid('webhook_url')} />
      </Field>
      <Field name="brand_name" label="Brand name (optional)" error={error}>
        <input id="f-brand_name" name="brand_name" maxLength={200} {...invalid('brand_name')} />
      </Field>
      {error && !fieldOf(error) && <ErrorNote error={error} />}
      <button type="submit" disabled={busy}>
        {busy ? 'Creating…' : 'Create child'}
      </button>
    </form>
  );
}

/** One form that sends one change and says what came of it. */
function ActionForm({
  title,
  submitLabel,
  onSubmit,
  children,
}: {
  title: string;
  submitLabel: string;
  onSubmit: (f: FormData) => Promise<string>;
  children?: preact.ComponentChildren;
}) {
  const [result, setResult] = useState<{ ok?: string; error?: unknown }>({});
  const [busy, setBusy] = useState(false);
  const id = `a-${title.toLowerCase().replace(/[^a-z]+/g, '-')}`;
  const submit = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    setResult({});
    try {
      setResult({ ok: await onSubmit(new FormData(e.currentTarget as HTMLFormElement)) });
    } catch (error) {
      setResult({ error });
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="action" onSubmit={submit} aria-labelledby={id} noValidate>
      <h3 id={id}>{title}</h3>
      {children}
      <button type="submit" disabled={busy}>
        {submitLabel}
      </button>
      {result.ok && <Notice>{result.ok}</Notice>}
      <ErrorNote error={result.error} />
    </form>
  );
}

function ChildPage({ apiKey, id }: { apiKey: string; id: string }) {
  const { data, error, reload } = useLoad(
    () => call<ChildrenPage>(apiKey, 'partner-list-children', { query: { child_api_key_id: id, include_inactive: true } }),
    [apiKey, id],
  );
  const [secret, setSecret] = useState<{ label: string; value: string } | null>(null);
  const [released, setReleased] = useState<Released | null>(null);
  const [actionError, setActionError] = useState<unknown>(null);
  if (released)
    return (
      <Notice>
        The child is released: its key is a direct key again and {num(released.topup_returned)} top-up IDs returned to the pool.{' '}
        <a href="#/">Back to the overview</a>
      </Notice>
    );
  const child = data?.children[0];
  if (!child) return error ? <ErrorNote error={error} /> : data ? <p>No such child.</p> : <p>Loading…</p>;
  const update = async (body: Record<string, unknown>) => {
    const r = await call<UpdatedChild>(apiKey, 'partner-update-child', { body: { child_api_key_id: id, ...body } });
    reload();
    return r;
  };
  const text = (f: FormData, k: string) => String(f.get(k) ?? '').trim();
  const rotate = async () => {
    setActionError(null);
    try {
      const r = await call<RotatedKey>(apiKey, 'partner-rotate-child-key', { body: { child_api_key_id: id } });
      setSecret({ label: 'New API key', value: r.key });
    } catch (err) {
      setActionError(err);
    }
  };
  const release = async () => {
    setActionError(null);
    try {
      setReleased(await call<Released>(apiKey, 'partner-release-child', { body: { child_api_key_id: id } }));
    } catch (err) {
      setActionError(err);
    }
  };
  return (
    <>
      <section class="card" aria-labelledby="child-h">
        <h2 id="child-h">{child.name}</h2>
        <dl class="facts">
          <dt>Domain</dt>
          <dd>{child.domain ?? '—'}</dd>
          <dt>Status</dt>
          <dd>
            <span class={`status ${child.status}`}>{child.status}</span>
          </dd>
          <dt>IDs used this period</dt>
          <dd>
            <UsageBar used={child.ids_used_this_period} of={child.monthly_id_quota} label="IDs used this period" />
          </dd>
          <dt>Top-up balance</dt>
          <dd data-fact="child-topup">{num(child.topup_balance)}</dd>
          <dt>Period ends</dt>
          <dd>{when(child.current_period_end)}</dd>
          <dt>Webhook</dt>
          <dd>{child.has_webhook ? 'Set' : 'None'}</dd>
          <dt>Created</dt>
          <dd>{when(child.created_at)}</dd>
        </dl>
        {child.tracking_script_id && (
          <div class="snippet">
            <h3>Install snippet</h3>
            <p>Put this in the &lt;head&gt; of every page of {child.domain}.</p>
            <Secret label="Install snippet" value={snippetFor(apiRoot(), child.tracking_script_id)} />
          </div>
        )}
      </section>
      {secret && (
        <ShownOnce>
          <Secret label={secret.label} value={secret.value} />
        </ShownOnce>
      )}
      {child.tracking_script_id && <InstallStatus apiKey={apiKey} id={id} />}
      <section class="card actions" aria-label="Change the child">
        <ActionForm
          title="Rename"
          submitLabel="Rename"
          onSubmit={async (f) => {
            await update({ name: text(f, 'name') });
            return 'Renamed.';
          }}
        >
          <label for="c-name">Name</label>
          <input id="c-name" name="name" defaultValue={child.name} maxLength={200} />
        </ActionForm>
        <ActionForm
          title="Quota"
          submitLabel="Set quota"
          onSubmit={async (f) => {
            const quota = Number(text(f, 'quota'));
            const r = await update({ monthly_id_quota: quota });
            return quota < child.monthly_id_quota && r.subscription.monthly_id_quota !== quota
              ? `The decrease to ${num(quota)} applies from the next period (${when(r.subscription.current_period_end)}).`
              : 'Quota set.';
          }}
        >
          <label for="c-quota">Monthly ID quota</label>
          <input id="c-quota" name="quota" type="number" min={0} defaultValue={String(child.monthly_id_quota)} />
          <p class="hint">An increase applies now; a decrease applies from the next period.</p>
        </ActionForm>
        <ActionForm
          title="Status"
          submitLabel="Set status"
          onSubmit={async (f) => {
            await update({ status: text(f, 'status') });
            return 'Status set.';
          }}
        >
          <label for="c-status">Status</label>
          <select id="c-status" name="status" defaultValue={child.status}>
            <option value="active">Active</option>
            <option value="suspended">Suspended</option>
            <option value="revoked">Revoked</option>
          </select>
        </ActionForm>
        <ActionForm
          title="Extend the period"
          submitLabel="Extend"
          onSubmit={async (f) => {
            const r = await update({ extend_period_days: Number(text(f, 'days')) });
            return `The period now ends ${when(r.subscription.current_period_end)}.`;
          }}
        >
          <label for="c-days">Days</label>
          <input id="c-days" name="days" type="number" min={1} max={3650} defaultValue="30" />
        </ActionForm>
        <ActionForm
          title="Transfer top-up"
          submitLabel="Transfer"
          onSubmit={async (f) => {
            const r = await call<Transferred>(apiKey, 'partner-transfer-topup', {
              body: { child_api_key_id: id, amount: Number(text(f, 'amount')) },
            });
            reload();
            return `Transferred ${num(r.transferred)} IDs: the pool has ${num(r.partner_topup_balance)} left, the child ${num(r.child_topup_balance)}.`;
          }}
        >
          <label for="c-amount">IDs from the pool’s top-up</label>
          <input id="c-amount" name="amount" type="number" min={1} />
        </ActionForm>
        <ActionForm
          title="Webhook"
          submitLabel="Save webhook"
          onSubmit={async (f) => {
            const url = text(f, 'webhook_url');
            const r = await update({ webhook_url: url || null });
            if (r.webhook?.secret) setSecret({ label: 'Webhook secret', value: r.webhook.secret });
            return url ? 'Webhook set.' : 'Webhook cleared.';
          }}
        >
          <label for="c-webhook">Webhook URL (empty clears it)</label>
          <input id="c-webhook" name="webhook_url" type="url" maxLength={2048} />
        </ActionForm>
        <div class="action">
          <h3>Key</h3>
          <p>Rotating replaces the key at once: the old key stops working.</p>
          <ConfirmButton label="Rotate key" confirmLabel="Yes, rotate the key" onConfirm={rotate} />
        </div>
        <div class="action">
          <h3>Release</h3>
          <p>The key becomes a direct key again; the child’s top-up returns to the pool.</p>
          <ConfirmButton label="Release child" confirmLabel="Yes, release the child" onConfirm={release} />
        </div>
        <ErrorNote error={actionError} />
      </section>
    </>
  );
}

function Events({ apiKey }: { apiKey: string }) {
  const [status, setStatus] = useState('');
  const [child, setChild] = useState('');
  const children = useLoad(() => allChildren(apiKey), [apiKey]);
  const { data, error, reload } = useLoad(
    () => call<{ events: PartnerEvent[] }>(apiKey, 'partner-list-events', { query: { status, child_api_key_id: child, limit: 100 } }),
    [apiKey, status, child],
  );
  const [note, setNote] = useState<{ ok?: string; error?: unknown }>({});
  const names = new Map((children.data ?? []).map((c) => [c.child_api_key_id, c.name]));
  const replay = async (id: string) => {
    setNote({});
    try {
      await call(apiKey, 'partner-replay-event', { body: { event_id: id } });
      setNote({ ok: 'Queued for delivery again.' });
      reload();
    } catch (err) {
      setNote({ error: err });
    }
  };
  return (
    <>
      <PartnerWebhook apiKey={apiKey} />
      <section class="card" aria-labelledby="events-h">
        <h2 id="events-h">Events</h2>
        <div class="filters">
          <label>
            Delivery
            <select value={status} onChange={(e) => setStatus(e.currentTarget.value)}>
              <option value="">Any</option>
              <option value="pending">Pending</option>
              <option value="delivered">Delivered</option>
              <option value="failed">Failed</option>
              <option value="no_destination">No destination</option>
            </select>
          </label>
          <label>
            Child
            <select value={child} onChange={(e) => setChild(e.currentTarget.value)}>
              <option value="">Any</option>
              {(children.data ?? []).map((c) => (
                <option key={c.child_api_key_id} value={c.child_api_key_id}>
                  {c.name}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={reload}>
            Refresh
          </button>
        </div>
        {note.ok && <Notice>{note.ok}</Notice>}
        <ErrorNote error={note.error ?? error} />
        {data && data.events.length === 0 && <p>No events.</p>}
        <ul class="events">
          {(data?.events ?? []).map((e) => (
            <li key={e.id} class="event" data-event={e.id}>
              <div class="event-head">
                <strong>{e.event}</strong>
                <span class={`delivery ${e.delivery_status}`}>{e.delivery_status.replace('_', ' ')}</span>
                <span>{when(e.created_at)}</span>
                {e.child_api_key_id && <span>{names.get(e.child_api_key_id) ?? e.child_api_key_id}</span>}
                <span>
                  {num(e.attempts)} attempt{e.attempts === 1 ? '' : 's'}
                </span>
                {(e.delivery_status === 'delivered' || e.delivery_status === 'failed') && (
                  <button type="button" onClick={() => replay(e.id)} aria-label={`Replay ${e.event} of ${when(e.created_at)}`}>
                    Replay
                  </button>
                )}
              </div>
              {e.last_error && <p class="error-text">Last error: {e.last_error}</p>}
              <details>
                <summary>Payload</summary>
                <pre>{JSON.stringify(e.payload, null, 2)}</pre>
              </details>
            </li>
          ))}
        </ul>
      </section>
    </>
  );
}

function PartnerWebhook({ apiKey }: { apiKey: string }) {
  const [secret, setSecret] = useState<string | null>(null);
  return (
    <section class="card" aria-label="Partner webhook">
      <ActionForm
        title="Partner webhook"
        submitLabel="Save webhook"
        onSubmit={async (f) => {
          const url = String(f.get('url') ?? '').trim();
          const r = await call<WebhookSet>(apiKey, 'partner-set-webhook', { body: { url: url || null } });
          setSecret(r.partner_webhook_secret ?? null);
          return r.partner_webhook_url ? `Events go to ${r.partner_webhook_url}.` : 'The webhook is cleared: events are not sent.';
        }}
      >
        <label for="w-url">URL for child.* events (empty clears it)</label>
        <input id="w-url" name="url" type="url" maxLength={2048} />
      </ActionForm>
      {secret && (
        <ShownOnce>
          <Secret label="Partner webhook secret" value={secret} />
        </ShownOnce>
      )}
    </section>
  );
}

/** The white label the partner's children see: name, accent and logo (partner-set-brand). */
function BrandForm({ apiKey }: { apiKey: string }) {
  const { brand, reload } = useBrand();
  return (
    <section class="card" aria-label="White label">
      <p>Your children’s customers see this name, colour and logo in the console instead of Sightline’s; each child under its own brand name.</p>
      <ActionForm
        title="White label"
        submitLabel="Save brand"
        onSubmit={async (f) => {
          const text = (k: string) => String(f.get(k) ?? '').trim() || null;
          await call(apiKey, 'partner-set-brand', {
            body: { brand_name: text('brand_name'), accent_color: text('accent_color'), logo_url: text('logo_url') },
          });
          reload();
          return 'Brand saved.';
        }}
      >
        <label for="b-name">Brand name (empty: none)</label>
        <input id="b-name" name="brand_name" maxLength={200} defaultValue={brand.brand_name ?? ''} />
        <label for="b-accent">Accent colour</label>
        <input id="b-accent" name="accent_color" type="color" defaultValue={brand.accent_color ?? '#0a58ca'} />
        <label for="b-logo">Logo URL (https; empty: none)</label>
        <input id="b-logo" name="logo_url" type="url" maxLength={2048} defaultValue={brand.logo_url ?? ''} />
      </ActionForm>
    </section>
  );
}

/** How often the install check asks while it waits for the first page view. */
const INSTALL_POLL_MS = 3000;

/** Whether the child's tracker has sent a page view, asked again until one arrives (partner-install-check). */
function InstallStatus({ apiKey, id }: { apiKey: string; id: string }) {
  const [check, setCheck] = useState<InstallCheck | null>(null);
  const [inspected, setInspected] = useState<InstallCheck | null>(null);
  const [inspecting, setInspecting] = useState(false);
  const [error, setError] = useState<unknown>(null);
  // Reading the site's page is a request from the server to the site: asked for, not polled.
  const inspect = async () => {
    setInspecting(true);
    try {
      setInspected(await call<InstallCheck>(apiKey, 'partner-install-check', { query: { child_api_key_id: id, inspect: 'true' } }));
      setError(null);
    } catch (err) {
      setError(err);
    } finally {
      setInspecting(false);
    }
  };
  useEffect(() => {
    let live = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ask = async () => {
      try {
        const r = await call<InstallCheck>(apiKey, 'partner-install-check', { query: { child_api_key_id: id } });
        if (!live) return;
        setCheck(r);
        setError(null);
        if (!r.installed) timer = setTimeout(ask, INSTALL_POLL_MS);
      } catch (err) {
        if (live) setError(err);
      }
    };
    ask();
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [apiKey, id]);
  return (
    <section class="card" aria-labelledby="install-h">
      <h2 id="install-h">Install check</h2>
      <ErrorNote error={error} />
      <div aria-live="polite" data-install={check ? (check.installed ? 'installed' : 'waiting') : 'loading'}>
        {!check && <p>Checking…</p>}
        {check?.installed && (
          <p class="ok-state">
            Installed: the last page view arrived {when(check.last_page_view_at)} ({num(check.page_views_24h)} in the last 24 hours).
          </p>
        )}
        {check && !check.installed && (
          <>
            <p class="waiting-state">Waiting for the first page view. This updates by itself once one arrives.</p>
            {check.bot_beacons_24h > 0 && <p>{num(check.bot_beacons_24h)} beacons arrived from bots in the last 24 hours; they are not counted.</p>}
            <p>If none arrives after you open a page of the site, the likely causes, most likely first:</p>
            <ul data-causes>
              {(inspected ?? check).likely_causes.map((c) => (
                <li key={c.code} data-cause={c.code}>
                  {c.message}
                </li>
              ))}
            </ul>
            <button type="button" onClick={inspect} disabled={inspecting}>
              {inspecting ? 'Reading the site’s page…' : 'Check the site’s page'}
            </button>
            {inspected?.page && (
              <p data-page-status>
                {inspected.page.error
                  ? `${inspected.page.url}: ${inspected.page.error}.`
                  : `${inspected.page.url}: the snippet is ${inspected.page.snippet_found ? 'there' : 'not there'}; its Content-Security-Policy ${
                      inspected.page.script_allowed === false || inspected.page.beacons_allowed === false ? 'blocks the tracker' : 'lets it run'
                    }.`}
              </p>
            )}
          </>
        )}
      </div>
    </section>
  );
}
