import { getDomain } from 'tldts';
import { badRequest } from '../kernel/errors.ts';

const LABEL = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
const TLD = /^([a-z]{2,63}|xn--[a-z0-9-]{1,59})$/;

/**
 * A tracker domain is a bare `host.tld`: no scheme, port, path, query, credentials or wildcard.
 * Case is folded (DNS is case-insensitive) and one trailing dot is tolerated; anything else is a
 * 400 that says what is wrong. The same shape is a CHECK constraint on websites.domain.
 *
 * It is also never a public suffix (`co.uk`, `github.io`; the Public Suffix List with its private
 * section, shipped in `tldts`): a tracker or an allowed domain covers its subdomains, so a suffix
 * would accept pages of every site registered under it.
 */
export function normaliseTrackerDomain(raw: string, field = 'domain'): string {
  const value = raw.trim().toLowerCase();
  if (!value) throw badRequest(`${field} is required`);
  if (/^[a-z][a-z0-9+.-]*:\/\//.test(value)) throw badRequest(`${field} must be a bare host like example.com, without a scheme`);
  if (/[/?#@:\s*]/.test(value)) throw badRequest(`${field} must be a bare host like example.com, without port, path or query`);
  const host = value.endsWith('.') ? value.slice(0, -1) : value;
  if (host.length > 253) throw badRequest(`${field} is longer than 253 characters`);
  const labels = host.split('.');
  const tld = labels[labels.length - 1] ?? '';
  if (labels.length < 2 || !labels.every((l) => LABEL.test(l)) || !TLD.test(tld)) {
    throw badRequest(`${field} must be a bare host like example.com`);
  }
  if (getDomain(host, { allowPrivateDomains: true }) === null) {
    throw badRequest(`${field} is a public suffix (like co.uk): give the registered domain, e.g. example.${host}`);
  }
  return host;
}
