import { nextTurn } from './next-turn.ts';

/** Reads one key; answers undefined when the read found nothing for it. */
export type BatchedRead<K, R> = (key: K) => Promise<R | undefined>;

export interface BatchedReadOptions<K, R> {
  /** Reads every key of a batch (distinct, at most `maxKeys`) in one statement. */
  read(keys: K[]): Promise<Map<K, R>>;
  /** The most keys one statement reads; a batch that fills up is sent at once. Default 256. */
  maxKeys?: number;
}

interface Batch<K, R> {
  waiters: Map<K, { resolve(r: R | undefined): void; reject(err: unknown): void }[]>;
  sent: boolean;
}

/**
 * Reads by key answered together, one statement for many: reads asked while a statement is out
 * gather and go as the next statement when it is back; a read asked when none is out waits for the
 * end of the event loop's turn, so the reads the server parsed from its sockets in that turn join
 * it. A read joins only a batch that has not been sent, so every answer comes from a statement
 * that started after the read was asked: as fresh as a read of its own, and a caller that waited
 * for its write before reading sees that write. A failed statement fails every read of its batch
 * with its error; the next batch tries again.
 *
 * One statement in flight at a time: under load a batch holds what arrived during one round trip,
 * so a database and a process that are the bottleneck see fewer, larger statements, never a queue
 * of them; a batch that reaches `maxKeys` goes at once. A lone read pays the end of its turn
 * (setImmediate on Node, under a millisecond). Use it for reads of single rows by key on hot
 * paths. Every statement runs on the handle `read` closes over: make one reader per handle, so a
 * transaction's reads never leave it for another's batch.
 */
export function createBatchedRead<K, R>(opts: BatchedReadOptions<K, R>): BatchedRead<K, R> {
  const maxKeys = opts.maxKeys ?? 256;
  let open: Batch<K, R> | undefined;
  let reading = 0;

  async function send(batch: Batch<K, R>): Promise<void> {
    if (batch.sent) return;
    batch.sent = true;
    if (open === batch) open = undefined;
    reading++;
    let found: Map<K, R> | undefined;
    let failure: unknown;
    try {
      found = await opts.read([...batch.waiters.keys()]);
    } catch (err) {
      failure = err;
    } finally {
      reading--;
    }
    // What gathered while this one was out goes now, before this batch's callers run on.
    if (open && !reading) void send(open);
    for (const [key, list] of batch.waiters) {
      const row = found?.get(key);
      for (const w of list) {
        if (found) w.resolve(row);
        else w.reject(failure);
      }
    }
  }

  return (key) =>
    new Promise<R | undefined>((resolve, reject) => {
      let batch = open;
      if (!batch) {
        const fresh: Batch<K, R> = { waiters: new Map(), sent: false };
        open = batch = fresh;
        if (!reading) void nextTurn().then(() => (reading ? undefined : send(fresh)));
      }
      const list = batch.waiters.get(key);
      if (list) list.push({ resolve, reject });
      else batch.waiters.set(key, [{ resolve, reject }]);
      if (batch.waiters.size >= maxKeys) void send(batch);
    });
}
