import {
  forbiddenAddressClass,
  groupsToBigint,
  ipv4ToNumber,
  isLocalDevClass,
  parseCidr,
  parseCidrList,
  parseCompanyCsv,
  parseIPv4,
  parseIPv6,
  parseIp,
  parseWebhookUrl,
  refusedAddressReason,
} from '@sightline/core';
import fc from 'fast-check';
import { Address4, Address6 } from 'ip-address';
import { describe, expect, it } from 'vitest';
import { dotted } from './support/addresses.ts';

/*
 * The hand-written parsers stay on the hot path (the lookup route, bulk classification, loading the
 * imported layers); `ip-address` is their reference. Every property below draws strings from
 * generators of valid spellings and of near misses and checks that our parser and the library agree
 * on whether the string is an address and, when it is, on its value. Where we differ from the
 * library on purpose, the reference functions below say so in one place, with the reason.
 *
 * fast-check picks a fresh seed each run and prints it with the counterexample on failure, so a
 * failure can be replayed with `{ seed, path }`; the run counts keep the whole file to a few seconds.
 */
const RUNS = 3000;

// ---------------------------------------------------------------------------------------------
// The reference: ip-address, plus our deliberate differences.

/**
 * ip-address's reading of a bare IPv4 address. Address4 also takes a `/prefix` suffix; our address
 * parsers take none (a CIDR is parseCidr's business), so a `/` is not an address here.
 */
function libraryV4(s: string): bigint | null {
  if (s.includes('/')) return null;
  try {
    return new Address4(s).bigInt();
  } catch {
    return null;
  }
}

/** ip-address's reading of a bare IPv6 address, and whether it carried a zone id (`%eth0`). */
function libraryV6(s: string): { value: bigint; zoned: boolean } | null {
  if (s.includes('/')) return null;
  try {
    const a = new Address6(s);
    return { value: a.bigInt(), zoned: a.zone !== '' };
  } catch {
    return null;
  }
}

/**
 * What our IPv6 parser must answer. The one deliberate difference: ip-address accepts a zone id
 * (`fe80::1%eth0`, even an empty `::1%`) and we refuse every `%`. A zone names an interface of the
 * machine that parses it, so it means nothing in a lookup request, Postgres `inet` refuses it (an
 * imported row with one could never be stored), and the webhook guard judges the address without
 * it (see webhook-destination.ts).
 */
function expectedV6(s: string): bigint | null {
  const lib = libraryV6(s);
  return lib && !lib.zoned ? lib.value : null;
}

/**
 * What parseCidr must answer: ip-address's network start and end for an address with an optional
 * prefix. Differences on purpose: parseCidr trims the text (it reads import lines and Postgres
 * `network::text`), and refuses zone ids as above.
 */
function expectedCidr(s: string): { version: 4 | 6; start: bigint; end: bigint } | null {
  const t = s.trim();
  try {
    const a = new Address4(t);
    return { version: 4, start: a.startAddress().bigInt(), end: a.endAddress().bigInt() };
  } catch {
    // not IPv4: try IPv6
  }
  try {
    const a = new Address6(t);
    if (a.zone !== '') return null;
    return { version: 6, start: a.startAddress().bigInt(), end: a.endAddress().bigInt() };
  } catch {
    return null;
  }
}

const ours6 = (s: string): bigint | null => {
  const g = parseIPv6(s);
  return g ? groupsToBigint(g) : null;
};

const oursCidr = (s: string) => {
  const c = parseCidr(s);
  return c ? { version: c.version, start: BigInt(c.start), end: BigInt(c.end) } : null;
};

// ---------------------------------------------------------------------------------------------
// Generators: valid spellings, then near misses of each.

const octet = fc.integer({ min: 0, max: 255 });
/** First octets of the special-purpose ranges come up often, so the class checks get exercised. */
const firstOctet = fc.oneof(octet, fc.constantFrom(0, 10, 100, 127, 169, 172, 192, 198, 203, 224, 240, 255));
const octets = fc.tuple(firstOctet, octet, octet, octet);
const validV4 = octets.map((o) => o.join('.'));

/** An octet spelled the way a sloppy or hostile writer would: leading zeros, out of range, junk. */
const badOctet = fc.oneof(
  octet.map((n) => `0${n}`), // 01, 00, 0255: octal to inet_aton, decimal to others
  fc.integer({ min: 256, max: 99_999 }).map(String),
  fc.constantFrom('', '-1', '+1', '0x7f', ' 1', '1 ', 'a', '1e2', '١', '٣'),
);

