import { Transform } from 'node:stream';

const NEWLINE = 0x0a;
/** A "line" longer than this is passed on in pieces, so output without newlines cannot pile up. */
const MAX_LINE_BYTES = 64 * 1024;

/**
 * Prefixes every line of a byte stream with `prefix` (`[rank 3] `). Only whole lines are passed on,
 * so the lines of ranks that share one terminal never interleave mid-line; an unterminated last
 * line is passed on, with a newline, when the stream ends.
 */
export function prefixLines(prefix: string): Transform {
  const head = Buffer.from(prefix);
  let pending = Buffer.alloc(0);
  const prefixed = (lines: Buffer) => {
    const parts: Buffer[] = [];
    for (let start = 0; start < lines.length; ) {
      const end = lines.indexOf(NEWLINE, start) + 1 || lines.length;
      parts.push(head, lines.subarray(start, end));
      start = end;
    }
    return Buffer.concat(parts);
  };
  return new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      const data = pending.length > 0 ? Buffer.concat([pending, chunk]) : chunk;
      const last = data.lastIndexOf(NEWLINE);
      if (last < 0 && data.length < MAX_LINE_BYTES) {
        pending = Buffer.from(data);
        callback();
        return;
      }
      const cut = last < 0 ? data.length : last + 1;
      pending = Buffer.from(data.subarray(cut));
      const complete = data.subarray(0, cut);
      callback(null, prefixed(last < 0 ? Buffer.concat([complete, Buffer.of(NEWLINE)]) : complete));
    },
    flush(callback) {
      callback(null, pending.length > 0 ? prefixed(Buffer.concat([pending, Buffer.of(NEWLINE)])) : undefined);
    },
  });
}
