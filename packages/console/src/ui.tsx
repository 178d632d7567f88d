import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { ApiError } from './api.ts';
import { num } from './format.ts';

/** The API's own words for a failure, in a live region so a screen reader hears it. */
export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  const message = error instanceof ApiError ? error.message : error instanceof Error ? error.message : String(error);
  return (
    <p class="error" role="alert">
      {message}
    </p>
  );
}

export function Notice({ children }: { children: ComponentChildren }) {
  return (
    <p class="notice" role="status">
      {children}
    </p>
  );
}

/** A secret shown once: its value, a copy button, and nothing that keeps it after the page moves on. */
export function Secret({ label, value }: { label: string; value: string }) {
  const [copied, setCopied] = useState(false);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(value);
      setCopied(true);
    } catch {
      setCopied(false);
    }
  };
  return (
    <div class="secret">
      <span class="secret-label">{label}</span>
      <code data-secret={label}>{value}</code>
      <button type="button" onClick={copy} aria-label={`Copy ${label}`}>
        {copied ? 'Copied' : 'Copy'}
      </button>
    </div>
  );
}

export function ShownOnce({ children }: { children: ComponentChildren }) {
  return (
    <section class="once" aria-label="Shown once">
      <p class="warning">
        <strong>Copy these now.</strong> They will not be shown again: only a hash is kept.
      </p>
      {children}
    </section>
  );
}

/** Used against allowed, as a bar with its numbers beside it (a meter has its own accessible value). */
export function UsageBar({ used, of, label }: { used: number; of: number; label: string }) {
  return (
    <span class="usage">
      <meter min={0} max={Math.max(of, 1)} value={Math.min(used, Math.max(of, 1))} aria-label={label} />
      <span>
        {num(used)} / {num(of)}
      </span>
    </span>
  );
}

/** A half-circle gauge in plain SVG: used of the quota, the rest available. */
export function Gauge({ used, quota, label }: { used: number; quota: number; label: string }) {
  const share = quota > 0 ? Math.min(used / quota, 1) : used > 0 ? 1 : 0;
  const angle = Math.PI * (1 - share);
  const x = 60 + 50 * Math.cos(angle);
  const y = 60 - 50 * Math.sin(angle);
  const arc = share > 0 ? `M10 60 A50 50 0 0 1 ${x.toFixed(2)} ${y.toFixed(2)}` : '';
  return (
    <svg class="gauge" viewBox="0 0 120 70" role="img" aria-label={label}>
      <path d="M10 60 A50 50 0 0 1 110 60" class="gauge-track" />
      {arc && <path d={arc} class="gauge-fill" />}
      <text x="60" y="56" text-anchor="middle" class="gauge-text">
        {Math.round(share * 100)}%
      </text>
    </svg>
  );
}

/** A table that scrolls sideways on a narrow screen, reachable by keyboard. */
export function TableWrap({ label, children }: { label: string; children: ComponentChildren }) {
  return (
    // biome-ignore lint/a11y/noNoninteractiveTabindex: a scrolling region must be focusable to scroll by keyboard
    <section class="table-wrap" aria-label={label} tabIndex={0}>
      {children}
    </section>
  );
}

/** Two-step confirmation for an action that cannot be undone. */
export function ConfirmButton({
  label,
  confirmLabel,
  onConfirm,
  busy,
}: {
  label: string;
  confirmLabel: string;
  onConfirm: () => void;
  busy?: boolean;
}) {
  const [asking, setAsking] = useState(false);
  if (!asking)
    return (
      <button type="button" class="danger" onClick={() => setAsking(true)} disabled={busy}>
        {label}
      </button>
    );
  return (
    <span class="confirm">
      <button
        type="button"
        class="danger"
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
      >
        {confirmLabel}
      </button>
      <button type="button" onClick={() => setAsking(false)}>
        Cancel
      </button>
    </span>
  );
}

export function Pager({ offset, pageSize, total, onPage }: { offset: number; pageSize: number; total: number; onPage: (offset: number) => void }) {
  const last = Math.min(offset + pageSize, total);
  return (
    <nav class="pager" aria-label="Pages">
      <button type="button" onClick={() => onPage(Math.max(0, offset - pageSize))} disabled={offset === 0}>
        Previous
      </button>
      <span>{total === 0 ? 'None' : `${num(offset + 1)}–${num(last)} of ${num(total)}`}</span>
      <button type="button" onClick={() => onPage(offset + pageSize)} disabled={last >= total}>
        Next
      </button>
    </nav>
  );
}

/** The tracker's install snippet for a website. */
export function snippetFor(root: string, trackingScriptId: string): string {
  return `<script async src="${root}t/${trackingScriptId}.js"></script>`;
}
