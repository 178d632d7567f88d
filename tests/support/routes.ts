import { type FunctionDefinition, policies } from '@sightline/core';

/** A partner endpoint: the partner master key's routes. */
export const isPartnerRoute = (def: FunctionDefinition) =>
  [policies.partnerAction, policies.partnerRead, policies.partnerPoolRead].includes(def.policy);

/** A connected user's route: a key and an `x-user-id`. */
export const actsAsUser = (def: FunctionDefinition) => [policies.connectedUser, policies.idempotentConnectedUser].includes(def.policy);
