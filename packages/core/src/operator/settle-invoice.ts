import type { VerbArgs } from '../kernel/context.ts';
import { notFound } from '../kernel/errors.ts';

/** Marks an outstanding invoice paid. */
export async function settleInvoice({ ctx, input }: VerbArgs<{ invoiceId: string }>) {
  const [row] = await ctx.db<{ id: string; status: string }>`
    update invoices set status = 'paid', settled_at = now()
    where id::text = ${input.invoiceId} and status = 'outstanding'
    returning id, status`;
  if (!row) throw notFound(`no outstanding invoice ${input.invoiceId}`);
  return { invoice_id: row.id, status: row.status };
}
