import { Writable } from 'node:stream';

/** A stream that keeps what is written to it (a local job's ranks' lines, for a bench to read its results from). */
export function capturedOutput(): { readonly stream: Writable; text(): string } {
  let text = '';
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      text += chunk.toString('utf8');
      done();
    },
  });
  return { stream, text: () => text };
}
