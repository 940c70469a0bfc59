import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

const SPECS = 'spec/**/*.spec.ts';

/**
 * What marks a spec that starts OS processes: rank processes, the CLI, launchers, compilers,
 * python3. Those run one file at a time, after the others, as their deadlines and socket counts
 * assume the machine's cores are theirs. Every other spec (pure functions, property tests, jobs
 * of ranks in one process) runs two files at a time: one such file mostly keeps one core busy or
 * waits on a timer, so run one by one they left a core of a 2-core CI machine idle, and the suite
 * came within 12 s of CI's 20 minutes.
 */
const STARTS_PROCESSES = /node:child_process|spawnRank|cleanUpJobsAfterEach|killAll|startRxccl|runRxccl|compiledNode|compiled-script|cross-memory|netns-node|rank-child|growable-job|rxccl-cli|data-plane-peer|fail-shared-memory/;

const specDirectory = fileURLToPath(new URL('./spec/', import.meta.url));
const startsProcesses = readdirSync(specDirectory, { recursive: true, encoding: 'utf8' })
  .filter((file) => file.endsWith('.spec.ts') && STARTS_PROCESSES.test(readFileSync(specDirectory + file, 'utf8')))
  .map((file) => `spec/${file}`);

export default defineConfig({
  test: {
    // The native addon needs real typed arrays from one realm: forks, never vm pools.
    pool: 'forks',
    // The JSON summary lets .ci/run print a plain "N passed, N failed" closing line.
    reporters: ['default', ['json', { outputFile: 'node_modules/.cache/rxccl/vitest-results.json' }]],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    projects: [
      { extends: true, test: { name: 'in-process', include: [SPECS], exclude: startsProcesses, maxWorkers: 2, sequence: { groupOrder: 0 } } },
      { extends: true, test: { name: 'processes', include: startsProcesses, maxWorkers: 1, sequence: { groupOrder: 1 } } },
    ],
  },
});
