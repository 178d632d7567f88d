import { Fragment } from 'preact';
import { useState } from 'preact/hooks';
import { call } from './api.ts';
import { duration, num, utcDay, when } from './format.ts';
import { Integrations } from './integrations.tsx';
import { Layout } from './layout.tsx';
import { useLoad } from './route.ts';
import { TrafficRules } from './traffic-rules.tsx';
import type { KeyUsage, Visitor, VisitorActivity, VisitorStats, VisitorsPage } from './types.ts';
import { ErrorNote, Pager, TableWrap, UsageBar } from './ui.tsx';
import { ExportButton, MarkToggles } from './visitor-actions.tsx';

interface ViewProps {
  apiKey: string;
  route: string[];
  onSignOut: () => void;
}

const RANGES: { value: string; label: string; days: number }[] = [
  { value: '1', label: 'Last 24 hours', days: 1 },
  { value: '7', label: 'Last 7 days', days: 7 },
  { value: '30', label: 'Last 30 days', days: 30 },
  { value: '90', label: 'Last 90 days', days: 90 },
  { value: '365', label: 'Last 12 months', days: 365 },
];

const PAGE = 25;

export function SiteView({ apiKey, route, onSignOut }: ViewProps) {
  const [section = '', ip, id] = route;
  const nav = [{ href: '#/', label: 'Visitors', current: section === '' }];
  if (section === 'visitor' && ip && id)
    return (
      <Layout title="Visitor" nav={nav} onSignOut={onSignOut}>
        <VisitorPage apiKey={apiKey} ip={ip} rawId={id} />
      </Layout>
    );
  return (
    <Layout title="Visitors" nav={nav} onSignOut={onSignOut}>
      <Usage apiKey={apiKey} />
      <Visitors apiKey={apiKey} />
      <TrafficRules apiKey={apiKey} />
      <Integrations apiKey={apiKey} />
    </Layout>
  );
}

/** The IDs the key draws on and when the period rolls (key-usage). */
function Usage({ apiKey }: { apiKey: string }) {
  const { data, error } = useLoad(() => call<KeyUsage>(apiKey, 'key-usage'), [apiKey]);
  if (error) return <ErrorNote error={error} />;
  if (!data || data.metered_by === 'none') return null;
  const quota = data.monthly_id_quota ?? 0;
  const used = data.ids_used_this_period ?? 0;
  return (
    <section class="card" aria-labelledby="usage-h">
      <h2 id="usage-h">Identifications this period</h2>
      <dl class="facts">
        <dt>IDs used</dt>
        <dd data-fact="ids-used">
          <UsageBar used={used} of={quota} label="IDs used this period" />
        </dd>
        <dt>Top-up balance</dt>
        <dd>{num(data.topup_balance)}</dd>
        <dt>Available</dt>
        <dd data-fact="ids-available">{num(data.available)}</dd>
        <dt>Period rolls</dt>
        <dd>{when(data.current_period_end)}</dd>
        {data.pending_monthly_id_quota !== null && (
          <>
            <dt>Next period’s quota</dt>
            <dd>{num(data.pending_monthly_id_quota)}</dd>
          </>
        )}
      </dl>
    </section>
  );
}

const MIX: { key: keyof VisitorStats['traffic_mix']; label: string }[] = [
  { key: 'business', label: 'Business' },
  { key: 'isp', label: 'Internet providers' },
  { key: 'hosting', label: 'Hosting' },
  { key: 'vpn', label: 'VPN' },
  { key: 'education', label: 'Education' },
  { key: 'government', label: 'Government' },
  { key: 'unknown', label: 'Unknown' },
  { key: 'bots', label: 'Bots (excluded)' },
  { key: 'excluded_cidr', label: 'Excluded: addresses' },
  { key: 'excluded_domain', label: 'Excluded: company domains' },
  { key: 'excluded_path', label: 'Excluded: page paths' },
  { key: 'excluded_country', label: 'Excluded: countries' },
];

