import fc from 'fast-check';
import { openapiDocument } from './openapi-check.ts';

/**
 * Generated requests for the fuzz suite (issue 15 §2), written from docs/openapi.json so every
 * documented field, parameter and header is exercised by name: each value is one its schema allows,
 * one at or just past a bound, or a hostile one (another type, injection-shaped text, unicode edges,
 * numbers JSON carries but Postgres or JavaScript may not). Around them: the wrong content type, a
 * body that is not JSON or not an object, undocumented fields and parameters, and every credential
 * the world holds besides garbage.
 */

type Schema = {
  $ref?: string;
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  additionalProperties?: boolean;
  items?: Schema;
  maxItems?: number;
  enum?: unknown[];
  format?: string;
  pattern?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  oneOf?: Schema[];
  anyOf?: Schema[];
};
interface Parameter {
  name: string;
  in: 'query' | 'header' | 'path';
  required?: boolean;
  schema?: Schema;
}
interface Operation {
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
}

/** What the generated values draw on beside random data: the world's real ids, keys and tokens. */
export interface FuzzWorld {
  /** Ids of rows that exist (own and other tenants'), so a uuid field often names a real thing. */
  ids: string[];
  /** Keys that authenticate, the right one for the route first. */
  keys: string[];
  /** Connected users (and other uuids) for `x-user-id`. */
  users: string[];
  /** Tokens of connect links. */
  tokens: string[];
  /** Pages of the world's tracked sites, for URL fields (a beacon's page). */
  urls: string[];
  /** The sweep secret, for `authorization`. */
  sweepSecret: string;
}

/** A request as the suite sends it to the app. */
export interface FuzzRequest {
  method: string;
  path: string;
  query: [string, string][];
  headers: Record<string, string>;
  body?: string;
  remoteAddress: string;
}

const resolve = (schema: Schema): Schema => {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace('#/components/schemas/', '');
  const found = (openapiDocument.components?.schemas as Record<string, Schema> | undefined)?.[name];
  if (!found) throw new Error(`docs/openapi.json has no schema ${schema.$ref}`);
  return found;
};

/** Text meant to break a query, a parser, a log line or a comparison, if anything builds one from it. */
export const HOSTILE_TEXT = [
  "' OR '1'='1",
  "'); drop table accounts; --",
  '1; select pg_sleep(10)',
  '$$; select 1; $$',
  '\\',
  '%_%',
  '{"$gt":""}',
  '<script>alert(1)</script>',
  '$' + '{process.env}',
  '../../etc/passwd',
  'a\u0000b',
  '\ud800',
  '\udfff\ud800',
  '\u202eevil',
  '\ufeffbom',
  'e\u0301\u0301\u0301',
  'İı',
  '👩‍👩‍👧‍👦',
  '\u2028\u2029',
  ' ',
  '',
  'null',
  'true',
  '-1',
  '1e309',
  'NaN',
  '0x10',
  '00000000-0000-0000-0000-000000000000',
  'FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF',
  'x'.repeat(5000),
  '💥'.repeat(2100),
];
const HOSTILE_VALUES: unknown[] = [
  null,
  true,
  false,
  0,
  -0,
  -1,
  0.5,
  2 ** 31,
  2 ** 53 + 2,
  -(2 ** 63),
  1e308,
  -1e308,
  [],
  {},
  [[[[]]]],
  JSON.parse('{"__proto__":{"polluted":true}}'),
  { constructor: { prototype: { polluted: true } } },
];
/** URLs a field may be given: none reaches past this machine, so a webhook probe fails fast. */
const URLS = [
  'http://127.0.0.1:9/hook',
  'https://localhost:1/x',
  'http://[::1]:9/',
  'http://169.254.169.254/latest/meta-data',
  'javascript:alert(1)',
  'ftp://127.0.0.1/x',
  'https://www.linkedin.com/in/jane-doe-1a2b3c',
  'https://linkedin.com/in/%C3%A9l%C3%A8ne',
  'https://www.linkedin.com/company/acme',
  'https://www.linkedin.com/in/x?y=1',
  'https://user:pw@www.linkedin.com/in/abc',
];
const hostile = fc.oneof(fc.constantFrom(...HOSTILE_TEXT), fc.constantFrom(...HOSTILE_VALUES));
const anyText = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: 'grapheme-ascii', maxLength: 40 }),
);

