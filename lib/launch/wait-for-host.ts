import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import { ConfigurationError } from '../errors.js';

const RETRY_DELAY_MS = 250;
/** What `getaddrinfo` says about a name that does not exist (yet). */
const NOT_YET = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_NONAME']);

/**
 * Waits until `host` resolves. Under a cluster scheduler the coordinator's name may appear only
 * once its pod or node is up (a Kubernetes headless Service publishes pod 0's name when pod 0
 * runs), while connecting retries only refused connections, not unknown names.
 */
export async function waitUntilResolvable(host: string, timeoutMs: number): Promise<void> {
  if (isIP(host) !== 0) return;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      await lookup(host);
      return;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      if (!NOT_YET.has(code) || Date.now() + RETRY_DELAY_MS >= deadline) {
        throw new ConfigurationError(
          `cannot resolve the coordinator host ${JSON.stringify(host)} (${code || (error as Error).message}` +
            `${NOT_YET.has(code) ? `, retried for ${timeoutMs} ms` : ''}); check GX1_COORDINATOR_HOST or the launcher's host variables`,
          { cause: error },
        );
      }
      await new Promise((resolve) => setTimeout(resolve, RETRY_DELAY_MS));
    }
  }
}