/** Identified companies per day (SVG bars) and the traffic mix that explains them (visitor-stats). */
function Charts({ apiKey, days }: { apiKey: string; days: number }) {
  const { data, error } = useLoad(() => {
    const since = new Date(Date.now() - days * 86_400_000).toISOString();
    return call<VisitorStats>(apiKey, 'visitor-stats', { query: { since } });
  }, [apiKey, days]);
  if (error) return <ErrorNote error={error} />;
  if (!data) return null;
  // One bar per UTC day of the range, zero where none was identified.
  const counts = new Map(data.identified_per_day.map((d) => [d.day, d.companies]));
  const start = Date.parse(`${data.since.slice(0, 10)}T00:00:00Z`);
  const bars: { day: string; companies: number }[] = [];
  for (let t = start; t <= Date.parse(data.until); t += 86_400_000) {
    const day = new Date(t).toISOString().slice(0, 10);
    bars.push({ day, companies: counts.get(day) ?? 0 });
  }
  const max = Math.max(1, ...bars.map((b) => b.companies));
  const total = data.identified_per_day.reduce((n, d) => n + d.companies, 0);
  const width = 600;
  const height = 120;
  const step = width / Math.max(bars.length, 1);
  const mixTotal = Math.max(1, ...MIX.map((m) => data.traffic_mix[m.key]));
  return (
    <section class="card charts" aria-labelledby="charts-h">
      <h2 id="charts-h">Identified companies</h2>
      <svg
        class="chart"
        viewBox={`0 0 ${width} ${height + 16}`}
        role="img"
        aria-label={`${num(total)} companies identified over ${bars.length} days, at most ${num(max)} a day`}
      >
        {bars.map((b, i) => {
          const h = (b.companies / max) * height;
          return (
            <rect key={b.day} class="bar" x={i * step + step * 0.1} y={height - h} width={step * 0.8} height={h}>
              <title>{`${utcDay(b.day)}: ${num(b.companies)}`}</title>
            </rect>
          );
        })}
        <line x1="0" y1={height} x2={width} y2={height} class="axis" />
        <text x="0" y={height + 14} class="tick">
          {utcDay(bars[0]?.day)}
        </text>
        <text x={width} y={height + 14} class="tick" text-anchor="end">
          {utcDay(bars.at(-1)?.day)}
        </text>
      </svg>
      <h3>Traffic mix</h3>
      <p class="hint">Addresses seen on your site by what they are. Only business traffic can be identified; the rest never uses an ID.</p>
      <dl class="facts mix">
        {MIX.map((m) => (
          <Fragment key={m.key}>
            <dt>{m.label}</dt>
            <dd data-mix={m.key}>
              <meter min={0} max={mixTotal} value={data.traffic_mix[m.key]} aria-label={m.label} /> {num(data.traffic_mix[m.key])}
            </dd>
          </Fragment>
        ))}
      </dl>
    </section>
  );
}

/** The last page the feed showed, so a visitor's page opens without asking again. */
const seen = new Map<string, Visitor>();

/** The charts and the feed, over one range. */
function Visitors({ apiKey }: { apiKey: string }) {
  const [range, setRange] = useState('30');
  const days = RANGES.find((r) => r.value === range)?.days ?? 30;
  return (
    <>
      <Charts apiKey={apiKey} days={days} />
      <Feed apiKey={apiKey} range={range} setRange={setRange} />
    </>
  );
}

