import type { FunctionDefinition } from '@sightline/core';
import { partnerCreateChildKey } from './partner-create-child-key/route.ts';
import { partnerListChildren } from './partner-list-children/route.ts';
import { partnerPoolState } from './partner-pool-state/route.ts';

/** Every documented endpoint this build serves. The Node host mounts all of them. */
export const allFunctions: FunctionDefinition[] = [partnerCreateChildKey, partnerListChildren, partnerPoolState];
