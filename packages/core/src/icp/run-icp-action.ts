import { beginIdempotentRequest, releaseIdempotentRequest } from '../account/idempotent-request.ts';
import { startAfterWork } from '../kernel/after-work.ts';
import type { ConnectedUserCaller, CoreDeps, VerbArgs } from '../kernel/context.ts';
import { AppError } from '../kernel/errors.ts';
import { changeIcpState } from './change-icp-state.ts';
import { createIcp } from './create-icp.ts';
import { createProduct } from './create-product.ts';
import { deleteIcp } from './delete-icp.ts';
import { listIcps } from './list-icps.ts';
import { listProducts } from './list-products.ts';
import type { IcpActionRequest } from './schemas.ts';
import { updateProduct } from './update-product.ts';

/** How long a request holds its idempotency key before a repeat may take the work over. */
const IDEMPOTENCY_LEASE_MS = 60_000;

/** An answer of api-icp-action: its status and its JSON body as text (a stored one is sent as it was stored). */
export interface IcpActionAnswer {
  status: number;
  body: string;
}

type MutatingRequest = Exclude<IcpActionRequest, { action: 'list_icps' | 'list_products' }>;

const written = (status: number, result: object): IcpActionAnswer => ({ status, body: JSON.stringify({ success: true, ...result }) });

/**
 * api-icp-action: one verb per action, behind the account's x-idempotency-key. The reads (list_icps,
 * list_products) change nothing and bypass the key store: a repeat reads again. Every other action
 * takes the key first (`api-icp-action:<action>`, the user and the parsed body as its fingerprint):
 * a repeat while the first is at work answers 202 processing, a repeat after it the stored answer
 * as it was stored, the same key with another request 422. The action and its stored answer commit
 * in one transaction, the answer being the very text sent, so a key never holds an answer for work
 * that did not happen, nor work without its answer, and a repeat answers the same bytes. A refusal
 * (404, 403, 409, the plan limit, 429 past the hourly allowance of ICP generations) rolled back
 * everything, and the key is given back so the fixed request may reuse it.
 */
export async function runIcpAction({
  ctx,
  input,
}: VerbArgs<{ caller: ConnectedUserCaller; request: IcpActionRequest }, CoreDeps>): Promise<IcpActionAnswer> {
  const accountId = input.caller.key.accountId;
  const request = input.request;
  if (request.action === 'list_icps') return written(200, { data: await listIcps({ ctx, input: { accountId } }) });
  if (request.action === 'list_products') return written(200, { data: await listProducts({ ctx, input: { accountId } }) });

  const key = input.caller.idempotencyKey;
  // The policy requires the header; a caller without one is a wiring mistake, not a client's.
  if (!key) throw new Error('api-icp-action ran without an idempotency key');
  const start = await beginIdempotentRequest({
    ctx,
    input: {
      accountId,
      key,
      operation: `api-icp-action:${request.action}`,
      userId: input.caller.userId,
      request,
      leaseMs: IDEMPOTENCY_LEASE_MS,
    },
  });
  if (start.outcome === 'processing') {
    return written(202, {
      status: 'processing',
      message: 'a request with this x-idempotency-key is still in progress; repeat it with the same key for its outcome',
    });
  }
  if (start.outcome === 'completed') return { status: start.status, body: start.body };
  try {
    return await perform(ctx, accountId, key, request);
  } catch (err) {
    // Whatever failed rolled back with the key's answer, so nothing was done: free the key. (Had
    // the work committed, so would its answer have, and a completed key is not released.)
    await releaseIdempotentRequest({ ctx, input: { accountId, key } }).catch((releaseErr: unknown) =>
      ctx.log.warn('idempotency key not released', { error: releaseErr instanceof Error ? releaseErr.message : String(releaseErr) }),
    );
    throw withRetryAfter(err);
  }
}

/** The generation allowance's 429 carries its wait as SQL detail (`retry_after`); it leaves as the Retry-After header. */
function withRetryAfter(err: unknown): unknown {
  if (!(err instanceof AppError) || err.code !== 'generation_limit' || typeof err.extra.retry_after !== 'number') return err;
  const { retry_after: seconds, ...extra } = err.extra;
  return new AppError(err.code, err.message, extra, { ...err.headers, 'Retry-After': String(seconds) });
}

/** One mutating action, its answer stored as the key's outcome in the same transaction. */
async function perform(ctx: CoreDeps, accountId: string, key: string, request: MutatingRequest): Promise<IcpActionAnswer> {
  const inOneTransaction = (status: number, work: (tx: CoreDeps) => Promise<object>) =>
    ctx.db.begin(async (db) => {
      const answer = written(status, await work({ ...ctx, db }));
      await db`select sl_complete_idempotent(${accountId}::uuid, ${key}::uuid, ${answer.status}, ${answer.body})`;
      return answer;
    });
  switch (request.action) {
    case 'create_icp': {
      const { action: _action, ...icp } = request;
      const created = await inOneTransaction(201, (tx) => createIcp({ ctx: tx, input: { accountId, icp } }));
      startAfterWork(ctx, 'icp-generation');
      return created;
    }
    case 'approve_icp':
    case 'reject_icp':
    case 'activate_icp':
    case 'pause_icp':
    case 'regenerate_icp': {
      const action = request.action;
      const answer = await inOneTransaction(200, (tx) => changeIcpState({ ctx: tx, input: { accountId, icpId: request.icp_id, action } }));
      if (action === 'activate_icp') startAfterWork(ctx, 'icp-scoring');
      if (action === 'regenerate_icp') startAfterWork(ctx, 'icp-generation');
      return answer;
    }
    case 'delete_icp':
      return inOneTransaction(200, (tx) => deleteIcp({ ctx: tx, input: { accountId, icpId: request.icp_id } }));
    case 'create_product': {
      const { action: _action, ...product } = request;
      return inOneTransaction(201, (tx) => createProduct({ ctx: tx, input: { accountId, product } }));
    }
    case 'update_product': {
      const { action: _action, product_id, ...changes } = request;
      return inOneTransaction(200, (tx) => updateProduct({ ctx: tx, input: { accountId, productId: product_id, changes } }));
    }
    default:
      throw new AppError('invalid_request', `unknown action ${(request as { action: string }).action}`);
  }
}
