import { expect, it } from 'vitest';
import { progressBar } from '../../lib/cli/bench-command.js';

it('draws a bar in place and ends the line when done', () => {
  const written: string[] = [];
  const update = progressBar((text) => written.push(text), 10);
  update(0, 4);
  update(1, 4);
  update(4, 4);
  expect(written).toEqual(['\r[..........] 0/4 cells', '\r[###.......] 1/4 cells', '\r[##########] 4/4 cells\n']);
});
