import type { AiEngine, IcpDraft, ResearchSummary } from '@sightline/core';

type DraftInput = Parameters<AiEngine['draftIcp']>[0];
type SummariseInput = Parameters<AiEngine['summariseResearch']>[0];
type WriteInput = Parameters<AiEngine['writeMessage']>[0];

export interface FakeEngineOptions {
  /** The name stored with its results. */
  name?: string;
  /** What draftIcp answers to its `n`th call (from 1); without it, drafting fails (a test that drafts says what). */
  draft?: (call: DraftInput, n: number) => Promise<unknown>;
  /** What summariseResearch answers. */
  summary?: ResearchSummary;
  /** What writeMessage answers. */
  message?: string;
  /** Held by summariseResearch before it answers; `onSummarise` runs as it is entered. */
  summaryGate?: Promise<void>;
  onSummarise?: () => void;
  failSummary?: boolean;
  /** Held by writeMessage before it answers; `onWrite` runs as it is entered. */
  gate?: Promise<void>;
  onWrite?: () => void;
  failMessage?: boolean;
}

/** An AI engine that answers what a test says, and records what it was asked. */
export interface FakeEngine extends AiEngine {
  drafted: DraftInput[];
  summarised: SummariseInput[];
  written: WriteInput[];
}

/**
 * The AI engine port, faked: the engines' own adapters are tested against msw (ai-engine.test.ts);
 * the verbs that call an engine are tested with this one.
 */
export function fakeAiEngine(opts: FakeEngineOptions = {}): FakeEngine {
  const name = opts.name ?? 'fake-engine';
  const drafted: DraftInput[] = [];
  const summarised: SummariseInput[] = [];
  const written: WriteInput[] = [];
  return {
    name,
    drafted,
    summarised,
    written,
    async draftIcp(input) {
      drafted.push(input);
      if (!opts.draft) throw new Error('this fake engine was given no draft');
      return { value: (await opts.draft(input, drafted.length)) as IcpDraft, engine: name };
    },
    async summariseResearch(input) {
      summarised.push(input);
      opts.onSummarise?.();
      await opts.summaryGate;
      if (opts.failSummary) throw new Error('summary model overloaded');
      if (!opts.summary) throw new Error('this fake engine was given no summary');
      return { value: opts.summary, engine: name };
    },
    async writeMessage(input) {
      written.push(input);
      opts.onWrite?.();
      await opts.gate;
      if (opts.failMessage) throw new Error('message model refused');
      if (opts.message === undefined) throw new Error('this fake engine was given no message');
      return { value: { message: opts.message }, engine: name };
    },
  };
}
