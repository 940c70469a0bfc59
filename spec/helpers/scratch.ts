import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/**
 * For a spec file: returns a function that makes a fresh temporary directory (`prefix` plus
 * random letters); every one made is removed after each test.
 */
export function scratchDirectories(prefix: string): () => string {
  const made: string[] = [];
  afterEach(() => {
    for (const directory of made.splice(0)) rmSync(directory, { recursive: true, force: true });
  });
  return () => {
    const directory = mkdtempSync(join(tmpdir(), prefix));
    made.push(directory);
    return directory;
  };
}
