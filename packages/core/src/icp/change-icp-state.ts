import type { VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';
import type { Icp, IcpStateAction } from './schemas.ts';

/**
 * One review or activation action on an ICP of the account, as `sl_icp_action` decides it (the
 * transitions table in docs/decisions/icp.md): approve, reject, activate, pause, regenerate. Asking
 * for the state the ICP is in already changes nothing and answers the ICP; a refused transition is a
 * 409 naming the state; an unknown ICP a 404, another account's a 403. Activation queues the
 * scoring of the account's identifications against it (score-identifications.ts, the backfill).
 */
export async function changeIcpState({ ctx, input }: VerbArgs<{ accountId: string; icpId: string; action: IcpStateAction }>): Promise<Icp> {
  const [row] = await sqlCall(
    () => ctx.db<{ icp: Icp }>`select sl_icp_action(${input.accountId}::uuid, ${input.icpId}::uuid, ${input.action}) as icp`,
    { 429: 'generation_limit' },
  );
  if (!row) throw new Error('sl_icp_action returned no row');
  return row.icp;
}
