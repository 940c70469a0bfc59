/**
 * The parameters of the choice's cost model (./choice-cost.ts), in one table, as NCCL keeps its
 * tuning.cc constants beside param.cc: what a message costs on each plane and kind of link. Every
 * rank of a job reads the same table, so every rank makes the same choice; an implementation
 * that joins an rxccl job must use these numbers (docs/protocol.md 9.10 lists them).
 *
 * The figures are this project's measurements on its 2-core test machine (bench/README.md), not
 * a claim about other hardware; a job whose hardware differs says so with a profile
 * (`rxccl tune`, GX1_COLLECTIVE_AUTOTUNE_PROFILE), which overrides the model, or with its links
 * (GX1_TOPOLOGY_LINKS), which replace the latency and bandwidth below link by link.
 */

/** Where two ranks are to each other: on one host (TCP loopback, or single copy) or across hosts. */
export type LinkClass = 'same host' | 'across hosts';

/** What a message costs on one kind of link of one plane. */
export interface LinkCost {
  /** ns a message on the critical path adds (the wire's latency and both ends' wake-ups). */
  readonly latencyNs: number;
  /** MB/s one directed link carries (across hosts also each host's one way out). */
  readonly bandwidthMbps: number;
}

/** What the planes cost beside their links. */
export interface PlaneCost {
  readonly links: Readonly<Record<LinkClass, LinkCost>>;
  /** ns of CPU a rank spends per message it sends or receives (a system call, a header, a wake-up). */
  readonly messageNs: number;
  /** MB/s a rank reads while folding (a reduction reads each source once, a copy its one). */
  readonly foldMbps: number;
  /**
   * Payloads of at least this many bytes between ranks of one host are copied by their receiver,
   * out of the sender's memory (single copy, docs/protocol.md 9.9: the protocol's 262144); null
   * where the plane has no single copy. Then the sender spends nothing on them.
   */
  readonly readByReceiverFromBytes: number | null;
}

/**
 * The two planes that run schedules. The native plane's same-host bandwidth is single copy's
 * (`GX1_SINGLE_COPY=auto`, the default: one copy out of the sender's memory instead of TCP's two):
 * 2 ranks' 64 MiB all-reduce 18-22 ms with it, 74-91 ms without (bench/README.md, "Single copy on
 * one host"). Across hosts: network namespaces over a veth bridge (53-70 us for an 8 B all-reduce
 * at 2 hosts, about 1 GB/s). The JS plane pays its event loop per message (bench/README.md,
 * "Per call": 7.6 us of JavaScript per call, a loopback crossing 6-15 us).
 */
export const COST_SETTINGS: Readonly<Record<'native' | 'js', PlaneCost>> = {
  native: {
    links: { 'same host': { latencyNs: 10_000, bandwidthMbps: 4_000 }, 'across hosts': { latencyNs: 50_000, bandwidthMbps: 1_000 } },
    messageNs: 3_500,
    foldMbps: 8_000,
    readByReceiverFromBytes: 262_144,
  },
  js: {
    links: { 'same host': { latencyNs: 30_000, bandwidthMbps: 1_000 }, 'across hosts': { latencyNs: 60_000, bandwidthMbps: 1_000 } },
    messageNs: 15_000,
    foldMbps: 2_000,
    readByReceiverFromBytes: null,
  },
};
