export { builtinEngine } from './builtin-engine.ts';
export { type AiEngine, AiEngineError, IcpDraft, type ProspectProfile, ResearchSummary } from './engine.ts';