const nearMissV4 = fc.oneof(
  fc.tuple(octets, fc.nat(3), badOctet).map(([o, i, bad]) => {
    const parts: string[] = o.map(String);
    parts[i] = bad;
    return parts.join('.');
  }),
  // Too few or too many octets, down to the empty string.
  fc
    .array(octet, { maxLength: 6 })
    .filter((a) => a.length !== 4)
    .map((a) => a.join('.')),
  fc.tuple(validV4, fc.constantFrom('.', ' ', '\n', '\t', '/', ':', '%eth0', '/24')).map(([s, x]) => `${s}${x}`),
  fc.tuple(validV4, fc.constantFrom('.', ' ', '\t', '[', '0')).map(([s, x]) => `${x}${s}`),
  validV4.map((s) => s.replace('.', '..')),
);

const group = fc.integer({ min: 0, max: 0xffff });
const firstGroup = fc.oneof(group, fc.constantFrom(0, 0x64, 0x100, 0x2001, 0x2002, 0xfc00, 0xfd00, 0xfe80, 0xfec0, 0xff02));

/**
 * IPv6 text from eight groups: each group padded to a random width (leading zeros are allowed up to
 * four digits) in a random case, an optional run of groups zeroed and written `::`, and optionally
 * the last two groups written as a dotted quad. Yields the text and the value it must parse to.
 */
const v6Spelling = fc
  .record({
    groups: fc.tuple(firstGroup, fc.array(group, { minLength: 7, maxLength: 7 })).map(([g0, rest]) => [g0, ...rest]),
    widths: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 8, maxLength: 8 }),
    upper: fc.array(fc.boolean(), { minLength: 8, maxLength: 8 }),
    run: fc.option(fc.tuple(fc.nat(7), fc.integer({ min: 1, max: 8 }))),
    v4Tail: fc.boolean(),
  })
  .map(({ groups, widths, upper, run, v4Tail }) => {
    const g = [...groups];
    const words = v4Tail ? 6 : 8; // groups written in hex
    let from = -1;
    let to = -1;
    if (run) {
      from = Math.min(run[0], words - 1);
      to = Math.min(from + run[1], words);
      g.fill(0, from, to);
    }
    const hex = (i: number) => {
      const h = (g[i] ?? 0).toString(16).padStart(widths[i] ?? 1, '0');
      return upper[i] ? h.toUpperCase() : h;
    };
    const hexPart = (a: number, b: number) => Array.from({ length: b - a }, (_, k) => hex(a + k)).join(':');
    const tail = v4Tail ? [(g[6] ?? 0) >> 8, (g[6] ?? 0) & 255, (g[7] ?? 0) >> 8, (g[7] ?? 0) & 255].join('.') : '';
    let text: string;
    if (from < 0) text = [hexPart(0, words), tail].filter(Boolean).join(':');
    else {
      const right = [hexPart(to, words), tail].filter(Boolean).join(':');
      text = `${hexPart(0, from)}::${right}`;
    }
    return { text, value: groupsToBigint(g) };
  });

/** The forms that embed IPv4 and that the SSRF guard has to see through. */
const v4InV6 = fc
  .tuple(fc.constantFrom('::ffff:', '::FFFF:', '0:0:0:0:0:ffff:', '::', '64:ff9b::', '::ffff:0:'), octets)
  .map(([prefix, o]) => `${prefix}${o.join('.')}`);

const validV6 = fc.oneof(
  v6Spelling.map((x) => x.text),
  v4InV6,
  fc.constantFrom('::', '::1', '1::', 'fe80::1'),
);

const zone = fc.stringMatching(/^%[0-9A-Za-z._-]{0,8}$/);
const zonedV6 = fc.tuple(validV6, zone).map(([a, z]) => `${a}${z}`);

