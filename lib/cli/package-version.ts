import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { packageRoot } from '../kernels/addon.js';

/** This package's version, from its package.json (found from lib/cli or dist/lib/cli alike). */
export function packageVersion(): string {
  return (JSON.parse(readFileSync(join(packageRoot(), 'package.json'), 'utf8')) as { version: string }).version;
}
