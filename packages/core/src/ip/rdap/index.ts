/**
 * The RDAP source (issue 29 §2.3): the registries' record of who holds an address's block, as one
 * more free voter for the identification waterfall. Not wired into the waterfall here: the
 * composition builds it with `createRdapSource(deps, rdapOptionsFromEnv(env))`.
 */

export { publicAddress } from './address-range.ts';
export { type BootstrapFiles, IANA_BOOTSTRAP_URLS, parseBootstrap, RdapBootstrap, SHIPPED_BOOTSTRAP } from './bootstrap.ts';
export { isFreeMailDomain } from './contact-domains.ts';
export { createRdapSource, type RdapDeps, type RdapSource } from './create-rdap-source.ts';
export { interpretNetwork, type RoutingOwner } from './interpret-network.ts';
export { type KnownRange, postgresRdapStore, purgeExpiredRdapNetworks, type RdapStore } from './network-cache.ts';
export { DEFAULT_RDAP_OPTIONS, type RdapEnv, RdapEnvSchema, type RdapOptions, rdapOptionsFromEnv } from './rdap-options.ts';
export { RDAP_READ_LIMITS, type RdapContact, type RdapNetwork, readNetwork } from './read-network.ts';
export { RDAP_CONFIDENCE, REGISTRATION_TYPES, registrationType } from './registration-policy.ts';
