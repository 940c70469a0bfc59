/**
 * The rule of #49 item 9: the GX1_* variables are read in one place, the settings module
 * (lib/settings/), into the settings object the rest receives. This scan of lib/'s sources fails
 * where another file reads one from an environment object itself.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * Files allowed to read a variable themselves, and why. The debug log is below every layer (the
 * settings read through it too) and sets its level as the process loads, before anything could
 * hand it settings, as NCCL reads NCCL_DEBUG apart from its parameter table.
 */
const ALLOWED: Record<string, string> = {
  'lib/diagnostics/debug-log.ts': 'GX1_DEBUG, read as the process loads',
};

/** Sources without their comments: what they say about a variable is not a read. */
function code(text: string): string {
  return text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
}

/** Where `source` reads a GX1_* variable off an object other than the settings (`env.GX1_X`, `env['GX1_X']`); writes for a child's environment are not reads. */
function directReads(source: string): string[] {
  const property = /(\w+)(\?)?\.(GX1_[A-Z0-9_]+)(?![A-Z0-9_]|\s*=[^=])/g;
  const indexed = /[\w\])]\s*\[\s*['"`](GX1_[A-Z0-9_]+)['"`]\s*\](?!\s*=[^=])/g;
  const reads: string[] = [];
  for (const line of code(source).split('\n')) {
    if (/^\s*delete\s/.test(line)) continue;
    for (const match of line.matchAll(property)) if (match[1] !== 'settings') reads.push(match[0]);
    for (const match of line.matchAll(indexed)) reads.push(match[0]);
  }
  return reads;
}

function sources(directory: string): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    return entry.isDirectory() ? sources(path) : entry.name.endsWith('.ts') ? [path] : [];
  });
}

describe('the GX1_* variables are read only by the settings module', () => {
  it('the scan sees a read, and passes a write for a child and a read of the settings', () => {
    expect(directReads('const rails = env.GX1_P2P_RAILS;')).toEqual(['env.GX1_P2P_RAILS']);
    expect(directReads("const rails = process.env['GX1_P2P_RAILS'];")).toEqual(["v['GX1_P2P_RAILS']"]);
    expect(directReads('if (env?.GX1_SECRET) return;')).toEqual(['env?.GX1_SECRET']);
    expect(directReads("process.env.GX1_COLLECTIVE_ALGORITHM = 'ring';\ndelete process.env.GX1_TOPOLOGY_LINKS;")).toEqual([]);
    expect(directReads('const rails = settings.GX1_P2P_RAILS.value; // not env.GX1_P2P_RAILS')).toEqual([]);
  });

  it('no file of lib/ outside lib/settings/ reads one from an environment', () => {
    const found = sources('lib')
      .filter((file) => !file.startsWith(join('lib', 'settings')) && !(file in ALLOWED))
      .flatMap((file) => directReads(readFileSync(file, 'utf8')).map((read) => `${file}: ${read}`));
    expect(found, 'read it from the settings object (lib/settings/read-settings.ts) instead').toEqual([]);
  });
});