function typedString(name: string, schema: Schema, world: FuzzWorld): fc.Arbitrary<unknown> {
  if (schema.enum) return fc.oneof(fc.constantFrom(...schema.enum), anyText);
  const max = schema.maxLength ?? 300;
  const bounded = fc.oneof(
    { arbitrary: fc.string({ unit: 'grapheme', minLength: schema.minLength ?? 0, maxLength: Math.min(max, 60) }), weight: 6 },
    // At the bound and one past it, in units that are one and two UTF-16 code units long.
    { arbitrary: fc.constantFrom('a'.repeat(max), 'a'.repeat(max + 1), '😀'.repeat(max), 'é'.repeat(max + 1)), weight: 1 },
  );
  if (schema.format === 'uuid')
    return fc.oneof({ arbitrary: fc.constantFrom(...world.ids), weight: 4 }, { arbitrary: fc.uuid(), weight: 2 }, anyText);
  if (schema.pattern?.startsWith('^slc_'))
    return fc.oneof(fc.constantFrom('slc_', ...world.tokens), fc.stringMatching(/^slc_[0-9A-Za-z]{43}$/), anyText);
  if (/url|uri/i.test(name) || schema.format === 'uri' || schema.pattern?.includes('https?')) {
    return fc.oneof(
      fc.constantFrom(...URLS),
      fc.constantFrom(...world.urls),
      fc.tuple(fc.constantFrom(...world.urls), fc.webPath()).map(([u, p]) => `${u}${p}`),
      bounded,
    );
  }
  if (/domain|website|host|site$/i.test(name))
    return fc.oneof(fc.domain(), fc.constantFrom('localhost', 'Example.COM', 'a.b', 'http://x.com/', '*.example.com', 'example.com:443'), bounded);
  if (schema.format === 'date-time' || schema.format === 'date' || /since|before|after|date/.test(name)) {
    const instant = fc.date({ min: new Date('1969-01-01'), max: new Date('2100-01-01'), noInvalidDate: true });
    return fc.oneof(
      instant.map((d) => d.toISOString()),
      instant.map((d) => d.toISOString().slice(0, 10)),
      fc.constantFrom('2026-02-30', '2026-13-01T00:00:00Z', '0000-01-01', '+275760-09-13T00:00:00Z', 'yesterday'),
      bounded,
    );
  }
  // A traffic rule's value: each kind's shape (address or network, domain, path, country), and text.
  if (name === 'value')
    return fc.oneof(fc.ipV4(), fc.domain(), fc.webPath(), fc.constantFrom('DE', 'us', '10.0.0.0/8', '2001:db8::/32', '/careers*'), bounded);
  if (/^ip/.test(name))
    return fc.oneof(
      fc.ipV4(),
      fc.ipV6(),
      fc.ipV4Extended(),
      fc.constantFrom('::ffff:10.0.0.1', '256.1.1.1', '1.2.3', 'fe80::1%eth0', '0.0.0.0', '::'),
      bounded,
    );
  return bounded;
}

function typedNumber(schema: Schema, integer: boolean): fc.Arbitrary<unknown> {
  const lo = schema.minimum ?? schema.exclusiveMinimum ?? -1_000_000;
  const hi = schema.maximum ?? 1_000_000;
  const near = fc.constantFrom(lo - 1, lo, lo + 1, hi - 1, hi, hi + 1);
  const within = fc.integer({ min: Math.max(lo - 2, Number.MIN_SAFE_INTEGER), max: Math.min(hi + 2, Number.MAX_SAFE_INTEGER) });
  const fractions = fc.double({ noNaN: true, noDefaultInfinity: true });
  return fc.oneof({ arbitrary: within, weight: 6 }, { arbitrary: near, weight: 1 }, { arbitrary: fractions, weight: integer ? 1 : 3 });
}

/** A value for a field of this schema: what it allows, its bounds, or something hostile. */
export function valueFor(name: string, schema: Schema, world: FuzzWorld, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(schema);
  const alternatives = s.oneOf ?? s.anyOf;
  if (alternatives) return fc.oneof(...alternatives.map((a) => valueFor(name, a, world, depth)));
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : ['string'];
  const typed = types.map((t): fc.Arbitrary<unknown> => {
    switch (t) {
      case 'null':
        return fc.constant(null);
      case 'boolean':
        return fc.boolean();
      case 'integer':
        return typedNumber(s, true);
      case 'number':
        return typedNumber(s, false);
      case 'array':
        return fc.array(valueFor(name, s.items ?? {}, world, depth + 1), { maxLength: (s.maxItems ?? 5) + 1 });
      case 'object':
        return depth > 3 ? fc.constant({}) : objectFor(s, world, depth + 1);
      default:
        return typedString(name, s, world);
    }
  });
  return fc.oneof({ arbitrary: fc.oneof(...typed), weight: 16 }, { arbitrary: hostile, weight: 2 }, { arbitrary: anyText, weight: 1 });
}

