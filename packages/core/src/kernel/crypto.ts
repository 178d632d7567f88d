/**
 * Keys, hashes and sealed secrets, on WebCrypto so Node and Deno behave the same.
 *
 * API key format (GitHub-style): `sl_` + 32 base62 characters of randomness (≈190 bits) +
 * 6 base62 characters of CRC-32 over the random part. The checksum lets us reject typos and
 * garbage before any database lookup. Only HMAC-SHA-256(pepper, key) is stored.
 */
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const KEY_PREFIX = 'sl_';
const KEY_RANDOM_CHARS = 32;
const KEY_CHECKSUM_CHARS = 6;
/** Characters of the key kept as `key_prefix` for display. */
export const KEY_PREFIX_LENGTH = 11;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${KEY_RANDOM_CHARS + KEY_CHECKSUM_CHARS}}$`);

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Uniform random base62 string (rejection sampling: bytes ≥ 248 are discarded to avoid bias). */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const b of bytes) {
      if (b < 248 && out.length < length) out += BASE62[b % 62];
    }
  }
  return out;
}

let crcTable: Uint32Array | undefined;
function crc32(data: Uint8Array): number {
  if (!crcTable) {
    crcTable = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      crcTable[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (const byte of data) crc = (crcTable[(crc ^ byte) & 0xff] ?? 0) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

function checksum(randomPart: string): string {
  let n = crc32(encoder.encode(randomPart));
  let out = '';
  for (let i = 0; i < KEY_CHECKSUM_CHARS; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function generateApiKey(): string {
  const random = randomBase62(KEY_RANDOM_CHARS);
  return `${KEY_PREFIX}${random}${checksum(random)}`;
}

/** Shape and checksum only; says nothing about whether the key exists. */
export function isWellFormedApiKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const body = key.slice(KEY_PREFIX.length);
  const random = body.slice(0, KEY_RANDOM_CHARS);
  return body.slice(KEY_RANDOM_CHARS) === checksum(random);
}

export function keyPrefixOf(key: string): string {
  return key.slice(0, KEY_PREFIX_LENGTH);
}

/** A fresh webhook signing secret. */
export function mintWebhookSecret(): string {
  return `whsec_${randomBase62(40)}`;
}

function toHex(buf: ArrayBuffer): string {
  return Array.from(new Uint8Array(buf), (b) => b.toString(16).padStart(2, '0')).join('');
}

function toBase64Url(bytes: Uint8Array): string {
  let s = '';
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
}

function fromBase64Url(s: string): Uint8Array<ArrayBuffer> {
  const bin = atob(s.replaceAll('-', '+').replaceAll('_', '/'));
  const out = new Uint8Array(bin.length);
  for (let i = 0; i < bin.length; i++) out[i] = bin.charCodeAt(i);
  return out;
}

/** Hex HMAC-SHA-256 of `message` keyed with the UTF-8 bytes of `secret`. */
export async function hmacSha256Hex(secret: string, message: string | Uint8Array<ArrayBuffer>): Promise<string> {
  const key = await crypto.subtle.importKey('raw', encoder.encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  const data = typeof message === 'string' ? encoder.encode(message) : message;
  return toHex(await crypto.subtle.sign('HMAC', key, data));
}

/**
 * Everything derived from the one server secret: the API-key pepper and the key that seals
 * webhook secrets at rest. Built once at the edge from `SIGHTLINE_SECRET` (or the generated
 * data-directory secret) and injected.
 */
export interface Keyring {
  hashApiKey(key: string): Promise<string>;
  seal(plaintext: string): Promise<string>;
  open(sealed: string): Promise<string>;
}

/**
 * A synchronous HMAC-SHA-256 (hex) the host may supply: WebCrypto's sign costs ~30 µs of CPU per
 * call through its async machinery, Node's createHmac ~3 µs, and every request hashes its key.
 * Both produce the same bytes (a test pins that), so keys work across runtimes.
 */
export type HmacSha256Hex = (key: Uint8Array, message: string) => string;

export async function createKeyring(serverSecret: string, opts: { hmacSha256Hex?: HmacSha256Hex } = {}): Promise<Keyring> {
  if (serverSecret.length < 32) throw new Error('the server secret must be at least 32 characters');
  const master = await crypto.subtle.importKey('raw', encoder.encode(serverSecret), 'HKDF', false, ['deriveKey', 'deriveBits']);
  const salt = encoder.encode('sightline/v1');
  const pepperParams = { name: 'HKDF', hash: 'SHA-256', salt, info: encoder.encode('api-key-pepper') };
  const pepper = await crypto.subtle.deriveKey(pepperParams, master, { name: 'HMAC', hash: 'SHA-256', length: 256 }, false, ['sign']);
  const fastHmac = opts.hmacSha256Hex;
  const pepperBytes = fastHmac ? new Uint8Array(await crypto.subtle.deriveBits(pepperParams, master, 256)) : undefined;
  const sealKey = await crypto.subtle.deriveKey(
    { name: 'HKDF', hash: 'SHA-256', salt, info: encoder.encode('secret-seal') },
    master,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  );
  return {
    async hashApiKey(key) {
      if (fastHmac && pepperBytes) return fastHmac(pepperBytes, key);
      return toHex(await crypto.subtle.sign('HMAC', pepper, encoder.encode(key)));
    },
    async seal(plaintext) {
      const iv = crypto.getRandomValues(new Uint8Array(12));
      const ct = await crypto.subtle.encrypt({ name: 'AES-GCM', iv }, sealKey, encoder.encode(plaintext));
      return `v1.${toBase64Url(iv)}.${toBase64Url(new Uint8Array(ct))}`;
    },
    async open(sealed) {
      const [version, iv, ct] = sealed.split('.');
      if (version !== 'v1' || !iv || !ct) throw new Error('unrecognised sealed secret');
      const pt = await crypto.subtle.decrypt({ name: 'AES-GCM', iv: fromBase64Url(iv) }, sealKey, fromBase64Url(ct));
      return decoder.decode(pt);
    },
  };
}
