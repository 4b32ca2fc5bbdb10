// Reading response bodies: whole JSON bodies paced one event-loop turn at a time, and watch streams split
// into lines.
import type { IncomingMessage } from 'node:http';
import { StringDecoder } from 'node:string_decoder';
import { setImmediate as realSetImmediate, setTimeout as realSetTimeout } from 'node:timers';

/** Response headers as `ApiException` holds them: one string each. */
export function flatHeaders(headers: IncomingMessage['headers']): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}

/**
 * Large response bodies are parsed one loop turn at a time. Informers list in pages of 500 objects, and on a
 * fresh start at scale the pages of several kinds complete together: parsed as they complete, they all ran in
 * one poll phase, an event-loop stall of their sum (the Lease renewal and every timer waiting behind it).
 * A turn takes up to `TURN_BYTES` of bodies (any number of small ones, or one large one); a body that does
 * not fit waits for a later turn (a timer, so the loop's timers run in between). Shared by the process's
 * transports: it is the one event loop that stalls.
 */
export class ParseTurns {
  private used = 0;
  private resetDue = false;

  constructor(private readonly turnBytes: number) {}

  async take(bytes: number): Promise<void> {
    // Timers from node:timers, not the globals: a test's fake timers must not strand the shared turn half-used.
    while (this.used > 0 && this.used + bytes > this.turnBytes) await new Promise((r) => realSetTimeout(r, 0));
    this.used += bytes;
    if (this.resetDue) return;
    this.resetDue = true;
    // The check phase ends this turn's poll-phase work: a body taken after it belongs to the next turn.
    realSetImmediate(() => {
      this.used = 0;
      this.resetDue = false;
    });
  }
}

/** ~1 MiB of JSON: a few milliseconds of parsing on a loaded core. */
const TURN_BYTES = 1 << 20;
export const sharedParseTurns = new ParseTurns(TURN_BYTES);

/** The whole body as UTF-8 text. */
export function readAll(res: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
    res.on('close', () => {
      if (!res.complete) reject(new Error('the connection closed before the response was complete'));
    });
  });
}

/**
 * Splits a byte stream into lines (newline-delimited JSON): a line may arrive across chunks, and a multi-byte
 * character across two chunks. Empty lines are skipped.
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder('utf8');
  private partial = '';

  constructor(private readonly onLine: (line: string) => void) {}

  push(chunk: Buffer): void {
    const text = this.partial + this.decoder.write(chunk);
    let start = 0;
    for (let nl = text.indexOf('\n'); nl >= 0; nl = text.indexOf('\n', start)) {
      const line = text.slice(start, nl).trim();
      start = nl + 1;
      if (line) this.onLine(line);
    }
    this.partial = text.slice(start);
  }

  /** The last line, when the stream did not end with a newline. */
  end(): void {
    const line = (this.partial + this.decoder.end()).trim();
    this.partial = '';
    if (line) this.onLine(line);
  }
}
