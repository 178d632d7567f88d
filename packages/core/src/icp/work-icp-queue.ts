import type { CoreDeps, VerbArgs } from '../context.ts';
import { generateIcps, type IcpGenerationReport } from './generate-icps.ts';
import { type ScoringReport, scoreIdentifications } from './score-identifications.ts';

export interface IcpQueueReport {
  generation: IcpGenerationReport;
  scoring: ScoringReport;
}

/**
 * The ICP worker as the schedulers run it (the sweep function, the Node host every minute): ICPs
 * due for generation are drafted (retries included, and the claims of workers that died), then
 * identifications are scored against the active ICPs. The kicks after a create, an activation and
 * a settled identification run the same verbs at once; this is what catches up after them.
 */
export async function workIcpQueue({ ctx }: VerbArgs<Record<string, never>, CoreDeps>): Promise<IcpQueueReport> {
  const generation = await generateIcps({ ctx, input: {} });
  const scoring = await scoreIdentifications({ ctx, input: {} });
  return { generation, scoring };
}
