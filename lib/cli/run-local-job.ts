import { constants } from 'node:os';
import { type JobOutcome, LocalJob, type LocalJobOptions } from '../launch/local-job.js';

const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Runs a local job for a command (`launch`, `probe`), forwarding the signals this process gets to
 * the ranks. A failed job is reported in one line on stderr; resolves with the outcome and the
 * exit status: 0, 1, or 128 + the signal's number when a signal ended it (as a shell reports it).
 */
export async function runLocalJob(command: string, options: LocalJobOptions): Promise<{ outcome: JobOutcome; status: number }> {
  const job = await LocalJob.start(options);
  const forward = (signal: NodeJS.Signals) => job.interrupt(signal);
  for (const signal of FORWARDED) process.on(signal, forward);
  const outcome = await job.outcome;
  for (const signal of FORWARDED) process.off(signal, forward);
  if (outcome.ok) return { outcome, status: 0 };
  process.stderr.write(`rxccl ${command}: job failed: ${outcome.failure}\n`);
  return { outcome, status: outcome.interruptedBy !== null ? 128 + constants.signals[outcome.interruptedBy] : 1 };
}
