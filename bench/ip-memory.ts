// Module paths rather than the packages' entry points, which would bring the whole service along.
import { LocalIpData } from '@sightline/core/ip/local-data';
import { openCountryReader, readAsnBase } from '../packages/host/src/ip-base.ts';

/**
 * The memory probe of `npm run bench -- ip`, bundled and run with plain node in its own process:
 * loads every piece of local IP data the way the server does, plus the bulk-classification table,
 * and reports its resident set before and after. No forced GC: the figure is what a process holds.
 */
const rss = () => process.memoryUsage().rss;
const before = rss();
const started = performance.now();
const data = LocalIpData.fromBase(await readAsnBase());
const country = await openCountryReader();
data.classifyV4('192.0.2.1');
const loadMs = performance.now() - started;
// Proves the data is really there (and keeps it reachable until the measurement).
const probe = { '8.8.8.8': data.classifyV4('8.8.8.8'), country: country.get('8.8.8.8')?.country_code ?? null };
process.stdout.write(`${JSON.stringify({ before, after: rss(), loadMs, probe })}\n`);
