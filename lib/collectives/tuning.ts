import { ConfigurationError } from '../errors.js';
import type { CollectiveTopology } from '../topology/collective-topology.js';
import {
  type AlgorithmPolicy,
  parseAlgorithmPolicy,
  parseByteCount,
  parseRingOrder,
  parseTopologyLinks,
  validateRingChannels,
  validateRingOrder,
} from '../topology/ring-tuning.js';

/** The reference's default: from 256 KiB, `auto` sends data rank to rank. */
export const DEFAULT_RING_THRESHOLD_BYTES = 256 * 1024;

/**
 * How a job chooses and shapes its collective algorithms: the seed crate's tuning surface
 * (src/rank/topology.rs), same variable names, same validation messages. Session options mirror
 * the variables; an option given wins over its variable.
 */
export interface TuningOptions {
  /** `GX1_COLLECTIVE_ALGORITHM`: auto (default), direct (through the coordinator), ring, hierarchical. */
  readonly algorithm?: AlgorithmPolicy | string;
  /** `GX1_RING_THRESHOLD_BYTES`: under `auto`, tensors from this size use the ring family (default 256 KiB). */
  readonly ringThresholdBytes?: number;
  /** `GX1_RING_ORDER`: the ring, every rank once ("0,2,1,3"); default the topology's best ring order. */
  readonly ringOrder?: readonly number[] | string;
  /** `GX1_RING_CHANNELS`: parts a ring algorithm stripes its tensor over, 1..64 (default 1). */
  readonly ringChannels?: number;
  /** `GX1_TOPOLOGY_LINKS`: `probe` (measure at open, tcp_peer) or links "0-1:MBps:ns,..." the ring order is chosen from. */
  readonly topologyLinks?: string;
}

export interface CollectiveTuning {
  readonly algorithm: AlgorithmPolicy;
  readonly ringThresholdBytes: number;
  /** The explicit ring order, or null: the topology's best order decides. */
  readonly ringOrder: readonly number[] | null;
  readonly ringChannels: number;
  /** Links to choose the ring from; `probe`: measure them when the session opens; null: uniform. */
  readonly topology: CollectiveTopology | 'probe' | null;
}

/** Resolves the tuning of one rank from its options, else its environment. */
export function resolveTuning(options: TuningOptions, worldSize: number, env: Readonly<Record<string, string | undefined>>): CollectiveTuning {
  const algorithm =
    options.algorithm !== undefined
      ? parseAlgorithmPolicy(String(options.algorithm), 'algorithm')
      : parseAlgorithmPolicy(env.GX1_COLLECTIVE_ALGORITHM ?? 'auto');
  if (algorithm === 'hierarchical') {
    // The reference needs GX1_TOPOLOGY_GROUPS for it; rxccl has neither groups nor the algorithm yet.
    throw new ConfigurationError(
      'invalid collective hierarchy: GX1_COLLECTIVE_ALGORITHM=hierarchical requires explicit or inferred topology groups ' +
        '(rxccl has no hierarchical algorithm yet: use auto, direct or ring)',
    );
  }
  const ringThresholdBytes =
    options.ringThresholdBytes !== undefined
      ? parseByteCount('ringThresholdBytes', String(options.ringThresholdBytes))
      : env.GX1_RING_THRESHOLD_BYTES !== undefined
        ? parseByteCount('GX1_RING_THRESHOLD_BYTES', env.GX1_RING_THRESHOLD_BYTES)
        : DEFAULT_RING_THRESHOLD_BYTES;
  const order = options.ringOrder ?? env.GX1_RING_ORDER;
  const ringOrder = order === undefined ? null : typeof order === 'string' ? parseRingOrder(worldSize, order) : validateRingOrder(worldSize, order);
  const ringChannels = validateRingChannels(
    options.ringChannels ?? (env.GX1_RING_CHANNELS === undefined ? 1 : parseByteCount('GX1_RING_CHANNELS', env.GX1_RING_CHANNELS)),
  );
  const links = options.topologyLinks ?? env.GX1_TOPOLOGY_LINKS;
  const topology = links === undefined ? null : links.trim().toLowerCase() === 'probe' ? 'probe' : parseTopologyLinks(worldSize, links);
  return { algorithm, ringThresholdBytes, ringOrder, ringChannels, topology };
}
