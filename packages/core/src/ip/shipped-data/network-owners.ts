import type { AsnBase } from '../local-data.ts';
import { Ipv4Index, Ipv6Index } from '../ranges.ts';

/**
 * The network owners of the @ip-location-db/asn package, parsed from its numeric CSVs
 * (`asn-ipv4-num.csv`, `asn-ipv6-num.csv`). Runtime-free: the host opens the files (`OpenFile`) and
 * this reads them, so every host parses them alike.
 */

/** An open file read in pieces into the caller's buffer, as a file handle reads. */
export interface FileReader {
  /** For error messages. */
  readonly name: string;
  /** Reads up to `length` bytes into `into` at `offset`; answers how many (0 at the end). */
  read(into: Uint8Array, offset: number, length: number): Promise<number>;
  close(): Promise<void>;
}

export type OpenFile = () => Promise<FileReader>;

/** The package's two numeric CSVs. */
export interface NetworkOwnerFiles {
  v4: OpenFile;
  v6: OpenFile;
}

/**
 * Calls `row` for each line of a file read in 1 MiB pieces through one reused buffer. Reading the
 * 21 MB table whole held it beside everything built from it, and freeing such a block raises
 * glibc's mmap threshold, so later large buffers stayed in the process's heap after they were freed.
 */
async function eachLine(open: OpenFile, row: (buf: Uint8Array, start: number, end: number) => void): Promise<void> {
  const file = await open();
  try {
    const buf = new Uint8Array(1 << 20);
    let kept = 0;
    for (;;) {
      const bytesRead = await file.read(buf, kept, buf.length - kept);
      const filled = kept + bytesRead;
      let pos = 0;
      for (let nl = buf.indexOf(10, pos); nl >= 0 && nl < filled; nl = buf.indexOf(10, pos)) {
        row(buf, pos, buf[nl - 1] === 13 ? nl - 1 : nl);
        pos = nl + 1;
      }
      if (bytesRead === 0) {
        if (pos < filled) row(buf, pos, filled);
        return;
      }
      if (pos === 0 && filled === buf.length) throw new Error(`${file.name}: a line longer than ${buf.length} bytes`);
      buf.copyWithin(0, pos, filled);
      kept = filled - pos;
    }
  } finally {
    await file.close();
  }
}

/** The decimal number in buf[from, to), or NaN; no string is made. */
function decimalAt(buf: Uint8Array, from: number, to: number): number {
  if (from >= to) return Number.NaN;
  let n = 0;
  for (let i = from; i < to; i++) {
    const d = (buf[i] as number) - 48;
    if (d < 0 || d > 9) return Number.NaN;
    n = n * 10 + d;
  }
  return n;
}

/**
 * Reads the @ip-location-db/asn numeric CSVs (`start,end,asn,name`; names quoted when they hold a
 * comma) straight into typed arrays sized by a first counting pass: no per-row objects, no string
 * for an IPv4 row whose owner is already known, one string per distinct owner.
 */
