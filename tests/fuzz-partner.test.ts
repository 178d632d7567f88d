import { policies } from '@sightline/core';
import { allFunctions } from '../functions/index.ts';
import { describeFuzz } from './support/fuzz-suite.ts';

/** Issue 15 §2 for the partner routes (the rest in fuzz-endpoints.test.ts): see support/fuzz-suite.ts. */
const partnerPolicies = [policies.partnerAction, policies.partnerRead, policies.partnerPoolRead];
describeFuzz(allFunctions.filter((f) => partnerPolicies.includes(f.policy)));
