import type { CoreDeps, VerbArgs } from '../kernel/context.ts';
import { releaseExpiredCreditHolds } from '../messaging/credit-holds.ts';
import { generateIcps, type IcpGenerationReport } from './generate-icps.ts';
import { type ScoringReport, scoreIdentifications } from './score-identifications.ts';

export interface IcpQueueReport {
  generation: IcpGenerationReport;
  scoring: ScoringReport;
  /** Credits held by api-full-request workers that died, given back. */
  credit_holds: { released: number };
}

/**
 * The AI engine work as the schedulers run it (the sweep function, the Node host every minute): ICPs
 * due for generation are drafted (retries included, and the claims of workers that died), then
 * identifications are scored against the active ICPs, then the credits api-full-request workers
 * held and never settled (they died) go back once their holds expire. The after-work a create, an
 * activation and a settled identification start runs the same verbs at once; this is what catches
 * up after it.
 */
export async function workIcpQueue({ ctx }: VerbArgs<Record<string, never>, CoreDeps>): Promise<IcpQueueReport> {
  const generation = await generateIcps({ ctx, input: {} });
  const scoring = await scoreIdentifications({ ctx, input: {} });
  const credit_holds = await releaseExpiredCreditHolds({ ctx, input: {} });
  return { generation, scoring, credit_holds };
}
