import {
  AppError,
  createDirectAccount,
  createDirectKey,
  createPartner,
  type CoreDeps,
} from '@sightline/core';
import { z } from 'zod';

/**
 * The operator command set, shared by the CLI (direct database access) and the running embedded
 * server (which owns the PGlite files while it runs). Each command: zod-parsed flags → one verb.
 */
const int = (name: string) =>
  z.coerce.number({ message: `--${name} must be a number` }).int(`--${name} must be a whole number`).min(0);

const commands = {
  'create-partner': {
    usage: 'create-partner --name N [--billing prepaid|invoice_monthly] [--quota N] [--topup N] [--per-id-pence P] [--card pm_x]',
    schema: z.object({
      name: z.string({ message: '--name is required' }).min(1, '--name is required'),
      billing: z.enum(['prepaid', 'invoice_monthly'], { message: '--billing must be prepaid or invoice_monthly' }).optional(),
      quota: int('quota').optional(),
      topup: int('topup').optional(),
      'per-id-pence': z.coerce.number({ message: '--per-id-pence must be a number' }).positive().optional(),
      card: z.string().min(1).optional(),
    }),
    run: (deps: CoreDeps, a: Record<string, unknown>) => {
      const f = a as { name: string; billing?: 'prepaid' | 'invoice_monthly'; quota?: number; topup?: number; 'per-id-pence'?: number; card?: string };
      return createPartner({
        ctx: deps,
        input: { name: f.name, billing: f.billing, quota: f.quota, topup: f.topup, perIdPence: f['per-id-pence'], card: f.card },
      });
    },
  },
  'create-account': {
    usage: 'create-account --name N --domain D',
    schema: z.object({
      name: z.string({ message: '--name is required' }).min(1, '--name is required'),
      domain: z.string({ message: '--domain is required' }).min(1, '--domain is required'),
    }),
    run: (deps: CoreDeps, a: Record<string, unknown>) =>
      createDirectAccount({ ctx: deps, input: a as { name: string; domain: string } }),
  },
  'create-key': {
    usage: 'create-key --account-id A --domain D',
    schema: z.object({
      'account-id': z.guid({ message: '--account-id must be a uuid' }),
      domain: z.string({ message: '--domain is required' }).min(1, '--domain is required'),
    }),
    run: (deps: CoreDeps, a: Record<string, unknown>) => {
      const f = a as { 'account-id': string; domain: string };
      return createDirectKey({ ctx: deps, input: { accountId: f['account-id'], domain: f.domain } });
    },
  },
} as const;

export type OperatorCommand = keyof typeof commands;

export const operatorUsage = Object.values(commands)
  .map((c) => `  npm run admin -- ${c.usage}`)
  .join('\n');

export function isOperatorCommand(name: string): name is OperatorCommand {
  return Object.hasOwn(commands, name);
}

/** Validates flags and runs one command; bad flags are AppError 400 with a usage line. */
export async function runOperatorCommand(deps: CoreDeps, name: string, flags: Record<string, string>): Promise<unknown> {
  if (!isOperatorCommand(name)) throw new AppError(400, `unknown command ${name}; commands:\n${operatorUsage}`);
  const cmd = commands[name];
  const parsed = cmd.schema.strict().safeParse(flags);
  if (!parsed.success) {
    const msg = parsed.error.issues.map((i) => i.message).join('; ');
    throw new AppError(400, `${msg}\nusage: npm run admin -- ${cmd.usage}`);
  }
  return cmd.run(deps, parsed.data);
}