const nearMissV6 = fc.oneof(
  // A group out of range: five hex digits (10000 and up).
  fc.tuple(fc.array(group, { minLength: 8, maxLength: 8 }), fc.nat(7), fc.integer({ min: 0x10000, max: 0xfffff })).map(([g, i, big]) => {
    const parts = g.map((x) => x.toString(16));
    parts[i] = big.toString(16);
    return parts.join(':');
  }),
  // Too many or too few groups, with and without `::`.
  fc
    .array(group, { minLength: 0, maxLength: 10 })
    .filter((g) => g.length !== 8)
    .map((g) => g.map((x) => x.toString(16)).join(':')),
  fc
    .array(group, { minLength: 8, maxLength: 9 })
    .chain((g) => fc.nat(g.length).map((i) => [...g.slice(0, i).map((x) => x.toString(16)), '', ...g.slice(i).map((x) => x.toString(16))].join(':'))),
  // Two `::`, `:::`, a lone leading or trailing colon.
  fc.tuple(validV6, fc.constantFrom('::1', '1::', ':', '::', ':::')).map(([s, x]) => `${s}${x}`),
  fc.tuple(validV6, fc.constantFrom('1::', ':', '::', ':::', ' ', '[')).map(([s, x]) => `${x}${s}`),
  fc.tuple(validV6, fc.constantFrom(' ', '\n', ']', 'g', '.', '/', '/64')).map(([s, x]) => `${s}${x}`),
  // A bad IPv4 tail (leading zero, out of range, short), or a dotted quad that is not last.
  fc.tuple(fc.constantFrom('::ffff:', '::', '1:2:3:4:5:6:'), nearMissV4).map(([p, v4]) => `${p}${v4}`),
  fc.tuple(validV4, fc.constantFrom(':1', '::', '::1')).map(([v4, x]) => `::${v4}${x}`),
  fc.tuple(validV4).map(([v4]) => `1:2:3:4:5:6:7:${v4}`),
);

/** Strings from the characters addresses are made of: mostly nonsense, now and then an address. */
const addressNoise = fc.string({ unit: fc.constantFrom(...'0123456789abcdefABCDEF::::....%/ x-'.split('')), maxLength: 46 });

const anyAddressText = fc.oneof(validV4, nearMissV4, validV6, zonedV6, nearMissV6, addressNoise);

// ---------------------------------------------------------------------------------------------

describe('the hand-written parsers agree with ip-address', () => {
  it('parseIPv4 accepts exactly the dotted quads ip-address accepts, with the same value', () => {
    fc.assert(
      fc.property(fc.oneof(validV4, nearMissV4, addressNoise), (s) => {
        const ours = parseIPv4(s);
        expect(ours === null ? null : BigInt(ours)).toBe(libraryV4(s));
      }),
      { numRuns: RUNS },
    );
  });

  it('the branch-light bulk parser (ipv4ToNumber, behind LocalIpData.facts) agrees with ip-address too', () => {
    fc.assert(
      fc.property(fc.oneof(validV4, nearMissV4, addressNoise), (s) => {
        const ours = ipv4ToNumber(s);
        expect(ours < 0 ? null : BigInt(ours)).toBe(libraryV4(s));
      }),
      { numRuns: RUNS },
    );
  });

  it('every spelling of an IPv6 address (padded, compressed, mixed-case, IPv4 tail) parses to its value', () => {
    fc.assert(
      fc.property(v6Spelling, ({ text, value }) => {
        expect(libraryV6(text)?.value).toBe(value);
        expect(ours6(text)).toBe(value);
      }),
      { numRuns: RUNS },
    );
  });

  it('parseIPv6 agrees with ip-address on valid forms and near misses', () => {
    fc.assert(
      fc.property(fc.oneof(validV6, nearMissV6, nearMissV4, addressNoise), (s) => {
        expect(ours6(s)).toBe(expectedV6(s));
      }),
      { numRuns: RUNS },
    );
  });

  it('parseIp picks the family ip-address would and reads the same value', () => {
    fc.assert(
      fc.property(anyAddressText, (s) => {
        const ours = parseIp(s);
        const v4 = libraryV4(s);
        const v6 = expectedV6(s);
        if (v4 !== null) expect(ours).toEqual({ version: 4, value: Number(v4) });
        else if (v6 !== null) expect(ours?.version === 6 ? groupsToBigint(ours.groups) : null).toBe(v6);
        else expect(ours).toBeNull();
      }),
      { numRuns: RUNS },
    );
  });

  const prefix = fc.oneof(
    fc.integer({ min: 0, max: 140 }).map((n) => `/${n}`),
    fc.integer({ min: 0, max: 32 }).map((n) => `/0${n}`),
    fc.constantFrom('', '', '/', '/-1', '/ 8', '/8/9', '/1e1', '/0x8', '//8', '/８'),
  );
  const cidrText = fc
    .tuple(fc.oneof(validV4, nearMissV4, validV6, zonedV6, nearMissV6), prefix, fc.constantFrom('', '', ' ', '\t'))
    .map(([a, p, pad]) => `${pad}${a}${p}${pad}`);

  it('parseCidr (the loader of imported layers) reads the network ip-address reads', () => {
    fc.assert(
      fc.property(cidrText, (s) => {
        expect(oursCidr(s)).toEqual(expectedCidr(s));
      }),
      { numRuns: RUNS },
    );
  });
});

