/**
 * Resolves after the event loop's next turn: setImmediate where the runtime has it (Node; a zero
 * timer waits a millisecond there, a second of a 5,000-visitor backlog), a zero timer elsewhere
 * (Deno has no setImmediate outside npm packages). Work that wants company waits here: whatever
 * else the current turn's I/O starts joins it.
 */
export function nextTurn(): Promise<void> {
  const immediate = (globalThis as { setImmediate?: (f: () => void) => unknown }).setImmediate;
  return new Promise((r) => (immediate ? immediate(r) : setTimeout(r, 0)));
}
