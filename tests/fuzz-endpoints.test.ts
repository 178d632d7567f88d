import { allFunctions } from '../functions/index.ts';
import { describeFuzz } from './support/fuzz-suite.ts';
import { isPartnerRoute } from './support/routes.ts';

/** Issue 15 §2 for every function but the partner routes (fuzz-partner.test.ts): see support/fuzz-suite.ts. */
describeFuzz(allFunctions.filter((f) => !isPartnerRoute(f)));