describe('deliberate differences from ip-address', () => {
  it('a zone id is refused although ip-address accepts it', () => {
    fc.assert(
      fc.property(zonedV6, (s) => {
        expect(libraryV6(s)?.zoned).toBe(true);
        expect(parseIPv6(s)).toBeNull();
        expect(parseIp(s)).toBeNull();
        expect(parseCidr(s)).toBeNull();
      }),
      { numRuns: 1000 },
    );
  });

  it('leading zeros are refused by both: 010.0.0.1 is 8.0.0.1 to inet_aton and 10.0.0.1 to others', () => {
    for (const s of ['010.0.0.1', '0177.0.0.1', '127.0.0.01', '00.0.0.0', '::ffff:0127.0.0.1']) {
      expect(libraryV4(s) ?? libraryV6(s)).toBeNull();
      expect(parseIp(s)).toBeNull();
      expect(ipv4ToNumber(s)).toBe(-1);
      expect(parseCidr(s)).toBeNull();
    }
  });
});

// ---------------------------------------------------------------------------------------------

const strict = { allowPrivate: false };
const dev = { allowPrivate: true };

/** The 32-bit value of an IPv4 written the way inet_aton reads it: 1–4 parts, each decimal, octal or hex. */
const atonSpelling = fc
  .record({
    value: fc.oneof(
      fc.integer({ min: 0, max: 0xffffffff }),
      octets.map((o) => ((o[0] << 24) >>> 0) + (o[1] << 16) + (o[2] << 8) + o[3]),
    ),
    parts: fc.integer({ min: 1, max: 4 }),
    radix: fc.array(fc.constantFrom(8, 10, 16), { minLength: 4, maxLength: 4 }),
    pad: fc.array(fc.boolean(), { minLength: 4, maxLength: 4 }),
    trailingDot: fc.boolean(),
  })
  .map(({ value, parts, radix, pad, trailingDot }) => {
    // inet_aton's forms: a (32 bits), a.b (8.24), a.b.c (8.8.16), a.b.c.d (8.8.8.8).
    const widths = [[32], [8, 24], [8, 8, 16], [8, 8, 8, 8]][parts - 1] ?? [32];
    let rest = value;
    const numbers: number[] = [];
    for (let i = widths.length - 1; i >= 0; i--) {
      const w = widths[i] ?? 8;
      const m = 2 ** w;
      numbers.unshift(rest % m);
      rest = Math.floor(rest / m);
    }
    const text = numbers
      .map((n, i) => {
        const r = radix[i] ?? 10;
        if (r === 16) return `0x${pad[i] ? '0' : ''}${n.toString(16)}`;
        if (r === 8) return `0${pad[i] ? '0' : ''}${n.toString(8)}`;
        return n.toString(10);
      })
      .join('.');
    return { text: trailingDot ? `${text}.` : text, value };
  });

