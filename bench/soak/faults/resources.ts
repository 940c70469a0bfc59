import { readdirSync } from 'node:fs';
import { runInNewContext } from 'node:vm';
import { setFlagsFromString } from 'node:v8';

/**
 * What a process holds: its resident memory, its open file descriptors (sockets, pipes, files),
 * and of its memory what V8 tracks: live JavaScript objects, and memory outside the heap that
 * objects own (buffers' backing stores, the addon's reported allocations).
 */
export interface Resources {
  readonly rssBytes: number;
  readonly fds: number;
  readonly heapUsedBytes: number;
  readonly externalBytes: number;
}

// A full collection before each sample, so the samples compare what is retained, not how much
// garbage the last epoch left: a leak then shows as growth, not as noise. Exposed here rather
// than by a node flag so the bench runs however it is started (tsx, node --import tsx).
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;

/** Collects garbage, then samples; on Linux (the descriptors are read from /proc/self/fd). */
export function sampleResources(): Resources {
  collectGarbage();
  // The listing counts the descriptor that reads it: the same one in every sample.
  const { rss, heapUsed, external } = process.memoryUsage();
  return { rssBytes: rss, fds: readdirSync('/proc/self/fd').length, heapUsedBytes: heapUsed, externalBytes: external };
}