const MISSING = Symbol('missing');

/** An object of this schema: required fields usually present, optional ones half the time, sometimes one it does not know. */
export function objectFor(schema: Schema, world: FuzzWorld, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const s = resolve(schema);
  if (s.oneOf || s.anyOf) return fc.oneof(...(s.oneOf ?? s.anyOf ?? []).map((a) => objectFor(a, world, depth)));
  const entries = Object.entries(s.properties ?? {});
  const required = new Set(s.required ?? []);
  const fields = entries.map(([name, prop]) =>
    fc.option(
      valueFor(name, prop, world, depth).map((v) => [name, v] as const),
      { nil: MISSING, freq: required.has(name) ? 12 : 2 },
    ),
  );
  const extra = fc.oneof(
    { arbitrary: fc.constant(MISSING), weight: 6 },
    {
      arbitrary: fc.tuple(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'id', 'account_id', 'is_partner', 'balance'), anyText), hostile),
      weight: 1,
    },
  );
  return fc.tuple(fc.tuple(...fields), extra).map(([present, more]) => {
    // defineProperty: a generated `__proto__` is an own field of the body, as JSON.parse makes it.
    const out: Record<string, unknown> = {};
    for (const f of [...present, more]) {
      if (typeof f !== 'symbol') Object.defineProperty(out, f[0], { value: f[1], enumerable: true, writable: true, configurable: true });
    }
    return out;
  });
}

/** Characters a header value may carry (what fetch's Headers accepts), printable and Latin-1. */
const headerText = fc.string({
  unit: fc.oneof(fc.integer({ min: 0x21, max: 0x7e }), fc.integer({ min: 0xa0, max: 0xff })).map((c) => String.fromCharCode(c)),
  maxLength: 60,
});
const headerName = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/);

const OTHER_CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'text/plain',
  'text/plain;charset=UTF-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/xml',
  'APPLICATION/JSON',
  'application/json; charset=latin1',
];
const contentType = fc.oneof(
  { arbitrary: fc.constant('application/json'), weight: 12 },
  { arbitrary: fc.constantFrom(...OTHER_CONTENT_TYPES), weight: 3 },
);

/** The body as sent: the schema's object serialized, any JSON, text that is not JSON, or nothing. */
function bodyFor(op: Operation | undefined, world: FuzzWorld): fc.Arbitrary<string | undefined> {
  const schema = op?.requestBody ? Object.values(op.requestBody.content)[0]?.schema : undefined;
  const objects = schema ? objectFor(schema, world).map((o) => JSON.stringify(o)) : fc.constant('{}');
  return fc.oneof(
    { arbitrary: objects, weight: 14 },
    { arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)), weight: 2 },
    { arbitrary: fc.string({ unit: 'binary', maxLength: 200 }), weight: 2 },
    { arbitrary: objects.map((t) => t.slice(0, Math.max(0, t.length - 1 - (t.length % 7)))), weight: 1 },
    { arbitrary: fc.constantFrom(undefined, '', 'null', '[]', '"x"', '{"a":1,"a":2}', '{"a":1e999}', `{"a":"${'\\ud800'}"}`), weight: 1 },
  );
}

function queryFor(op: Operation | undefined, world: FuzzWorld): fc.Arbitrary<[string, string][]> {
  const params = (op?.parameters ?? []).filter((p) => p.in === 'query');
  const documented = params.map((p) =>
    fc.option(
      fc
        .oneof({ arbitrary: valueFor(p.name, p.schema ?? {}, world), weight: 8 }, { arbitrary: anyText, weight: 1 })
        .map((v) => [p.name, typeof v === 'string' ? v : (JSON.stringify(v) ?? '')] as [string, string]),
      { nil: null, freq: p.required ? 12 : 2 },
    ),
  );
  const extra = fc.array(fc.tuple(fc.oneof(anyText, fc.constantFrom(...params.map((p) => p.name), 'limit', 'offset')), anyText), { maxLength: 2 });
  return fc.tuple(fc.tuple(...documented), extra).map(([d, e]) => [...d.filter((x): x is [string, string] => x !== null), ...e]);
}

