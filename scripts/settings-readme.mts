/**
 * Writes README.md's two tables of `GX1_*` variables from the settings table
 * (lib/settings/settings-table.ts), between their markers:
 *
 *   npx tsx scripts/settings-readme.mts
 *
 * spec/settings/settings-table.spec.ts fails where README.md differs from what this writes.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { readmeWithSettings } from '../lib/settings/settings-table.js';

const readme = fileURLToPath(new URL('../README.md', import.meta.url));
writeFileSync(readme, readmeWithSettings(readFileSync(readme, 'utf8')));
console.log(`wrote the settings tables of ${readme}`);
