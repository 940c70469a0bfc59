import { Readable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { prefixLines } from '../../lib/launch/line-prefixer.js';

/** What the prefixer passes on for `chunks`, chunk by chunk. */
async function prefixed(chunks: string[]): Promise<string[]> {
  const output: string[] = [];
  for await (const chunk of Readable.from(chunks.map((text) => Buffer.from(text))).pipe(prefixLines('[rank 1] '))) {
    output.push(String(chunk));
  }
  return output;
}

describe('prefixLines', () => {
  it('prefixes every line and passes on whole lines only, however the input is cut', async () => {
    const output = await prefixed(['one\ntw', 'o\nthr', 'ee', '\n']);
    expect(output.join('')).toBe('[rank 1] one\n[rank 1] two\n[rank 1] three\n');
    for (const chunk of output) expect(chunk).toMatch(/\n$/);
  });

  it('passes on an unterminated last line, with a newline, when the stream ends', async () => {
    expect((await prefixed(['done\npart', 'ial'])).join('')).toBe('[rank 1] done\n[rank 1] partial\n');
  });

  it('keeps empty lines and carriage returns', async () => {
    expect((await prefixed(['a\r\n\nb\n'])).join('')).toBe('[rank 1] a\r\n[rank 1] \n[rank 1] b\n');
  });

  it('passes on output without newlines in pieces of at least 64 KiB, not all at the end', async () => {
    const piece = 'x'.repeat(40_000);
    const output = await prefixed([piece, piece, piece.slice(0, 10_000)]);
    expect(output).toEqual([`[rank 1] ${piece}${piece}\n`, `[rank 1] ${piece.slice(0, 10_000)}\n`]);
  });

  it('passes nothing for no input', async () => {
    expect(await prefixed([])).toEqual([]);
  });
});
