/**
 * A one-line progress bar for a terminal, redrawn in place, with the rate so far and the time
 * left at that rate: `[#######.............]  7/20 cells  1.4 cells/s  ETA 0:09`.
 */
export interface ProgressBar {
  /** Draws the bar for `done` of `total`; ends the line when all are done. */
  update(done: number, total: number): void;
  /** Erases the bar, so that a line can be printed where it was; the next update redraws it. */
  clear(): void;
}

export function progressBar(write: (text: string) => void, { width = 30, now = () => performance.now() } = {}): ProgressBar {
  const started = now();
  let drawn = false;
  return {
    update(done, total) {
      const filled = total === 0 ? width : Math.round((done / total) * width);
      const seconds = (now() - started) / 1e3;
      const rate = seconds > 0 ? done / seconds : 0;
      const eta = rate > 0 ? clock((total - done) / rate) : '-:--';
      const count = `${String(done).padStart(String(total).length)}/${total} cells`;
      write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${count}  ${rate.toFixed(1)} cells/s  ETA ${eta}\x1b[K${done === total ? '\n' : ''}`);
      drawn = done !== total;
    },
    clear() {
      if (drawn) write('\r\x1b[K');
      drawn = false;
    },
  };
}

/** `m:ss`, or `h:mm:ss` from an hour. */
function clock(seconds: number): string {
  const whole = Math.round(seconds);
  const [h, m, s] = [Math.floor(whole / 3600), Math.floor((whole % 3600) / 60), whole % 60];
  const pad = (value: number) => String(value).padStart(2, '0');
  return h > 0 ? `${h}:${pad(m)}:${pad(s)}` : `${m}:${pad(s)}`;
}
