import { createHmac, hash } from 'node:crypto';
import type { HmacSha256Hex } from '@sightline/core';

/** The synchronous HMAC the Node host gives the keyring (see HmacSha256Hex). */
export const nodeHmacSha256Hex: HmacSha256Hex = (key, message) => createHmac('sha256', key).update(message).digest('hex');

/**
 * The auth cache's index of a presented key (see AuthCacheOptions.digest): Node's one-shot SHA-256,
 * which allocates no native object per call, unlike createHmac.
 */
export const nodeSha256Base64 = (key: string): string => hash('sha256', key, 'base64');
