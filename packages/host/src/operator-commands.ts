import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import {
  AppError,
  type CoreDeps,
  configureAutoReload,
  configureCreditReload,
  connectPageUrl,
  connectUser,
  consumeIdentification,
  createConnectLink,
  createDirectAccount,
  createDirectKey,
  createPartner,
  createProduct,
  creditTopup,
  disconnectUser,
  ErasureInput,
  erasePersonalData,
  findUnstorableText,
  grantCredits,
  PLANS,
  parseCidrList,
  parseCloudRanges,
  parseCompanyCsv,
  recordInvoice,
  rollOverDuePeriods,
  setBilling,
  setPlan,
  setTrial,
  settleInvoice,
  storeCompanies,
  storeRanges,
  sweepDataLifecycle,
  UNSTORABLE_TEXT_MESSAGE,
} from '@sightline/core';
import { z } from 'zod';

/**
 * The operator command set, shared by the CLI (direct database access) and the running embedded
 * server (which owns the PGlite files while it runs). Each command: zod-parsed flags → one verb.
 */
const int = (name: string) =>
  z.coerce
    .number({ message: `--${name} must be a number` })
    .int(`--${name} must be a whole number`)
    .min(0);
const bool = (name: string) => z.enum(['true', 'false'], { message: `--${name} must be true or false` }).transform((v) => v === 'true');
const uuid = (name: string) => z.guid({ message: `--${name} must be a uuid` });

/**
 * consume is a test and support tool, one identification at a time: a count in the millions would
 * run for hours and hold the embedded database all that time.
 */
const MAX_CONSUME_COUNT = 10_000;

/** One command as the table holds it: raw string flags in, the verb's result out. */
interface OperatorCommandSpec {
  usage: string;
  /** Parses `flags` strictly and runs the verb; bad or unknown flags are AppError 400 with the usage line. */
  run: (deps: CoreDeps, flags: Record<string, string>, progress: Progress) => Promise<unknown>;
}

/**
 * Binds a command's flag schema to its verb. The verb is typed by what the schema infers, so no
 * command restates its flags in a cast, and the schema's type stops here: the table holds uniform
 * values and `runOperatorCommand` needs no knowledge of any one command's flags.
 */
function command<Shape extends z.core.$ZodShape>(spec: {
  usage: string;
  schema: z.ZodObject<Shape>;
  run: (deps: CoreDeps, flags: z.infer<z.ZodObject<Shape>>, progress: Progress) => unknown;
}): OperatorCommandSpec {
  // Strict: a misspelt flag is refused by name, not silently dropped so the command runs without it.
  const schema = spec.schema.strict();
  return {
    usage: spec.usage,
    async run(deps, flags, progress) {
      const parsed = schema.safeParse(flags);
      if (!parsed.success) {
        const msg = parsed.error.issues.map((i) => i.message).join('; ');
        throw new AppError('invalid_request', `${msg}\nusage: npm run admin -- ${spec.usage}`);
      }
      return spec.run(deps, parsed.data, progress);
    },
  };
}

