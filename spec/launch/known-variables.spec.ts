/**
 * Unknown GX1_* variables are named, with the setting meant, instead of silently ignored (#34
 * item 7); the list of known ones is the set the sources read.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KNOWN_VARIABLES, unknownVariables } from '../../lib/launch/known-variables.js';
import { ROOT, runRxccl } from '../cli/rxccl-process.js';

afterEach(() => {
  vi.restoreAllMocks();
  vi.resetModules();
});

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? sources(join(directory, entry.name)) : /\.(ts|cc|h)$/.test(entry.name) ? [join(directory, entry.name)] : [],
  );
}

describe('GX1_* variables', () => {
  it('the known list is exactly what lib/ and native/ read (names, not prefixes or comments)', () => {
    const read = new Set(
      [...sources(join(ROOT, 'lib')), ...sources(join(ROOT, 'native'))]
        .filter((file) => !file.endsWith('known-variables.ts') && !file.endsWith('settings-table.ts'))
        .flatMap((file) => readFileSync(file, 'utf8').match(/'GX1_[A-Z0-9_]*[A-Z0-9]'|"GX1_[A-Z0-9_]*[A-Z0-9]"|GX1_[A-Z0-9_]*[A-Z0-9]\b/g) ?? [])
        .map((match) => match.replace(/['"]/g, '')),
    );
    // Named in text only: a constant's name.
    read.delete('GX1_JOB');
    expect([...read].sort()).toEqual([...KNOWN_VARIABLES].sort());
  });

  it('names each unknown one with the setting it most likely means', () => {
    expect(unknownVariables({ GX1_TRANSPORT: 'tcp_peer', GX1_RIGN_ORDER: '1,0', GX1_BANANA: '1', GX1_RANK: '0', PATH: '/bin' })).toEqual([
      { name: 'GX1_BANANA', meant: null },
      { name: 'GX1_RIGN_ORDER', meant: 'GX1_RING_ORDER' },
      { name: 'GX1_TRANSPORT', meant: 'GX1_COLLECTIVE_TRANSPORT' },
    ]);
  });

  it('warns once per process, and not when every variable is known', async () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => undefined);
    const { warnUnknownVariables } = await import('../../lib/launch/known-variables.js');
    warnUnknownVariables({ GX1_RANK: '0' });
    expect(warn).not.toHaveBeenCalled();
    warnUnknownVariables({ GX1_TRANSPORT: 'tcp_peer' });
    warnUnknownVariables({ GX1_TRANSPORT: 'tcp_peer' });
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]).toEqual([
      'rxccl ignores GX1_TRANSPORT (did you mean GX1_COLLECTIVE_TRANSPORT?): no such setting (the GX1_* variables: README.md)',
      { code: 'RXCCL_UNKNOWN_VARIABLE' },
    ]);
  });

  it('the command line says so on stderr', async () => {
    const result = await runRxccl(['--version'], { GX1_TRANSPORT: 'tcp_peer' });
    expect(result.stderr).toBe('');
    const help = await runRxccl(['trace', 'merge', '/nonexistent-rxccl-dir'], { GX1_TRANSPORT: 'tcp_peer' });
    expect(help.stderr).toContain('rxccl ignores GX1_TRANSPORT (did you mean GX1_COLLECTIVE_TRANSPORT?)');
  });
});
