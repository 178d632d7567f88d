/** A 32-bit number as its dotted-quad IPv4 text. */
export const dotted = (v: number) => `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;

/** xorshift32: a reproducible generator of 32-bit numbers spread over the whole space. */
export function xorshift32(seed: number): () => number {
  let x = seed;
  return () => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    return x >>> 0;
  };
}