const commands = {
  'create-partner': command({
    usage: 'create-partner --name N [--billing prepaid|invoice_monthly] [--quota N] [--topup N] [--per-id-pence P] [--card pm_x]',
    schema: z.object({
      name: z.string({ message: '--name is required' }).min(1, '--name is required'),
      billing: z.enum(['prepaid', 'invoice_monthly'], { message: '--billing must be prepaid or invoice_monthly' }).optional(),
      quota: int('quota').optional(),
      topup: int('topup').optional(),
      'per-id-pence': z.coerce.number({ message: '--per-id-pence must be a number' }).positive().optional(),
      card: z.string().min(1).optional(),
    }),
    run: (deps, f) =>
      createPartner({
        ctx: deps,
        input: { name: f.name, billing: f.billing, quota: f.quota, topup: f.topup, perIdPence: f['per-id-pence'], card: f.card },
      }),
  }),
  'create-account': command({
    usage: 'create-account --name N --domain D',
    schema: z.object({
      name: z.string({ message: '--name is required' }).min(1, '--name is required'),
      domain: z.string({ message: '--domain is required' }).min(1, '--domain is required'),
    }),
    run: (deps, f) => createDirectAccount({ ctx: deps, input: { name: f.name, domain: f.domain } }),
  }),
  'create-key': command({
    usage: 'create-key --account-id A --domain D',
    schema: z.object({
      'account-id': z.guid({ message: '--account-id must be a uuid' }),
      domain: z.string({ message: '--domain is required' }).min(1, '--domain is required'),
    }),
    run: (deps, f) => createDirectKey({ ctx: deps, input: { accountId: f['account-id'], domain: f.domain } }),
  }),
  'purchase-topup': command({
    usage: 'purchase-topup (--account-id A | --child-id C) --amount N [--payment-ref REF]',
    schema: z.object({
      'account-id': uuid('account-id').optional(),
      'child-id': uuid('child-id').optional(),
      amount: int('amount').refine((n) => n > 0, '--amount must be positive'),
      'payment-ref': z.string().min(1).optional(),
    }),
    run: (deps, f) => {
      if (!f['account-id'] === !f['child-id']) throw new AppError('invalid_request', 'give exactly one of --account-id (pool) or --child-id');
      return creditTopup({
        ctx: deps,
        input: {
          // A replayed confirmation with the same reference credits nothing.
          paymentRef: f['payment-ref'] ?? `operator_${randomUUID()}`,
          poolAccountId: f['account-id'],
          childApiKeyId: f['child-id'],
          amount: f.amount,
          source: f['child-id'] ? 'purchase' : 'operator',
        },
      });
    },
  }),
  'set-auto-reload': command({
    usage: 'set-auto-reload --account-id A [--enabled true|false] [--threshold N] [--amount N] [--card pm_x] [--customer cus_x]',
    schema: z.object({
      'account-id': uuid('account-id'),
      enabled: bool('enabled').optional(),
      threshold: int('threshold').optional(),
      amount: int('amount')
        .refine((n) => n > 0, '--amount must be positive')
        .optional(),
      card: z.string().min(1).optional(),
      customer: z.string().min(1).optional(),
    }),
    run: (deps, f) =>
      configureAutoReload({
        ctx: deps,
        input: {
          accountId: f['account-id'],
          enabled: f.enabled,
          thresholdIds: f.threshold,
          topupAmountIds: f.amount,
          paymentMethodId: f.card,
          customerId: f.customer,
        },
      }),
  }),
  'set-billing': command({
    usage: 'set-billing --account-id A [--mode prepaid|invoice_monthly] [--per-id-pence P] [--card pm_x] [--quota N]',
    schema: z.object({
      'account-id': uuid('account-id'),
      mode: z.enum(['prepaid', 'invoice_monthly'], { message: '--mode must be prepaid or invoice_monthly' }).optional(),
      'per-id-pence': z.coerce.number({ message: '--per-id-pence must be a number' }).positive().optional(),
      card: z.string().min(1).optional(),
      quota: int('quota').optional(),
    }),
    run: (deps, f) =>
      setBilling({
        ctx: deps,
        input: { accountId: f['account-id'], mode: f.mode, perIdPence: f['per-id-pence'], card: f.card, quota: f.quota },
      }),
  }),
  'record-invoice': command({
    usage: 'record-invoice --account-id A --amount-pence P [--ids N]',
    schema: z.object({
      'account-id': uuid('account-id'),
      'amount-pence': z.coerce.number({ message: '--amount-pence must be a number' }).positive(),
      ids: int('ids').optional(),
    }),
    run: (deps, f) => recordInvoice({ ctx: deps, input: { accountId: f['account-id'], amountPence: f['amount-pence'], ids: f.ids } }),
  }),
  'settle-invoice': command({
    usage: 'settle-invoice --invoice-id I',
    schema: z.object({ 'invoice-id': uuid('invoice-id') }),
    run: (deps, f) => settleInvoice({ ctx: deps, input: { invoiceId: f['invoice-id'] } }),
  }),
  consume: command({
    usage: `consume --key-id K [--count N]   (use IDs as identifications would; N at most ${MAX_CONSUME_COUNT})`,
    schema: z.object({
      'key-id': uuid('key-id'),
      count: int('count').max(MAX_CONSUME_COUNT, `--count must be at most ${MAX_CONSUME_COUNT}`).optional(),
    }),
    run: async (deps, f) => {
      const outcomes: Record<string, number> = {};
      for (let i = 0; i < (f.count ?? 1); i++) {
        const r = await consumeIdentification({ ctx: deps, input: { apiKeyId: f['key-id'] } });
        outcomes[r.outcome] = (outcomes[r.outcome] ?? 0) + 1;
      }
      return { key_id: f['key-id'], outcomes };
    },
  }),
  'import-ranges': command({
    usage: 'import-ranges --kind vpn|hosting|isp --file F [--provider NAME]   (one CIDR per line)',
    schema: z.object({
      kind: z.enum(['vpn', 'hosting', 'isp'], { message: '--kind must be vpn, hosting or isp' }),
      file: z.string({ message: '--file is required' }).min(1),
      provider: z.string().min(1).max(100).optional(),
    }),
    run: async (deps, f, progress) => {
      const parsed = parseCidrList(await readInput(f.file), f.provider ?? null);
      return storeRanges({ ctx: deps, input: { kind: f.kind, parsed, source: path.basename(f.file), onProgress: progress } });
    },
  }),
  'import-cloud': command({
    usage: 'import-cloud --format aws|gcp|azure|oracle --file F   (the providers’ published range files)',
    schema: z.object({
      format: z.enum(['aws', 'gcp', 'azure', 'oracle'], { message: '--format must be aws, gcp, azure or oracle' }),
      file: z.string({ message: '--file is required' }).min(1),
    }),
    run: async (deps, f, progress) => {
      const parsed = parseCloudRanges(f.format, await readInput(f.file));
      return storeRanges({ ctx: deps, input: { kind: 'hosting', parsed, source: `${f.format}:${path.basename(f.file)}`, onProgress: progress } });
    },
  }),
  'import-companies': command({
    usage: 'import-companies --file F   (CSV: ip_or_cidr,domain,company_name[,confidence])',
    schema: z.object({ file: z.string({ message: '--file is required' }).min(1) }),
    run: async (deps, f, progress) => {
      const parsed = parseCompanyCsv(await readInput(f.file));
      return storeCompanies({ ctx: deps, input: { parsed, onProgress: progress } });
    },
  }),
  'grant-credits': command({
    usage: 'grant-credits --account-id A --credits N',
    schema: z.object({ 'account-id': uuid('account-id'), credits: int('credits').refine((n) => n > 0, '--credits must be positive') }),
    run: (deps, f) => grantCredits({ ctx: deps, input: { accountId: f['account-id'], credits: f.credits } }),
  }),
  'create-product': command({
    usage: 'create-product --account-id A --name N [--url U] [--description D]',
    schema: z.object({
      'account-id': uuid('account-id'),
      name: z.string({ message: '--name is required' }),
      url: z.string().optional(),
      description: z.string().optional(),
    }),
    run: async (deps, f) => {
      const product = await createProduct({
        ctx: deps,
        input: { accountId: f['account-id'], product: { name: f.name, url: f.url, description: f.description } },
      });
      return { product_id: product.id, account_id: f['account-id'], ...product };
    },
  }),
  'set-plan': command({
    usage: 'set-plan --account-id A --plan free|starter|growth|pro   (ICP limits 1, 3, 6, unlimited)',
    schema: z.object({
      'account-id': uuid('account-id'),
      plan: z.enum(PLANS, { message: '--plan must be free, starter, growth or pro' }),
    }),
    run: (deps, f) => setPlan({ ctx: deps, input: { accountId: f['account-id'], plan: f.plan } }),
  }),
  'connect-link': command({
    usage:
      'connect-link --account-id A [--page-url U]   (U: the server’s connect page, e.g. https://api.example.com/functions/v1/connect; default <PUBLIC_BASE_URL>/connect)',
    schema: z.object({
      'account-id': uuid('account-id'),
      'page-url': z.url({ protocol: /^https?$/, message: '--page-url must be an http(s) URL' }).optional(),
    }),
    run: (deps, f) => createConnectLink({ ctx: deps, input: { accountId: f['account-id'], pageUrl: f['page-url'] ?? connectPageUrl(deps) } }),
  }),
  'connect-user': command({
    usage: 'connect-user --account-id A [--name N] [--linkedin-url U] [--title T] [--company C]   (a link made and completed at once)',
    schema: z.object({
      'account-id': uuid('account-id'),
      name: z.string().optional(),
      'linkedin-url': z.string().optional(),
      title: z.string().optional(),
      company: z.string().optional(),
    }),
    run: (deps, f) =>
      connectUser({
        ctx: deps,
        input: { accountId: f['account-id'], name: f.name, linkedinUrl: f['linkedin-url'], title: f.title, company: f.company },
      }),
  }),
  'disconnect-user': command({
    usage: 'disconnect-user --account-id A --user-id U',
    schema: z.object({ 'account-id': uuid('account-id'), 'user-id': uuid('user-id') }),
    run: (deps, f) => disconnectUser({ ctx: deps, input: { accountId: f['account-id'], userId: f['user-id'] } }),
  }),
  'set-trial': command({
    usage: 'set-trial --account-id A --days N   (the trial ends N days from now; 0 ends it now)',
    schema: z.object({ 'account-id': uuid('account-id'), days: int('days').max(3650, '--days must be at most 3650') }),
    run: (deps, f) => setTrial({ ctx: deps, input: { accountId: f['account-id'], days: f.days } }),
  }),
  'set-credit-reload': command({
    usage: 'set-credit-reload --account-id A --amount N --price-pence P --card pm_x [--customer cus_x]   (what a credit auto-reload buys)',
    schema: z.object({
      'account-id': uuid('account-id'),
      amount: int('amount')
        .refine((n) => n > 0, '--amount must be positive')
        .refine((n) => n <= 1_000_000_000, '--amount must be at most 1000000000'),
      'price-pence': z.coerce
        .number({ message: '--price-pence must be a number' })
        .positive('--price-pence must be positive')
        .max(1_000_000, '--price-pence must be at most 1000000'),
      card: z.string({ message: '--card is required' }).min(1, '--card is required'),
      customer: z.string().min(1).optional(),
    }),
    run: (deps, f) =>
      configureCreditReload({
        ctx: deps,
        input: { accountId: f['account-id'], amount: f.amount, pricePence: f['price-pence'], paymentMethodId: f.card, customerId: f.customer },
      }),
  }),
  'roll-over': command({
    usage: 'roll-over   (run the period rollover sweep now)',
    schema: z.object({}),
    run: (deps) => rollOverDuePeriods({ ctx: deps, input: {} }),
  }),
  erase: command({
    usage:
      'erase (--ip A | --linkedin-url U) [--account-id A]   (a data-protection request: one address or one person, from one account or, without --account-id, from every account)',
    schema: z.object({ ip: z.string().optional(), 'linkedin-url': z.string().optional(), 'account-id': uuid('account-id').optional() }),
    run: (deps, f) => {
      const parsed = ErasureInput.safeParse({ ip: f.ip, linkedin_url: f['linkedin-url'] });
      if (!parsed.success) {
        const msg = parsed.error.issues
          .map((i) =>
            i.path[0] === 'linkedin_url'
              ? `--linkedin-url ${i.message}`
              : i.path[0] === 'ip'
                ? `--ip ${i.message}`
                : 'give exactly one of --ip and --linkedin-url',
          )
          .join('; ');
        throw new AppError('invalid_request', `${msg}\nusage: npm run admin -- erase (--ip A | --linkedin-url U) [--account-id A]`);
      }
      return erasePersonalData({ ctx: deps, input: { ...parsed.data, accountId: f['account-id'] ?? null } });
    },
  }),
  'data-lifecycle': command({
    usage: 'data-lifecycle   (run the data-lifecycle sweep now: retention, partitions, ageing)',
    schema: z.object({}),
    run: (deps) => sweepDataLifecycle({ ctx: deps, input: {} }),
  }),
} satisfies Record<string, OperatorCommandSpec>;

async function readInput(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new AppError('invalid_request', `cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}`);
  }
}

/** Progress of a long command: rows done of total. */
export type Progress = (done: number, total: number) => void;

export type OperatorCommand = keyof typeof commands;

export const operatorUsage = Object.values(commands)
  .map((c) => `  npm run admin -- ${c.usage}`)
  .join('\n');

export function isOperatorCommand(name: string): name is OperatorCommand {
  return Object.hasOwn(commands, name);
}

/** Validates flags and runs one command; bad flags are AppError 400 with a usage line. */
export async function runOperatorCommand(
  deps: CoreDeps,
  name: string,
  flags: Record<string, string>,
  progress: Progress = () => {},
): Promise<unknown> {
  if (!isOperatorCommand(name)) throw new AppError('invalid_request', `unknown command ${name}; commands:\n${operatorUsage}`);
  const unstorable = findUnstorableText(flags);
  if (unstorable) throw new AppError('invalid_request', `--${unstorable} ${UNSTORABLE_TEXT_MESSAGE}`);
  return commands[name].run(deps, flags, progress);
}
