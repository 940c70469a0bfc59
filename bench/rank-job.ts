import { LocalJob } from '../lib/launch/local-job.js';
import { capturedOutput } from './captured-output.js';

/**
 * Runs `script` (a bench's own file, with `args`) as a tcp_peer job of `worldSize` rank processes,
 * as `rxccl launch` starts them, and returns the JSON of every line its ranks printed after
 * `marker ` (rank 0 prints them, by convention), in order. Fails with the job's failure.
 */
export async function rankJobLines<T>(worldSize: number, script: string, args: readonly string[], marker: string): Promise<T[]> {
  const captured = capturedOutput();
  const job = await LocalJob.start({
    worldSize,
    command: process.execPath,
    args: ['--import', 'tsx', script, ...args],
    transport: 'tcp_peer',
    env: process.env,
    stdout: captured.stream,
    stderr: process.stderr,
  });
  const outcome = await job.outcome;
  if (!outcome.ok) throw new Error(`the ${worldSize}-rank job failed: ${outcome.failure}`);
  return captured.text().split('\n').flatMap((line) => {
    const at = line.indexOf(`${marker} `);
    return at < 0 ? [] : [JSON.parse(line.slice(at + marker.length + 1)) as T];
  });
}
