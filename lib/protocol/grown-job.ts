import { ProtocolError } from '../errors.js';
import { UniqueId } from './unique-id.js';

/**
 * The job a fault-tolerant job grows into (docs/protocol.md 13.9), as the coordinator admits a
 * process to it: where its coordinator listens (a port on the host the job's coordinator has),
 * its id, the process's rank and the new world size. Ranks below `members` carry the job on (the
 * old job's ranks, in the order the grow request gave); the ranks from `members` on are newcomers.
 */
export interface GrownJob {
  readonly port: number;
  readonly uniqueId: UniqueId;
  readonly rank: number;
  readonly worldSize: number;
  readonly members: number;
}

const FIELDS = ['port', 'unique-id', 'rank', 'world-size', 'members'] as const;

/** The admission's text: `port=P unique-id=HEX rank=R world-size=W members=M`, in that order. */
export function formatGrownJob(job: GrownJob): string {
  return `port=${job.port} unique-id=${job.uniqueId.toHex()} rank=${job.rank} world-size=${job.worldSize} members=${job.members}`;
}

/** Reads an admission's text (`formatGrownJob`), refusing anything else with a ProtocolError naming what was wrong. */
export function readGrownJob(text: string): GrownJob {
  const words = text.split(' ');
  const refuse = (why: string) => new ProtocolError(`invalid admission ${JSON.stringify(text.slice(0, 200))}: ${why}`);
  if (words.length !== FIELDS.length) throw refuse(`${words.length} fields, expected ${FIELDS.length} (${FIELDS.join(', ')})`);
  const values = words.map((word, index) => {
    const name = FIELDS[index]!;
    if (!word.startsWith(`${name}=`)) throw refuse(`field ${index + 1} must be ${name}=`);
    return word.slice(name.length + 1);
  });
  const integer = (value: string, name: string, low: number, high: number) => {
    if (!/^(0|[1-9]\d{0,9})$/.test(value) || Number(value) < low || Number(value) > high) throw refuse(`${name} ${JSON.stringify(value)} is not an integer in ${low}..${high}`);
    return Number(value);
  };
  const [port, hex, rank, worldSize, members] = values as [string, string, string, string, string];
  if (!/^[0-9a-f]{32}$/.test(hex)) throw refuse('unique-id must be 32 lowercase hex digits');
  const job: GrownJob = {
    port: integer(port, 'port', 1, 65535),
    uniqueId: UniqueId.fromHex(hex),
    rank: integer(rank, 'rank', 0, 0xfffffffe),
    worldSize: integer(worldSize, 'world-size', 1, 0xfffffffe),
    members: integer(members, 'members', 1, 0xfffffffe),
  };
  if (job.rank >= job.worldSize || job.members > job.worldSize) throw refuse(`rank ${job.rank} and members ${job.members} must be within world size ${job.worldSize}`);
  return job;
}
