export { builtinEngine } from './builtin-engine.ts';
export { type AiEngine, AiEngineError, IcpDraft, type ProductFacts, type ProspectProfile, ResearchSummary } from './engine.ts';
