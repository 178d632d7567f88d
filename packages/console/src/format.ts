/** Numbers and dates in the browser's locale. */
const numbers = new Intl.NumberFormat();
const dates = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });
const days = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium' });
const utcDays = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeZone: 'UTC' });

export const num = (n: number | null | undefined): string => (n === null || n === undefined ? '—' : numbers.format(n));
export const when = (iso: string | null | undefined): string => (iso ? dates.format(new Date(iso)) : '—');
export const day = (iso: string | null | undefined): string => (iso ? days.format(new Date(iso)) : '—');
/** A UTC calendar day (`YYYY-MM-DD`), as the API counts days. */
export const utcDay = (ymd: string | undefined): string => (ymd ? utcDays.format(new Date(`${ymd}T00:00:00Z`)) : '—');

export function duration(seconds: number): string {
  if (seconds < 60) return `${numbers.format(seconds)} s`;
  const m = Math.floor(seconds / 60);
  const s = seconds % 60;
  return s ? `${numbers.format(m)} min ${s} s` : `${numbers.format(m)} min`;
}
