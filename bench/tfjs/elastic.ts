/**
 * Elastic TensorFlow.js training (#48 item 2, "Elastic"): examples/tfjs-train.ts --elastic under
 * `rxccl launch --keep-going --replace 1 -n 4`, rank 3 killed (SIGKILL) at the first step of
 * epoch `--kill-epoch`, against the same run uninterrupted, `--rounds` times each, alternated.
 * Read off the example's lines (wall-clock ms, one host): from the kill to the first step done on
 * 3 ranks, from the kill to the first step done on 4 again (the replacement admitted: its process
 * starting, loading tfjs, joining), and the final loss against the uninterrupted run's.
 *
 *   npx tsx bench/tfjs/elastic.ts [--rounds 3] [--epochs 20] [--kill-epoch 2]
 *
 * Printed: each round's figures, then medians with their min-max. Backend: tfjs's cpu.
 */
import { spawnSync } from 'node:child_process';
import { median } from '../../lib/diagnostics/median.js';
import { option } from '../argv.js';

const rounds = Number(option('--rounds', '3'));
const epochs = Number(option('--epochs', '20'));
const killEpoch = Number(option('--kill-epoch', '2'));

function run(kill: boolean): string {
  const args = ['bin/rxccl.mjs', 'launch', '--keep-going', '--replace', '1', '-n', '4', '--', process.execPath, '--import', 'tsx', 'examples/tfjs-train.ts', '--elastic', '--epochs', String(epochs)];
  if (kill) args.push('--kill-rank', '3', '--kill-epoch', String(killEpoch));
  const result = spawnSync(process.execPath, args, { encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`the job failed (${result.status}): ${result.stderr}`);
  return result.stdout;
}

const number = (text: string, pattern: RegExp) => {
  const match = pattern.exec(text);
  if (match === null) throw new Error(`no ${pattern} in the output:\n${text}`);
  return Number(match[1]);
};

const rows: { shrunkMs: number; grownMs: number; relative: number }[] = [];
for (let round = 0; round < rounds; round++) {
  const reference = number(run(false), /\[rank 0\] final loss (\S+)/);
  const output = run(true);
  const died = number(output, /rank 3 dies at epoch \d+ at (\d+)/);
  const onThree = number(output, /\[rank 0\] step \d+ done on 3 ranks at (\d+)/);
  const onFour = number(output, /\[rank 0\] step \d+ done on 4 ranks at (\d+)/);
  const final = number(output, /\[rank 0\] final loss (\S+)/);
  const row = { shrunkMs: onThree - died, grownMs: onFour - died, relative: Math.abs(final - reference) / reference };
  rows.push(row);
  console.log(`round ${round}: on 3 ranks ${row.shrunkMs} ms after the kill, on 4 again ${row.grownMs} ms after; final loss ${final} vs ${reference} uninterrupted (relative ${row.relative.toExponential(2)})`);
}
const summary = (values: number[], unit: string, digits = 0) =>
  `${median(values).toFixed(digits)} ${unit} (${Math.min(...values).toFixed(digits)}-${Math.max(...values).toFixed(digits)})`;
console.log(`medians over ${rounds} rounds, 4 ranks, one host, ${epochs} epochs, rank 3 killed at epoch ${killEpoch}:`);
console.log(`  kill -> first step on 3 ranks: ${summary(rows.map((row) => row.shrunkMs), 'ms')}`);
console.log(`  kill -> first step on 4 ranks (replacement admitted): ${summary(rows.map((row) => row.grownMs), 'ms')}`);
console.log(`  final loss, relative to the uninterrupted run: ${median(rows.map((row) => row.relative)).toExponential(2)} (max ${Math.max(...rows.map((row) => row.relative)).toExponential(2)})`);