describe('the webhook destination check (ip-address on a cold path)', () => {
  it('judges every valid address as the hot-path parser and the class table do', () => {
    fc.assert(
      fc.property(fc.oneof(validV4, validV6), fc.boolean(), (s, allowPrivate) => {
        const parsed = parseIp(s);
        expect(parsed).not.toBeNull();
        if (!parsed) return;
        const cls = forbiddenAddressClass(parsed);
        const refused = refusedAddressReason(s, { allowPrivate });
        const allowed = cls === null || (allowPrivate && isLocalDevClass(cls));
        expect(refused === null).toBe(allowed);
      }),
      { numRuns: RUNS },
    );
  });

  it('judges a resolved address with a zone id by its address, so fe80::1%eth0 is still link-local', () => {
    expect(refusedAddressReason('fe80::1%eth0', strict)).toMatch(/link-local/);
    expect(refusedAddressReason('fe80::1%eth0', dev)).toMatch(/link-local/);
    expect(refusedAddressReason('::1%lo', strict)).toMatch(/loopback/);
    expect(refusedAddressReason('::ffff:169.254.169.254%1', dev)).toMatch(/link-local/);
    fc.assert(
      fc.property(validV6, zone, fc.boolean(), (a, z, allowPrivate) => {
        const policy = { allowPrivate };
        expect(refusedAddressReason(`${a}${z}`, policy) === null).toBe(refusedAddressReason(a, policy) === null);
      }),
      { numRuns: 1000 },
    );
  });

  it('refuses an IPv4 in inet_aton spelling (decimal, octal, hex, short, trailing dot) given unnormalised', () => {
    for (const s of ['2130706433', '0177.0.0.1', '0x7f.1', '0x7f000001', '127.1', '127.0.0.1.', '017700000001', '08.8.8.8']) {
      expect(refusedAddressReason(s, strict), s).toMatch(/not a canonical/);
      expect(refusedAddressReason(s, dev), s).toMatch(/not a canonical/);
    }
    fc.assert(
      fc.property(atonSpelling, ({ text }) => {
        if (parseIPv4(text) !== null) return; // the canonical spelling is judged by its class
        expect(refusedAddressReason(text, dev)).not.toBeNull();
      }),
      { numRuns: RUNS },
    );
  });

  it('a webhook URL with any inet_aton spelling is judged as the address a resolver reads', () => {
    fc.assert(
      fc.property(atonSpelling, fc.boolean(), ({ text, value }, allowPrivate) => {
        const policy = { allowPrivate };
        // WHATWG URL reads the spelling as inet_aton does; this pins the generator to that meaning.
        expect(new URL(`http://${text}/`).hostname).toBe(dotted(value));
        const verdict = (url: string) => {
          try {
            parseWebhookUrl(url, policy);
            return 'allowed';
          } catch (err) {
            return err instanceof Error ? err.message : 'error';
          }
        };
        expect(verdict(`http://${text}/`)).toBe(verdict(`http://${dotted(value)}/`));
      }),
      { numRuns: RUNS },
    );
  });

  it('refuses text that is neither a host name nor an address (fail closed)', () => {
    for (const s of ['::1/128', '1.2.3.4/32', '1::2::3', ' 127.0.0.1', '127.0.0.1 ', '[::1]', '12345::']) {
      expect(refusedAddressReason(s, dev), s).not.toBeNull();
    }
    expect(refusedAddressReason('hooks.example.com', strict)).toBeNull();
    expect(refusedAddressReason('8.8.8.8', strict)).toBeNull();
    expect(refusedAddressReason('2606:4700::1111', strict)).toBeNull();
  });
});

describe('the importers (ip-address on a cold path)', () => {
  it('keep exactly the lines the loader (parseCidr) can read back, so no stored row is lost on load', () => {
    const line = fc
      .tuple(
        fc.oneof(validV4, nearMissV4, validV6, zonedV6, nearMissV6),
        fc.oneof(
          fc.integer({ min: 0, max: 130 }).map((n) => `/${n}`),
          fc.constantFrom('', '/', '/08', '/-1'),
        ),
      )
      .map(([a, p]) => `${a}${p}`)
      .filter((s) => !s.includes('#') && !/[\r\n]/.test(s) && !s.includes(','));
    fc.assert(
      fc.property(line, (s) => {
        const readable = parseCidr(s) !== null;
        const list = parseCidrList(s);
        // A line that trims to nothing is skipped, not counted.
        if (s.trim() === '') expect(list.read).toBe(0);
        else expect(list.kept).toBe(readable ? 1 : 0);
        const csv = parseCompanyCsv(`${s},acme.example,Acme`);
        expect(csv.kept).toBe(readable ? 1 : 0);
      }),
      { numRuns: RUNS },
    );
  });

  it('refuse a zone id, and keep a network written with host bits set (Postgres network() clears them)', () => {
    const r = parseCidrList('fe80::1%eth0/64\nfe80::%1\n10.1.2.3/8\n');
    expect(r).toMatchObject({ read: 3, kept: 1, rejectedSamples: ['fe80::1%eth0/64', 'fe80::%1'] });
    expect(r.rows).toEqual([{ cidr: '10.1.2.3/8', provider: null }]);
  });
});
