import { allFunctions } from '../functions/index.ts';
import { describeFuzz } from './support/fuzz-suite.ts';
import { isPartnerRoute } from './support/routes.ts';

/** Issue 15 §2 for the partner routes (the rest in fuzz-endpoints.test.ts): see support/fuzz-suite.ts. */
describeFuzz(allFunctions.filter(isPartnerRoute));
