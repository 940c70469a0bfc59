import type { Readable, Writable } from 'node:stream';

/**
 * One destination (the launcher's stdout or stderr) shared by every rank's output. Piping each
 * rank into it would add five listeners per rank to it ('unpipe', 'error', 'close', 'finish' and
 * 'drain'), so from 11 ranks on Node would warn MaxListenersExceededWarning on every job. Here the
 * destination carries one 'drain' listener at most, while some source waits: a source whose chunk
 * the destination could not take at once is paused until it drains, the backpressure a pipe gives.
 */
export class SharedOutput {
  private readonly waiting = new Set<Readable>();

  constructor(private readonly destination: Writable) {}

  /** Passes `source` on, chunk by chunk, until it ends; the destination itself is never ended. */
  add(source: Readable): void {
    source.on('data', (chunk: Buffer) => {
      if (this.destination.write(chunk)) return;
      source.pause();
      if (this.waiting.size === 0) this.destination.once('drain', this.resume);
      this.waiting.add(source);
    });
  }

  private readonly resume = (): void => {
    const waiting = [...this.waiting];
    this.waiting.clear();
    for (const source of waiting) source.resume();
  };
}
