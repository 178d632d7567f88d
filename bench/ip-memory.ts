// Module paths rather than the packages' entry points, which would bring the whole service along.
import { LocalIpData } from '@sightline/core/ip/local-data';
import { openCountryReader, readAsnBase } from '../packages/host/src/ip-base.ts';

/**
 * The memory probe of `npm run bench -- ip`, bundled and run with plain node in its own process:
 * loads every piece of local IP data the way the server does (the owners, range lists and IPv4
 * country table merged into one table, and the country reader IPv6 lookups ask), and reports its
 * resident set before and after. No forced GC: the figure is what a process holds.
 */
const rss = () => process.memoryUsage().rss;
const before = rss();
const started = performance.now();
const data = LocalIpData.fromBase(await readAsnBase());
const country = await openCountryReader();
const loadMs = performance.now() - started;
// Proves the data is really there (and keeps it reachable until the measurement).
const answer = data.facts('8.8.8.8', (ip) => country.get(ip)?.country_code ?? null);
const probe = { traffic_type: answer?.traffic_type ?? null, country_code: answer?.country_code ?? null };
process.stdout.write(`${JSON.stringify({ before, after: rss(), loadMs, probe })}\n`);