function headersFor(op: Operation | undefined, world: FuzzWorld, opts: { sweep: boolean }): fc.Arbitrary<Record<string, string>> {
  const key = fc.oneof(
    { arbitrary: fc.constant(world.keys[0] ?? ''), weight: 8 },
    { arbitrary: fc.constantFrom(...world.keys), weight: 3 },
    { arbitrary: headerText, weight: 1 },
    { arbitrary: fc.constant(undefined), weight: 1 },
  );
  const user = fc.oneof(
    { arbitrary: fc.constant(world.users[0] ?? ''), weight: 8 },
    { arbitrary: fc.constantFrom(...world.users, ...world.ids), weight: 2 },
    { arbitrary: fc.oneof(fc.uuid(), headerText), weight: 1 },
    { arbitrary: fc.constant(undefined), weight: 1 },
  );
  const idempotency = fc.oneof(
    { arbitrary: fc.uuid(), weight: 6 },
    { arbitrary: headerText, weight: 1 },
    { arbitrary: fc.constant(undefined), weight: 1 },
  );
  const authorization = opts.sweep
    ? fc.oneof(
        fc.constant(`Bearer ${world.sweepSecret}`),
        fc.constant(`bearer ${world.sweepSecret}x`),
        headerText.map((t) => `Bearer ${t}`),
        fc.constant(undefined),
      )
    : fc.option(headerText, { nil: undefined, freq: 4 });
  const documented = (op?.parameters ?? []).filter((p) => p.in === 'header' && !['x-user-id', 'x-idempotency-key'].includes(p.name));
  return fc
    .record({
      key,
      user,
      idempotency,
      authorization,
      contentType: fc.option(contentType, { nil: undefined, freq: 10 }),
      forwarded: fc.option(fc.oneof(fc.ipV4(), fc.ipV6(), headerText, fc.constant('1.1.1.1, 10.0.0.1')), { nil: undefined, freq: 3 }),
      origin: fc.option(fc.oneof(fc.constantFrom('https://evil.example', 'null'), headerText), { nil: undefined, freq: 3 }),
      userAgent: fc.option(fc.oneof(fc.constantFrom('Mozilla/5.0 (X11; Linux x86_64) Firefox/130.0', 'Googlebot/2.1', 'curl/8.0'), headerText), {
        nil: undefined,
        freq: 2,
      }),
      documented: fc.tuple(
        ...documented.map((p) =>
          fc.option(
            headerText.map((v) => [p.name, v] as const),
            { nil: null, freq: 2 },
          ),
        ),
      ),
      extra: fc.array(fc.tuple(headerName, headerText), { maxLength: 2 }),
    })
    .map((h) => {
      const out: Record<string, string> = {};
      for (const [n, v] of h.extra) out[n] = v;
      for (const d of h.documented) if (d) out[d[0]] = d[1];
      const set = (n: string, v: string | undefined) => {
        if (v !== undefined) out[n] = v;
      };
      set('x-access-key', h.key);
      set('x-user-id', h.user);
      set('x-idempotency-key', h.idempotency);
      set('authorization', h.authorization);
      set('content-type', h.contentType);
      set('x-forwarded-for', h.forwarded);
      set('origin', h.origin);
      set('user-agent', h.userAgent);
      return out;
    });
}

/** Requests to one documented path: its own method mostly, the wrong one sometimes. */
export function requestsTo(path: string, method: 'GET' | 'POST', world: FuzzWorld, opts: { sweep?: boolean } = {}): fc.Arbitrary<FuzzRequest> {
  const op = (openapiDocument.paths[path] as Record<string, Operation> | undefined)?.[method.toLowerCase()];
  if (!op) throw new Error(`docs/openapi.json has no ${method} ${path}`);
  const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path');
  const fill = fc.oneof(
    fc.constantFrom('tracker.js', ...world.ids.map((id) => `${id}.js`), '..%2F..%2Fetc%2Fpasswd', '%00.js', 'a.js.map'),
    anyText.map(encodeURIComponent),
  );
  return fc
    .record({
      method: fc.oneof(
        { arbitrary: fc.constant(method), weight: 20 },
        { arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'HEAD'), weight: 1 },
      ),
      file: fill,
      query: queryFor(op, world),
      headers: headersFor(op, world, { sweep: opts.sweep ?? false }),
      body: bodyFor(op, world),
      remoteAddress: fc.oneof(fc.ipV4(), fc.ipV6(), fc.constantFrom('127.0.0.1', '10.0.0.1', '::ffff:203.0.113.9')),
    })
    .map((r) => ({
      method: r.method,
      path: pathParams.length ? path.replace(/\{[^}]+\}/g, r.file) : path,
      query: r.query,
      headers: r.headers,
      // fetch refuses a body on GET and HEAD: those go without one, as a client's would.
      ...(r.body !== undefined && r.method !== 'GET' && r.method !== 'HEAD' ? { body: r.body } : {}),
      remoteAddress: r.remoteAddress,
    }));
}
