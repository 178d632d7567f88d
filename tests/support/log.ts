import type { Logger } from '@sightline/core';

export interface LogLine {
  level: 'debug' | 'info' | 'warn' | 'error';
  msg: string;
  fields: Record<string, unknown> | undefined;
}

/** A logger that keeps every line, for tests that read what the app logged. */
export function capturingLogger() {
  const lines: LogLine[] = [];
  const log: Logger = {
    debug: (msg, fields) => lines.push({ level: 'debug', msg, fields }),
    info: (msg, fields) => lines.push({ level: 'info', msg, fields }),
    warn: (msg, fields) => lines.push({ level: 'warn', msg, fields }),
    error: (msg, fields) => lines.push({ level: 'error', msg, fields }),
  };
  return { log, lines };
}