function Feed({ apiKey, range, setRange }: { apiKey: string; range: string; setRange: (r: string) => void }) {
  const [search, setSearch] = useState('');
  const [source, setSource] = useState('all');
  const [marked, setMarked] = useState('');
  // A range of UTC days (YYYY-MM-DD, both included); empty: the Seen range, up to now.
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [offset, setOffset] = useState(0);
  const days = RANGES.find((r) => r.value === range)?.days ?? 30;
  // The feed's filter, which the export downloads as it is (the range's start is fixed when it changes).
  const [rangeStart, setRangeStart] = useState(() => Date.now());
  const filter: Record<string, string | undefined> = {
    search: search.trim(),
    source,
    since: from ? `${from}T00:00:00.000Z` : new Date(rangeStart - days * 86_400_000).toISOString(),
    until: to ? new Date(Date.parse(`${to}T00:00:00.000Z`) + 86_400_000).toISOString() : undefined,
    watched: marked === 'watched' ? 'true' : undefined,
    pinned: marked === 'pinned' ? 'true' : undefined,
  };
  const { data, error, reload } = useLoad(async () => {
    const page = await call<VisitorsPage>(apiKey, 'list-visitors', { query: { ...filter, limit: PAGE, offset } });
    for (const v of page.visitors) seen.set(v.raw_id, v);
    return page;
  }, [apiKey, search, source, days, offset, marked, from, to, rangeStart]);
  const refilter = (set: () => void) => {
    set();
    setOffset(0);
    setRangeStart(Date.now());
  };
  return (
    <section class="card" aria-labelledby="feed-h">
      <h2 id="feed-h">Identified visitors</h2>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          Search
          <input
            type="search"
            value={search}
            placeholder="Company, domain or address"
            onChange={(e) => refilter(() => setSearch(e.currentTarget.value))}
          />
        </label>
        <label>
          Source
          <select value={source} onChange={(e) => refilter(() => setSource(e.currentTarget.value))}>
            <option value="all">All</option>
            <option value="tracker">Tracker</option>
            <option value="api">API lookups</option>
          </select>
        </label>
        <label>
          Seen
          <select value={range} onChange={(e) => refilter(() => setRange(e.currentTarget.value))}>
            {RANGES.map((r) => (
              <option key={r.value} value={r.value}>
                {r.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          From
          <input type="date" value={from} max={to || undefined} onChange={(e) => refilter(() => setFrom(e.currentTarget.value))} />
        </label>
        <label>
          To
          <input type="date" value={to} min={from || undefined} onChange={(e) => refilter(() => setTo(e.currentTarget.value))} />
        </label>
        <label>
          Marked
          <select value={marked} onChange={(e) => refilter(() => setMarked(e.currentTarget.value))}>
            <option value="">All visitors</option>
            <option value="watched">Watched</option>
            <option value="pinned">Pinned</option>
          </select>
        </label>
        <ExportButton apiKey={apiKey} query={filter} />
      </form>
      <p class="hint">From and To are UTC days, both included; they take the place of Seen.</p>
      <ErrorNote error={error} />
      {!data && !error && <p>Loading visitors…</p>}
      {data && (
        <>
          <TableWrap label="Visitors">
            <table>
              <thead>
                <tr>
                  <th scope="col">Company</th>
                  <th scope="col">Watch / pin</th>
                  <th scope="col">Domain</th>
                  <th scope="col">Country</th>
                  <th scope="col">Pages</th>
                  <th scope="col">Engaged</th>
                  <th scope="col">Last seen</th>
                  <th scope="col">Intent</th>
                  <th scope="col">Source</th>
                </tr>
              </thead>
              <tbody>
                {data.visitors.map((v) => (
                  <tr key={v.raw_id}>
                    <td>
                      <a href={`#/visitor/${encodeURIComponent(v.ip)}/${encodeURIComponent(v.raw_id)}`}>{v.display_name || v.company_name}</a>
                    </td>
                    <td>
                      <MarkToggles apiKey={apiKey} visitor={v} onMarked={marked ? reload : () => {}} />
                    </td>
                    <td>{v.domain || '—'}</td>
                    <td>{v.country ?? '—'}</td>
                    <td>{num(v.pages_viewed)}</td>
                    <td>{duration(v.active_seconds)}</td>
                    <td>{when(v.last_seen)}</td>
                    <td>{v.high_intent ? <span class="intent">High</span> : '—'}</td>
                    <td>{v.source === 'api' ? 'API' : 'Tracker'}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          {data.visitors.length === 0 && <p>No identified visitors in this range.</p>}
          <Pager offset={offset} pageSize={PAGE} total={data.total} onPage={setOffset} />
        </>
      )}
    </section>
  );
}

function VisitorPage({ apiKey, ip, rawId }: { apiKey: string; ip: string; rawId: string }) {
  const { data, error } = useLoad(async () => {
    const known = seen.get(rawId);
    if (known) return known;
    // Opened directly: its address finds it (search matches an address's beginning).
    const page = await call<VisitorsPage>(apiKey, 'list-visitors', { query: { search: ip, limit: 50 } });
    return page.visitors.find((v) => v.raw_id === rawId) ?? null;
  }, [apiKey, ip, rawId]);
  if (error) return <ErrorNote error={error} />;
  if (data === undefined) return <p>Loading…</p>;
  if (data === null) return <p>This visitor is no longer listed.</p>;
  const v = data;
  return (
    <section class="card" aria-labelledby="visitor-h">
      <h2 id="visitor-h">{v.display_name || v.company_name}</h2>
      <p>
        <a href="#/">Back to the visitors</a>
      </p>
      <h3>Company</h3>
      <dl class="facts">
        <dt>Name</dt>
        <dd>{v.company_name}</dd>
        <dt>Domain</dt>
        <dd>{v.domain || '—'}</dd>
        <dt>Country</dt>
        <dd>{v.country ?? '—'}</dd>
        <dt>Industry</dt>
        <dd>{v.industry ?? '—'}</dd>
        <dt>Employees</dt>
        <dd>{num(v.employees)}</dd>
        <dt>Confidence</dt>
        <dd>{num(Math.round(v.confidence * 100))}%</dd>
        {v.company_linkedin_url && (
          <>
            <dt>LinkedIn</dt>
            <dd>
              <a href={v.company_linkedin_url} rel="noopener noreferrer" target="_blank">
                {v.company_linkedin_url}
              </a>
            </dd>
          </>
        )}
      </dl>
      {v.identification_type === 'individual' && v.person_linkedin_name && (
        <>
          <h3>Person</h3>
          <dl class="facts">
            <dt>Name</dt>
            <dd>{v.person_linkedin_name}</dd>
            <dt>Title</dt>
            <dd>{v.person_linkedin_title ?? '—'}</dd>
            <dt>Company</dt>
            <dd>{v.person_linkedin_company ?? '—'}</dd>
          </dl>
        </>
      )}
      <h3>Visits</h3>
      <dl class="facts">
        <dt>Address</dt>
        <dd>{v.ip}</dd>
        <dt>Site</dt>
        <dd>{v.tracker_site ?? '—'}</dd>
        <dt>Visits</dt>
        <dd>{num(v.visit_count)}</dd>
        <dt>Pages viewed</dt>
        <dd>{num(v.pages_viewed)}</dd>
        <dt>Engaged time</dt>
        <dd>{duration(v.active_seconds)}</dd>
        <dt>First seen</dt>
        <dd>{when(v.first_seen)}</dd>
        <dt>Last seen</dt>
        <dd>{when(v.last_seen)}</dd>
        <dt>High intent</dt>
        <dd>{v.high_intent ? 'Yes' : 'No'}</dd>
        <dt>CRM</dt>
        <dd data-crm={v.crm_status ?? 'none'}>
          {v.crm_status === 'pushed' ? `Pushed (company ${v.crm_id ?? '?'})` : v.crm_status === 'failed' ? 'The push failed' : 'Not pushed'}
        </dd>
      </dl>
      {v.source === 'tracker' && v.tracker_site && <Activity apiKey={apiKey} site={v.tracker_site} ip={v.ip} />}
    </section>
  );
}

/** The visitor's last day of pages and its ICP scores (visitor-activity): tracker rows only. */
function Activity({ apiKey, site, ip }: { apiKey: string; site: string; ip: string }) {
  const { data, error } = useLoad(() => call<VisitorActivity>(apiKey, 'visitor-activity', { query: { tracker_site: site, ip } }), [apiKey, site, ip]);
  if (error) return <ErrorNote error={error} />;
  if (!data) return <p>Loading its pages…</p>;
  return (
    <>
      <h3>ICP fit</h3>
      {data.icp_scores.length === 0 ? (
        <p>No active ICP has scored this visitor.</p>
      ) : (
        <ul data-icp-scores>
          {data.icp_scores.map((s) => (
            <li key={s.icp_id}>
              {s.icp_name}: {num(s.score)} / 100{s.qualified ? ' (qualified)' : ''}. {s.ai_summary}
            </li>
          ))}
        </ul>
      )}
      <h3>Pages on its last day here</h3>
      {data.pages.length === 0 ? (
        <p>No page views are kept for it any more.</p>
      ) : (
        <ol data-pages>
          {data.pages.map((p) => (
            <li key={`${p.at}${p.url}`}>
              {when(p.at)}: {p.url}
            </li>
          ))}
        </ol>
      )}
    </>
  );
}
