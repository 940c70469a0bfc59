import { ConfigurationError } from '../errors.js';

/**
 * Expands a Slurm host list (`SLURM_JOB_NODELIST`) as `scontrol show hostnames` does:
 * `node[01-03,07],gpu5` -> node01 node02 node03 node07 gpu5. Ranges keep the zero padding of
 * their first bound, and several bracket groups in one name multiply (`r[1-2]n[1-2]` -> r1n1 r1n2
 * r2n1 r2n2). Ranks cannot run `scontrol` themselves (it may not be installed in the container),
 * so the expansion is done here.
 */
export function expandHostList(list: string, source = 'SLURM_JOB_NODELIST'): string[] {
  const invalid = (why: string) => new ConfigurationError(`${source} ${JSON.stringify(list)} is not a Slurm host list: ${why}`);
  const hosts: string[] = [];
  for (const entry of splitTopLevel(list, invalid)) {
    if (entry === '') throw invalid('empty host name');
    let names = [''];
    // Alternating literal text and bracket groups: each group multiplies the names so far.
    for (const part of entry.split(/(\[[^\]]*\])/)) {
      if (part.startsWith('[')) {
        const choices = expandGroup(part.slice(1, -1), invalid);
        names = names.flatMap((prefix) => choices.map((choice) => prefix + choice));
      } else if (part.includes('[') || part.includes(']')) {
        throw invalid('unbalanced brackets');
      } else {
        names = names.map((prefix) => prefix + part);
      }
    }
    hosts.push(...names);
  }
  return hosts;
}

/** Splits on the commas that are not inside brackets. */
function splitTopLevel(list: string, invalid: (why: string) => Error): string[] {
  const entries: string[] = [];
  let depth = 0;
  let start = 0;
  for (let index = 0; index < list.length; index++) {
    const char = list[index];
    if (char === '[') depth += 1;
    if (char === ']') depth -= 1;
    if (depth < 0 || depth > 1) throw invalid('unbalanced brackets');
    if (char === ',' && depth === 0) {
      entries.push(list.slice(start, index).trim());
      start = index + 1;
    }
  }
  if (depth !== 0) throw invalid('unbalanced brackets');
  entries.push(list.slice(start).trim());
  return entries;
}

/** `01-03,07` -> 01 02 03 07. */
function expandGroup(group: string, invalid: (why: string) => Error): string[] {
  return group.split(',').flatMap((item) => {
    const match = /^(\d+)(?:-(\d+))?$/.exec(item.trim());
    if (!match) throw invalid(`bad range ${JSON.stringify(item)}`);
    const first = Number(match[1]);
    const last = match[2] === undefined ? first : Number(match[2]);
    if (last < first) throw invalid(`range ${item} runs backwards`);
    const width = match[1]!.length;
    return Array.from({ length: last - first + 1 }, (_, offset) => String(first + offset).padStart(width, '0'));
  });
}
