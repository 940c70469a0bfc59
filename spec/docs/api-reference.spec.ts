/**
 * docs/api.md is generated from the doc comments (scripts/api-reference.mjs): the page must be
 * current and every name 'rxccl', 'rxccl/testing' and 'rxccl/tfjs' export must have a doc comment, so a new
 * export without one, or a changed signature, fails `npm test` (and CI) until documented.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';

function apiReference(args: string[]): { status: number | null; stdout: string; stderr: string } {
  return spawnSync(process.execPath, ['scripts/api-reference.mjs', ...args], { encoding: 'utf8' });
}

describe('the API reference (docs/api.md)', () => {
  it('is current and documents every exported name', () => {
    const { status, stderr } = apiReference(['--check']);
    expect(stderr).toBe('');
    expect(status).toBe(0);
    const page = readFileSync('docs/api.md', 'utf8');
    for (const heading of ['## `rxccl`', '## `rxccl/testing`', '## `rxccl/tfjs`', '#### DistributedOptimizer', '#### RankSession', '#### openSession', '#### retryOnShrink', '#### allReduce']) expect(page).toContain(heading);
  }, 60_000);

  it('names an export without a doc comment, and a page that is missing or stale', () => {
    const directory = mkdtempSync(join(tmpdir(), 'rxccl-api-'));
    onTestFinished(() => rmSync(directory, { recursive: true, force: true }));
    const out = join(directory, 'api.md');
    const entry = ['--entry', 'fixture=spec/docs/fixtures/api-entry.ts', '--out', out];

    const missing = apiReference(['--check', ...entry]);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toContain('exported without a doc comment: fixture: bare');
    expect(missing.stderr).toContain('is missing: run node scripts/api-reference.mjs');

    expect(apiReference(entry).status).toBe(0);
    const page = readFileSync(out, 'utf8');
    expect(page).toContain('function documented(value: number): number');
    expect(page).toContain('Adds one: documented, so listed with this text.');
    expect(page).toContain('const bare: 7');

    const written = apiReference(['--check', ...entry]);
    expect(written.status).toBe(1);
    expect(written.stderr).not.toContain('stale');
    expect(written.stderr).toContain('fixture: bare');
  }, 60_000);
});