export async function parseNetworkOwners(files: NetworkOwnerFiles): Promise<Omit<AsnBase, 'ranges'>> {
  const asns: number[] = [];
  const names: string[] = [];
  // ASN → its first owner; the rare ASN seen under a second name chains through `sameAsn`.
  const firstOwner = new Map<number, number>();
  const sameAsn: number[] = [];
  const ownerOf = (asn: number, buf: Uint8Array, from: number, to: number) => {
    let i = firstOwner.get(asn);
    const quoted = buf[from] === 34;
    let name: string | undefined;
    for (let j = i; j !== undefined && j >= 0; j = sameAsn[j]) {
      const candidate = names[j] as string;
      // Unquoted ASCII names compare byte for byte without decoding.
      if (!quoted && candidate.length === to - from && bytesEqual(buf, from, candidate)) return j;
      name ??= nameAt(buf, from, to);
      if (candidate === name) return j;
    }
    name ??= nameAt(buf, from, to);
    const added = names.push(name) - 1;
    asns.push(asn);
    sameAsn.push(-1);
    if (i === undefined) firstOwner.set(asn, added);
    else {
      while ((sameAsn[i] as number) >= 0) i = sameAsn[i] as number;
      sameAsn[i] = added;
    }
    return added;
  };
  // The three commas of `start,end,asn,name`, kept here rather than returned, so a row allocates nothing.
  let c1 = 0;
  let c2 = 0;
  let c3 = 0;
  const commas = (buf: Uint8Array, start: number, end: number) => {
    c1 = buf.indexOf(44, start);
    c2 = c1 < 0 ? -1 : buf.indexOf(44, c1 + 1);
    c3 = c2 < 0 ? -1 : buf.indexOf(44, c2 + 1);
    return c1 > start && c3 > 0 && c3 < end;
  };
  const count = async (file: OpenFile) => {
    let n = 0;
    await eachLine(file, () => void n++);
    return n;
  };

  const v4File = files.v4;
  const cap = await count(v4File);
  const starts = new Uint32Array(cap);
  const ends = new Uint32Array(cap);
  const values = new Int32Array(cap);
  let n = 0;
  await eachLine(v4File, (buf, start, end) => {
    if (!commas(buf, start, end)) return;
    const lo = decimalAt(buf, start, c1);
    const hi = decimalAt(buf, c1 + 1, c2);
    const asn = decimalAt(buf, c2 + 1, c3);
    if (!(lo <= hi) || Number.isNaN(asn)) return;
    starts[n] = lo;
    ends[n] = hi;
    values[n++] = ownerOf(asn, buf, c3 + 1, end);
  });
  const asn4 = Ipv4Index.fromSorted(starts, ends, values, n);

  const v6File = files.v6;
  const six = Ipv6Index.sortedBuilder(await count(v6File));
  const lo6 = new Uint32Array(4);
  const hi6 = new Uint32Array(4);
  await eachLine(v6File, (buf, start, end) => {
    if (!commas(buf, start, end)) return;
    const asn = decimalAt(buf, c2 + 1, c3);
    if (Number.isNaN(asn) || !wordsAt(buf, start, c1, lo6) || !wordsAt(buf, c1 + 1, c2, hi6)) return;
    six.pushWords(lo6, hi6, ownerOf(asn, buf, c3 + 1, end));
  });
  return { owners: { asns: Int32Array.from(asns), names }, asn4, asn6: six.done() };
}

/**
 * The decimal number in buf[from, to) as a 128-bit value in four 32-bit words, most significant
 * first (no bigint per row); false if it is not a number below 2^128.
 */
function wordsAt(buf: Uint8Array, from: number, to: number, into: Uint32Array): boolean {
  if (from >= to) return false;
  into.fill(0);
  for (let i = from; i < to; i++) {
    let carry = (buf[i] as number) - 48;
    if (carry < 0 || carry > 9) return false;
    for (let k = 3; k >= 0; k--) {
      const v = (into[k] as number) * 10 + carry; // < 2^36: exact in a double
      into[k] = v % 4294967296;
      carry = Math.floor(v / 4294967296);
    }
    if (carry !== 0) return false;
  }
  return true;
}

/** Whether buf[from...] holds `text` as ASCII; any non-ASCII byte says no (the caller decodes). */
function bytesEqual(buf: Uint8Array, from: number, text: string): boolean {
  for (let k = 0; k < text.length; k++) {
    const b = buf[from + k] as number;
    if (b > 127 || b !== text.charCodeAt(k)) return false;
  }
  return true;
}

/** Decodes names as Buffer's toString did: invalid bytes become U+FFFD, and a leading BOM is kept. */
const UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

function nameAt(buf: Uint8Array, from: number, to: number): string {
  const name = UTF8.decode(buf.subarray(from, to));
  return name.startsWith('"') ? name.slice(1, -1).replaceAll('""', '"') : name;
}
