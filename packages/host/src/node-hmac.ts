import { createHmac } from 'node:crypto';
import type { HmacSha256Hex } from '@sightline/core';

/** The synchronous HMAC the Node host gives the keyring (see HmacSha256Hex). */
export const nodeHmacSha256Hex: HmacSha256Hex = (key, message) => createHmac('sha256', key).update(message).digest('hex');
