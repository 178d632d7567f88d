import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { lookupAddress, reverseLookupName } from '@sightline/core/ip/reverse-dns/index';

/** What the test zone holds: PTR names by address, A and AAAA addresses by name. */
export interface DnsZone {
  ptr?: Record<string, string[]>;
  a?: Record<string, string[]>;
  aaaa?: Record<string, string[]>;
}

/** `answer` (the zone), `silent` (every query is received and none answered), `servfail`. */
export type DnsServerMode = 'answer' | 'silent' | 'servfail';

export interface ReceivedQuery {
  name: string;
  type: string;
}

const TYPE_CODE = { A: 1, PTR: 12, AAAA: 28 } as const;
const TYPE_NAME = new Map<number, string>(Object.entries(TYPE_CODE).map(([k, v]) => [v, k]));
const CLASS_IN = 1;
const RCODE = { noError: 0, serverFailure: 2, nameError: 3, notImplemented: 4 } as const;

/**
 * A real DNS server on 127.0.0.1 (UDP, a random port) answering from a table, for the reverse-DNS
 * tests: we own the protocol's use, so it runs for real rather than being mocked. The wire format
 * is RFC 1035's (§4.1), written here: a header, one question, answers pointing back at the
 * question's name. Every query is recorded, so a test can prove a cache hit asked nothing.
 */
export async function startDnsServer(zone: DnsZone, mode: DnsServerMode = 'answer') {
  const records = new Map<string, { type: number; data: Buffer }[]>();
  const add = (name: string, type: number, data: Buffer) => {
    const key = name.toLowerCase().replace(/\.$/, '');
    records.set(key, [...(records.get(key) ?? []), { type, data }]);
  };
  for (const [ip, names] of Object.entries(zone.ptr ?? {})) {
    const address = lookupAddress(ip);
    if (!address) throw new Error(`test zone: ${ip} is not an address`);
    for (const name of names) add(reverseLookupName(address), TYPE_CODE.PTR, encodeName(name));
  }
  for (const [name, list] of Object.entries(zone.a ?? {})) for (const ip of list) add(name, TYPE_CODE.A, encodeAddress(ip, 4));
  for (const [name, list] of Object.entries(zone.aaaa ?? {})) for (const ip of list) add(name, TYPE_CODE.AAAA, encodeAddress(ip, 6));

  const queries: ReceivedQuery[] = [];
  let current = mode;
  const socket = dgram.createSocket('udp4');
  socket.on('message', (message, peer) => {
    const query = decodeQuery(message);
    if (!query) return;
    queries.push({ name: query.name, type: TYPE_NAME.get(query.type) ?? String(query.type) });
    if (current === 'silent') return;
    let rcode: number = RCODE.noError;
    let answers: Buffer[] = [];
    if (current === 'servfail') rcode = RCODE.serverFailure;
    else if (query.opcode !== 0) rcode = RCODE.notImplemented;
    else {
      const held = records.get(query.name.toLowerCase());
      if (!held) rcode = RCODE.nameError;
      else answers = held.filter((r) => r.type === query.type && query.class === CLASS_IN).map((r) => encodeAnswer(r.type, r.data));
    }
    socket.send(encodeResponse(message, query, rcode, answers), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    port,
    /** As DNS_SERVERS writes it. */
    server: `127.0.0.1:${port}`,
    queries,
    setMode: (next: DnsServerMode) => {
      current = next;
    },
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

interface DecodedQuery {
  id: number;
  opcode: number;
  recursionDesired: boolean;
  name: string;
  type: number;
  class: number;
  /** Where the question section ends: the response repeats it byte for byte. */
  questionEnd: number;
}

/** The header and first question of a query (RFC 1035 §4.1.1–4.1.2), or null for anything else. */
export function decodeQuery(message: Buffer): DecodedQuery | null {
  if (message.length < 12) return null;
  const flags = message.readUInt16BE(2);
  if (flags & 0x8000 || message.readUInt16BE(4) < 1) return null; // a response, or no question
  const labels: string[] = [];
  let offset = 12;
  for (;;) {
    const length = message[offset];
    if (length === undefined || length > 63) return null; // truncated, or a pointer (never in a question we send)
    offset += 1;
    if (length === 0) break;
    if (offset + length > message.length) return null;
    labels.push(message.toString('latin1', offset, offset + length));
    offset += length;
  }
  if (offset + 4 > message.length) return null;
  return {
    id: message.readUInt16BE(0),
    opcode: (flags >> 11) & 0xf,
    recursionDesired: (flags & 0x0100) !== 0,
    name: labels.join('.'),
    type: message.readUInt16BE(offset),
    class: message.readUInt16BE(offset + 2),
    questionEnd: offset + 4,
  };
}

function encodeResponse(message: Buffer, query: DecodedQuery, rcode: number, answers: Buffer[]): Buffer {
  const header = Buffer.alloc(12);
  header.writeUInt16BE(query.id, 0);
  // QR=1, the query's opcode, AA=1, RD as asked, RA=1, the rcode.
  header.writeUInt16BE(0x8000 | (query.opcode << 11) | 0x0400 | (query.recursionDesired ? 0x0100 : 0) | 0x0080 | rcode, 2);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(answers.length, 6);
  return Buffer.concat([header, message.subarray(12, query.questionEnd), ...answers]);
}

/** One resource record for the question's name: a compression pointer to offset 12 (§4.1.4). */
function encodeAnswer(type: number, data: Buffer): Buffer {
  const head = Buffer.alloc(12);
  head.writeUInt16BE(0xc00c, 0);
  head.writeUInt16BE(type, 2);
  head.writeUInt16BE(CLASS_IN, 4);
  head.writeUInt32BE(300, 6);
  head.writeUInt16BE(data.length, 10);
  return Buffer.concat([head, data]);
}

/** A domain name as length-prefixed labels ending with the root's zero (§3.1). */
export function encodeName(name: string): Buffer {
  const labels = name.replace(/\.$/, '').split('.');
  return Buffer.concat([...labels.map((l) => Buffer.concat([Buffer.from([l.length]), Buffer.from(l, 'latin1')])), Buffer.from([0])]);
}

function encodeAddress(ip: string, version: 4 | 6): Buffer {
  const address = lookupAddress(ip);
  if (!address || address.version !== version) throw new Error(`test zone: ${ip} is not an IPv${version} address`);
  if (address.version === 4) {
    const out = Buffer.alloc(4);
    out.writeUInt32BE(address.value, 0);
    return out;
  }
  const out = Buffer.alloc(16);
  address.groups.forEach((g, i) => {
    out.writeUInt16BE(g, i * 2);
  });
  return out;
}
