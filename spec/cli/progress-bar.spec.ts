import { expect, it } from 'vitest';
import { progressBar } from '../../lib/cli/progress-bar.js';

it('draws a bar in place with the rate and time left, and ends the line when done', () => {
  const written: string[] = [];
  let seconds = 0;
  const bar = progressBar((text) => written.push(text), { width: 10, now: () => seconds * 1e3 });
  bar.update(0, 4);
  seconds = 2;
  bar.update(1, 4);
  bar.clear();
  seconds = 8;
  bar.update(4, 4);
  bar.clear();
  expect(written).toEqual([
    '\r[..........] 0/4 cells  0.0 cells/s  ETA -:--\x1b[K',
    '\r[###.......] 1/4 cells  0.5 cells/s  ETA 0:06\x1b[K',
    '\r\x1b[K',
    '\r[##########] 4/4 cells  0.5 cells/s  ETA 0:00\x1b[K\n',
  ]);
});
