import { debugLog } from '../diagnostics/debug-log.js';
import { RxcclError } from '../errors.js';
import { rankErrorLine } from './rank-error-line.js';

let installed = false;

/**
 * How a rank dies of an rxccl error nobody caught (a wrong GX1_* variable, a lost peer): one line
 * on stderr, `rxccl: INVALID_CONFIGURATION: GX1_DATA_PLANE must be one of ...`, and exit code 1,
 * rather than Node's excerpt of the throwing line, the stack and the version, from every rank.
 * The error is expected and its message says what to do; the stack says only where rxccl noticed.
 * `rxccl launch` reads that line back to name the root cause in its own last line.
 *
 * `openSession()` installs it, once per process and only when the program has no
 * 'uncaughtException' listener of its own; it acts only while it is the only one, so a handler the
 * program adds later takes over. Any error that is not an `RxcclError` it hands back to Node
 * unchanged, and with `GX1_DEBUG=info` or `trace` an rxccl error too, after its line: Node then
 * prints it in full, stack included, and exits 1 as without rxccl (the excerpt it shows is the
 * line below that throws it again). Unhandled rejections come here too: with no
 * 'unhandledRejection' listener Node raises them as uncaught exceptions.
 */
export function reportUncaughtRxcclErrors(): void {
  if (installed || process.listenerCount('uncaughtException') > 0) return;
  installed = true;
  process.on('uncaughtException', report);
}

function report(error: unknown): void {
  if (process.listenerCount('uncaughtException') > 1) return;
  if (error instanceof RxcclError) {
    process.stderr.write(`${rankErrorLine(error)}\n`);
    if (!debugLog.enabled('info')) process.exit(1);
  }
  process.off('uncaughtException', report);
  process.nextTick(() => {
    throw error; // not rxccl's to shorten (or GX1_DEBUG asked for the stack): uncaught, as without rxccl
  });
}
