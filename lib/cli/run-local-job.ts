import { constants } from 'node:os';
import { type JobOutcome, LocalJob, type LocalJobOptions } from '../launch/local-job.js';
import { settingsOf } from '../settings/read-settings.js';

const FORWARDED: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * Runs a local job for a command (`launch`, `probe`), forwarding the signals this process gets to
 * the ranks (SIGINT, SIGTERM, SIGHUP end the job; SIGUSR1 asks for flight records). A failed job is reported in one line on stderr; resolves with the outcome and the
 * exit status: 0, 1, or 128 + the signal's number when a signal ended it (as a shell reports it).
 */
export async function runLocalJob(command: string, options: LocalJobOptions): Promise<{ outcome: JobOutcome; status: number }> {
  const job = await LocalJob.start(options);
  const forward = (signal: NodeJS.Signals) => job.interrupt(signal);
  for (const signal of FORWARDED) process.on(signal, forward);
  const record = recordOnSignal(command, job, options.env ?? process.env);
  process.on('SIGUSR1', record);
  const outcome = await job.outcome;
  for (const signal of FORWARDED) process.off(signal, forward);
  process.off('SIGUSR1', record);
  if (outcome.ok) return { outcome, status: 0 };
  process.stderr.write(`rxccl ${command}: job failed: ${outcome.failure}\n`);
  return { outcome, status: outcome.interruptedBy !== null ? 128 + constants.signals[outcome.interruptedBy] : 1 };
}

/**
 * SIGUSR1 asks every rank for its flight record, where the ranks keep one (GX1_FLIGHT_RECORDER):
 * the job goes on. Without it a rank's Node.js would open its inspector instead, so the launcher
 * says what to set rather than pass it on.
 */
function recordOnSignal(command: string, job: LocalJob, env: NodeJS.ProcessEnv): () => void {
  if (settingsOf(env).GX1_FLIGHT_RECORDER.value !== undefined) return () => job.forward('SIGUSR1');
  return () => process.stderr.write(`rxccl ${command}: SIGUSR1 not passed on: the ranks keep no flight record (set GX1_FLIGHT_RECORDER=DIR, then rxccl trace merge DIR)\n`);
}
