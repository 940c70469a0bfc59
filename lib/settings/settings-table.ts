import { parseAlgorithmPolicy, parseByteCount, validateRingChannels } from '../topology/ring-tuning.js';
import { parsePositive } from '../topology/environment-values.js';
import { probeVariable } from '../topology/probe-options.js';
import { DEFAULT_DIRECT_BANDWIDTH_MBPS, DEFAULT_DIRECT_LATENCY_NS } from '../topology/link-tuning.js';
import { DEFAULT_GROUP_PAYLOAD_BYTES } from '../topology/topology-groups.js';
import { resolveFaultTolerance, resolveJoin } from '../transport/fault-tolerance.js';
import { DEFAULT_TRANSPORT, parseRails, parseTransport } from '../transport/transport-kind.js';
import { MAX_BUSY_POLL_MICROS, MAX_INLINE_MICROS, MAX_SPIN_MICROS, microsVariable } from './micros-setting.js';
import { DATA_PLANE_SETTINGS, SHARED_MEMORY_SETTINGS, SINGLE_COPY_SETTINGS } from './plane-settings.js';
import { asText, isSet, oneOf, positiveInteger, timeoutMs, trimmedText } from './variable-parsers.js';

/**
 * Every `GX1_*` variable rxccl reads, in one table (NCCL's param.cc is the model): for each
 * variable its type, default and parser, the `SessionOptions` (or tuning) fields that win over the
 * row's variables, and what they mean. `readSettings` (settings/read-settings.ts) reads every
 * variable once, by its parser, into the frozen settings object the session, the coordinator, the
 * launchers and the CLI receive; README.md's two variable tables are this table, rendered
 * (`settingsMarkdown`; spec/settings/settings-table.spec.ts fails where they differ); the list of
 * known names that catches a misspelt variable is its variables; and `rxccl doctor` shows each
 * variable's effective value and where it came from.
 */

/** How one variable is read. */
export interface VariableSpec<T> {
  /** What a value is, for people (`integer 1..64`). */
  readonly type: string;
  /** What applies where it is unset, for people (`1`). */
  readonly default: string;
  /**
   * Its text as set (undefined where unset) to its value, the default where unset. A bad value is
   * refused with a ConfigurationError naming the variable. Variables whose check needs the job (a
   * ring order needs the world size) are read as text here and parsed where the job is known,
   * naming the variable too (`readSetting`).
   */
  readonly parse: (text: string | undefined, variable: string) => T;
}

/** One row: variables read together, the options standing for them, what they mean. */
export interface SettingRow {
  /** Which table of README.md lists it: the job's variables, or the algorithm choice's. */
  readonly group: 'job' | 'algorithm';
  readonly variables: { readonly [variable: string]: VariableSpec<unknown> };
  /** How the row names its variables where not one by one (`GX1_TOPOLOGY_PROBE_{LATENCY,...}_ITERATIONS`). */
  readonly heading?: string;
  /** The options of `openSession()` (or its tuning) that stand for the variables and win over them. */
  readonly options: readonly string[];
  /** What the variables mean: values, default, who reads them (markdown, one line). */
  readonly meaning: string;
}

export const SETTINGS = [
  {
    group: 'job',
    variables: {
      GX1_COORDINATOR: { type: 'host:port', default: 'none: rank 0 hosts one (a cluster launcher), or `rxccl launch` sets it', parse: asText },
    },
    options: ['coordinator'],
    meaning: '`host:port` of a coordinator that already runs',
  },
  {
    group: 'job',
    variables: {
      GX1_UNIQUE_ID: { type: '32 hex digits', default: 'derived from the cluster launcher\'s job', parse: asText },
    },
    options: ['uniqueId'],
    meaning: 'the job\'s id, 32 hex digits (an identifier, not a credential)',
  },
  {
    group: 'job',
    variables: {
      GX1_SECRET: { type: 'text, 16 bytes or more', default: 'none', parse: asText },
      GX1_SECRET_FILE: { type: 'path', default: 'none', parse: asText },
    },
    options: ['secret'],
    meaning: 'the job\'s secret (or a file holding it): every connection proves it knows it; `rxccl launch` and `rxccl coordinator` generate one. Under torchrun, Slurm, Open MPI and Kubernetes give every rank the same one (docs/architecture.md, threat model)',
  },
  {
    group: 'job',
    variables: {
      GX1_TLS_CERT: { type: 'path (PEM)', default: 'none: no TLS', parse: asText },
      GX1_TLS_KEY: { type: 'path (PEM)', default: 'none: no TLS', parse: asText },
      GX1_TLS_CA: { type: 'path (PEM)', default: 'none: TLS not mutual', parse: asText },
    },
    options: ['tls'],
    meaning: 'PEM files: every channel over TLS, mutual when a CA is given',
  },
  {
    group: 'job',
    variables: {
      GX1_RANK: { type: 'integer', default: 'the launcher\'s', parse: asText },
      GX1_WORLD_SIZE: { type: 'integer', default: 'the launcher\'s', parse: asText },
    },
    options: ['rank', 'worldSize'],
    meaning: 'this rank, and the number of ranks',
  },
  {
    group: 'job',
    variables: {
      GX1_LOCAL_RANK: { type: 'integer', default: 'the launcher\'s', parse: asText },
      GX1_LOCAL_WORLD_SIZE: { type: 'integer', default: 'the launcher\'s', parse: asText },
    },
    options: [],
    meaning: 'position on this host (set by `rxccl launch`)',
  },
  {
    group: 'job',
    variables: {
      GX1_P2P_RAILS: { type: 'integer 1..64', default: '1', parse: (text) => parseRails(isSet(text) ? text : undefined) },
    },
    options: ['rails'],
    meaning: 'point-to-point rails per rank, 1..64 (default 1); on the native data plane, messages over 1 MiB are striped over a data link per rail',
  },
  {
    group: 'job',
    variables: {
      GX1_COLLECTIVE_TRANSPORT: { type: 'tcp_peer | tcp_host_staged', default: 'tcp_peer', parse: (text) => (isSet(text) ? parseTransport(text) : DEFAULT_TRANSPORT) },
    },
    options: ['transport'],
    meaning: '`tcp_peer` (default; also `peer`) or `tcp_host_staged` (also `coordinator`, the reference design\'s default). A rank that sets no transport runs its coordinator\'s; one that sets another fails naming both',
  },
  {
    group: 'job',
    variables: {
      GX1_TIMEOUT_MS: { type: 'milliseconds', default: '300000', parse: timeoutMs },
    },
    options: ['timeoutMs'],
    meaning: 'session timeout: connecting, and each point-to-point send or receive until `session.setTimeout(ms)` (default 300000)',
  },
  {
    group: 'job',
    variables: {
      GX1_COLLECTIVE_TIMEOUT_MS: { type: 'milliseconds', default: 'the session timeout', parse: timeoutMs },
    },
    options: ['collectiveTimeoutMs'],
    meaning: 'the collective timeout: how long a collective waits for its ranks before it fails naming those missing, on every transport and plane, on every rank and the coordinator rank 0 hosts (`rxccl launch --collective-timeout` sets it; default the session timeout; option `collectiveTimeoutMs` wins; `session.setTimeout(ms)` changes it on every rank)',
  },
  {
    group: 'job',
    variables: {
      GX1_FAULT_TOLERANT: { type: '1 | 0 | true | false', default: '0', parse: (text) => resolveFaultTolerance(undefined, text) },
    },
    options: ['faultTolerant'],
    meaning: '`1` / `true`: the job survives losing a rank (every rank and the coordinator alike; `rxccl launch --keep-going` sets it): see `shrink()`, `retryOnShrink`, `grow()` and `elastic`',
  },
  {
    group: 'job',
    variables: {
      GX1_JOIN: { type: '1 | 0 | true | false', default: '0', parse: (text) => resolveJoin(undefined, text) },
    },
    options: ['join'],
    meaning: '`1` / `true`: this process joins a fault-tolerant job that already runs: `openSession()` waits until its ranks admit it (`grow()`) and returns its session of the grown job (`rxccl launch --replace` sets it on replacements; `GX1_RANK` and `GX1_WORLD_SIZE` are then ignored)',
  },
  {
    group: 'job',
    variables: {
      GX1_COORDINATOR_HOST: { type: 'host', default: 'the launcher\'s host of rank 0', parse: asText },
      GX1_COORDINATOR_PORT: { type: 'port 1..65535', default: 'the launcher\'s, or derived from the job', parse: asText },
    },
    options: [],
    meaning: 'under a cluster launcher: where rank 0 hosts the coordinator',
  },
  {
    group: 'job',
    variables: {
      GX1_HEARTBEAT_TIMEOUT_MS: { type: 'milliseconds', default: 'the coordinator\'s', parse: timeoutMs },
    },
    options: [],
    meaning: 'the heartbeat lease of the coordinator rank 0 hosts',
  },
  {
    group: 'job',
    variables: {
      GX1_P2P_LISTEN_ADDR: { type: 'host:port', default: 'the job\'s interface, port 0', parse: asText },
      GX1_P2P_ADVERTISE_ADDR: { type: 'address', default: 'the listening address', parse: asText },
      GX1_P2P_RAIL_LISTEN_ADDRS: { type: 'host:port,... (one per rail)', default: 'GX1_P2P_LISTEN_ADDR', parse: asText },
      GX1_P2P_RAIL_ADVERTISE_ADDRS: { type: 'address,... (one per rail)', default: 'GX1_P2P_ADVERTISE_ADDR', parse: asText },
    },
    options: ['peerEndpoints'],
    meaning: '`tcp_peer`: where a rank listens for its peers and what they dial, shared or one per rail',
  },
  {
    group: 'job',
    variables: {
      GX1_P2P_UNMATCHED_BYTES: { type: 'bytes', default: '1073741824', parse: positiveInteger('a positive integer number of bytes', false) },
    },
    options: ['unmatchedBytesLimit'],
    meaning: '`tcp_peer`: bytes of not-yet-received messages one peer may park at a rank per rail before the job fails naming it (default 1073741824; option `unmatchedBytesLimit` wins)',
  },
  {
    group: 'job',
    variables: {
      GX1_COORDINATOR_BUSY_POLL_US: { type: 'auto | microseconds 0..100000', default: 'auto (500)', parse: microsVariable(MAX_BUSY_POLL_MICROS) },
    },
    options: [],
    meaning: 'microseconds the coordinator (`rxccl launch`, `rxccl coordinator`, a hosting rank 0) keeps its event loop turning after each frame it routes, yielding its core on every turn: back-to-back staged collectives skip a wake-up per hop (`auto`, the default: 500; 0 turns it off)',
  },
  {
    group: 'job',
    variables: {
      GX1_SPIN_US: { type: 'auto | microseconds 0..100000', default: 'auto', parse: microsVariable(MAX_SPIN_MICROS) },
    },
    options: ['spinMicros'],
    meaning: 'the native data plane: microseconds a wait for a peer spins before it sleeps. `auto` (default): where every process of the job on this host has a CPU of its own, spins up to 20 ms while peers arrive within a few ms of each other, and down to 50 us when one is late every call (which would otherwise burn a core per waiting rank); where they outnumber the CPUs, `GX1_OVERSUBSCRIBED_SPIN_US`. A number fixes it, 0 never spins. Option `spinMicros` wins',
  },
  {
    group: 'job',
    variables: {
      GX1_OVERSUBSCRIBED_SPIN_US: { type: 'auto | microseconds 0..100000', default: 'auto (0)', parse: microsVariable(MAX_SPIN_MICROS) },
    },
    options: [],
    meaning: 'the native data plane where the job\'s processes on this host outnumber the CPUs a rank may run on (sched_getaffinity) and `GX1_SPIN_US` is `auto`: microseconds a wait for a peer spins (yielding its core each turn) before it sleeps on its doorbell. The peer it waits for then usually has no core, and a spinning rank keeps it off one, as Open MPI yields when oversubscribed. `auto` (default) is 0: sleep at once (bench/README.md, "Ranks outnumbering cores")',
  },
  {
    group: 'job',
    variables: {
      GX1_INLINE_US: { type: 'auto | microseconds 0..100000', default: 'auto (1000)', parse: microsVariable(MAX_INLINE_MICROS) },
    },
    options: ['inlineMicros'],
    meaning: 'the native data plane: microseconds a collective of 64 KiB or less runs on the calling thread, spinning for its peers, before the engine\'s thread takes it. Done within it, the call completes before it returns, with no thread hand-off (31 us in bench/per-call); meanwhile the event loop is held: timers, heartbeats and socket reads wait up to that long. `auto` (default) is 1000; 0 hands every collective to the engine\'s thread at once (the event loop never held). Ranks sharing a process never run inline. Option `inlineMicros` wins; docs/architecture.md, "A call\'s cost"',
  },
  {
    group: 'job',
    variables: {
      GX1_BUSY_POLL_US: { type: 'auto | microseconds 0..100000', default: 'auto', parse: microsVariable(MAX_BUSY_POLL_MICROS) },
    },
    options: ['busyPollMicros'],
    meaning: 'microseconds a rank keeps polling its sockets after an operation starts instead of sleeping: small collectives skip a wake-up (`auto`, the default: 50 where the host has a core for every process of the job, else 0; option `busyPollMicros` wins)',
  },
  {
    group: 'job',
    variables: {
      GX1_SINGLE_COPY: { type: 'auto | off', default: 'auto', parse: oneOf(SINGLE_COPY_SETTINGS, 'auto', true) },
    },
    options: ['singleCopy'],
    meaning: 'the native data plane between ranks of one host (the same advertised address, one kernel and network namespace): `auto` (default) lets such a peer read this rank\'s payloads of 256 KiB or more straight from its memory, and this rank read theirs (Linux cross memory attach, one copy instead of TCP\'s two), where both ends take part and the system allows it (checked once per link, a peer proving it is the process at the link\'s other end; otherwise the bytes travel the link as always; under Yama\'s ptrace scope 1, any process of the rank\'s user may read it while its session is open); `off` keeps this rank out of it, both ways. Ranks may differ. Option `singleCopy` wins; docs/architecture.md, "Single copy on one host"',
  },
  {
    group: 'job',
    variables: {
      GX1_SHARED_MEMORY: { type: 'auto | off', default: 'auto', parse: oneOf(SHARED_MEMORY_SETTINGS, 'auto', true) },
    },
    options: ['sharedMemory'],
    meaning: 'the native data plane between ranks of one host: `auto` (default) moves every message\'s header, and its payload in fragments of 8 KiB (but one single copy carries), through a ring in memory the two ends of a link share (a sealed memfd, offered only to the process proven to be at the link\'s other end, as for single copy, and never named in any filesystem), where both ends take part and the system allows it (pidfd_getfd, Linux 5.6; otherwise the link keeps TCP and GX1_DEBUG says why); `off` keeps this rank\'s links on TCP, both ways. Ranks may differ. Option `sharedMemory` wins; docs/architecture.md, "Shared memory on one host"',
  },
  {
    group: 'job',
    variables: {
      GX1_DATA_PLANE: { type: 'auto | native | js', default: 'auto', parse: oneOf(DATA_PLANE_SETTINGS, 'auto', false) },
    },
    options: ['dataPlane'],
    meaning: 'tcp_peer: who moves collective data: the native plane (the addon\'s: a C++ thread over data links of its own, running every collective but scatter and all-to-all-v, which go through the coordinator after a header check on those links) or the JS plane (the event loop over the mesh). `auto` (default) offers the native plane to the job, `native` asks for it (refused with TLS or without the addon), `js` offers nothing; TLS or an addon that does not load also offers nothing. Every rank decides alike from the offers: native if every rank offers it, on one host or across hosts; a rank that offers nothing puts the whole job on the JS plane, and a rank asking for `native` there fails every rank at set-up, naming them. Option `dataPlane` wins; docs/architecture.md',
  },
  {
    group: 'job',
    variables: {
      GX1_TOPOLOGY_PROBE_BYTES: { type: 'bytes', default: '1048576', parse: probeVariable('payloadBytes') },
      GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS: { type: 'integer', default: '16', parse: probeVariable('latencyIterations') },
      GX1_TOPOLOGY_PROBE_BANDWIDTH_ITERATIONS: { type: 'integer', default: '3', parse: probeVariable('bandwidthIterations') },
      GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS: { type: 'integer', default: '1', parse: probeVariable('warmupIterations') },
    },
    heading: '`GX1_TOPOLOGY_PROBE_BYTES`, `GX1_TOPOLOGY_PROBE_{LATENCY,BANDWIDTH,WARMUP}_ITERATIONS`',
    options: [],
    meaning: 'how hard `probeTopology()` measures',
  },
  {
    group: 'job',
    variables: {
      GX1_DEBUG: { type: 'off | warn | info | trace', default: 'warn', parse: asText },
    },
    options: [],
    meaning: '`off`, `warn` (default), `info` (also the data plane the job runs, and the algorithm and plane each collective takes, the first time) or `trace`: what rxccl prints on stderr (`NODE_DEBUG=rxccl` turns on `trace`)',
  },
  {
    group: 'job',
    variables: {
      GX1_FLIGHT_RECORDER: { type: 'directory', default: 'none: off', parse: trimmedText },
      GX1_FLIGHT_RECORDER_EVENTS: { type: 'integer', default: '1000 (100000 with GX1_TIMELINE)', parse: positiveInteger('a positive integer', true) },
    },
    options: [],
    meaning: 'a directory: keep each rank\'s last events (default 1000) and write them there as JSON on failure, on timeout and on SIGUSR1 (off when unset)',
  },
  {
    group: 'job',
    variables: {
      GX1_TIMELINE: { type: 'directory', default: 'none: off', parse: trimmedText },
    },
    options: [],
    meaning: 'a directory: record each rank\'s whole run (up to 100,000 events) and write it there when the session closes, for `rxccl trace --out trace.json chrome DIR` (Chrome\'s trace format: Perfetto, chrome://tracing); docs/observability.md, "Timeline"',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_COLLECTIVE_ALGORITHM: { type: 'auto | direct | ring | hierarchical | tree', default: 'auto', parse: (text) => parseAlgorithmPolicy(text ?? 'auto') },
    },
    options: ['algorithm'],
    meaning: '`auto` (default), `direct` (through the coordinator), `ring` (ring family on either transport), `hierarchical` (all-reduce, all-gather and reduce-scatter over the topology groups; needs them), `tree` (log-depth: recursive-doubling all-reduce under the ring threshold, Rabenseifner from it, binomial broadcast, reduce and gather, Bruck all-gather, dissemination barrier)',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_RING_THRESHOLD_BYTES: { type: 'bytes', default: '262144', parse: (text, variable) => (text === undefined ? undefined : parseByteCount(variable, text)) },
    },
    options: ['ringThresholdBytes'],
    meaning: 'under `tree`, where the all-reduce turns from recursive doubling to Rabenseifner\'s (default 262144); `auto` weighs every size by its cost model (docs/protocol.md 9.10) and no longer reads it',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_RING_ORDER: { type: 'ranks, each once', default: 'the topology\'s best ring', parse: asText },
    },
    options: ['ringOrder'],
    meaning: 'the ring, every rank once (`0,2,1,3`); default the topology\'s best ring',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_RING_CHANNELS: { type: 'integer 1..64', default: '1', parse: (text, variable) => (text === undefined ? 1 : validateRingChannels(parseByteCount(variable, text))) },
    },
    options: ['ringChannels'],
    meaning: 'concurrent rings a ring all-reduce stripes over, 1..64 (default 1)',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_TOPOLOGY_LINKS: { type: 'probe | a-b:MBps:ns,...', default: 'none', parse: asText },
    },
    options: ['topologyLinks'],
    meaning: '`probe` (measure at open, tcp_peer) or `a-b:MBps:ns,...`: the links the ring is chosen from and the planner weighs',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_TOPOLOGY_GROUPS: { type: 'auto | ranks;ranks', default: 'none', parse: asText },
    },
    options: ['topologyGroups'],
    meaning: 'ranks sharing fast links (`0,1;2,3`: two hosts of two ranks), or `auto`: the fast domains of declared `GX1_TOPOLOGY_LINKS`, else the hosts the ranks advertise (tcp_peer), else the fast domains of probed links. Unset on the native plane, the hosts the ranks advertise where they hold several ranks. Under `auto` the hierarchical all-reduce, all-gather and reduce-scatter run where the cost model expects them to beat the flat ring (it needs links, declared or `probe`, or groups that are the hosts)',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES: { type: 'bytes', default: '16777216', parse: (text, variable) => (text === undefined ? DEFAULT_GROUP_PAYLOAD_BYTES : parsePositive(variable, text)) },
    },
    options: ['groupPayloadBytes'],
    meaning: 'the payload `auto` grouping scores its candidates at (default 16 MiB)',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_TOPOLOGY_RAIL_LINKS: { type: 'rail@a-b:MBps:ns,...', default: 'none', parse: asText },
    },
    options: ['topologyRailLinks'],
    meaning: 'one rail\'s links, `rail@a-b:MBps:ns,...` (rail < `GX1_P2P_RAILS`), added to the topology the planner weighs',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_TOPOLOGY_AGGREGATE_LINKS: { type: 'a-b:MBps,...', default: 'none', parse: asText },
    },
    options: ['topologyAggregateLinks'],
    meaning: '`a-b:MBps,...`: a pair\'s bandwidth with every rail at once (caps striping in the planner)',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_RAIL_ORDER: { type: 'auto | rails, each once', default: 'auto', parse: asText },
    },
    options: ['railOrder'],
    meaning: '`auto` (default: the topology\'s best rails first) or every rail once (`1,0`): the rails the JS plane\'s pieces take in turn, and the native plane\'s stripes',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_COLLECTIVE_AUTOTUNE_PROFILE: { type: 'path', default: 'none', parse: asText },
    },
    options: ['autotuneProfile'],
    meaning: 'a profile `rxccl tune` wrote for this job\'s topology: under `auto`, the measured choice per operation and size (a profile of another topology, world size, transport or plane is refused). Give every rank the same file (its path may differ): on tcp_peer, ranks whose files differ fail at open (`SETTINGS_DIFFER`)',
  },
  {
    group: 'algorithm',
    variables: {
      GX1_DIRECT_BANDWIDTH_MBPS: { type: 'MB/s', default: '32000', parse: (text, variable) => (text === undefined ? DEFAULT_DIRECT_BANDWIDTH_MBPS : parsePositive(variable, text)) },
      GX1_DIRECT_LATENCY_NS: { type: 'nanoseconds', default: '1000', parse: (text, variable) => (text === undefined ? DEFAULT_DIRECT_LATENCY_NS : parseByteCount(variable, text)) },
    },
    options: ['directBandwidthMbps', 'directLatencyNs'],
    meaning: 'the staged path\'s figures in `plan()`\'s estimates and the profile\'s fingerprint (default 32000 MB/s, 1000 ns); the table, not the estimate, decides when the staged path runs',
  },
] as const satisfies readonly SettingRow[];

/** Every variable of the table with its spec: one object of all the rows' variables. */
type Rows = (typeof SETTINGS)[number];
type AllOf<Union> = (Union extends unknown ? (all: Union) => void : never) extends (all: infer Intersection) => void ? Intersection : never;
type Specs = AllOf<Rows['variables']>;

/** Every variable of the table, by name: the settings object's keys. */
export type VariableName = keyof Specs & string;

/** What `variable`'s parser gives. */
export type VariableValue<V extends VariableName> = Specs[V] extends { readonly parse: (...args: never[]) => infer T } ? T : never;

/** Every variable of the table with its spec and its row, in the table's order. */
export const VARIABLES: readonly { readonly variable: VariableName; readonly spec: VariableSpec<unknown>; readonly row: SettingRow }[] = SETTINGS.flatMap((row: SettingRow) =>
  Object.entries(row.variables).map(([variable, spec]) => ({ variable: variable as VariableName, spec, row })),
);

/** Whether `name` is a variable of the table. */
export function isVariableName(name: string): name is VariableName {
  return VARIABLES.some(({ variable }) => variable === name);
}

/** README.md's table of `group`'s variables: variable, option, type, default, meaning. */
export function settingsMarkdown(group: SettingRow['group']): string {
  const rows = (SETTINGS as readonly SettingRow[])
    .filter((row) => row.group === group)
    .map((row) => {
      const specs = Object.values(row.variables);
      const heading = row.heading ?? Object.keys(row.variables).map((variable) => `\`${variable}\``).join(', ');
      const options = row.options.map((option) => `\`${option}\``).join(', ');
      // A row's variables mostly share a type and a default; where not, each in turn.
      const cell = (field: 'type' | 'default') => [...new Set(specs.map((spec) => spec[field]))].join('; ').replaceAll('|', '\\|');
      return `| ${heading} | ${options} | ${cell('type')} | ${cell('default')} | ${row.meaning} |`;
    });
  return ['| variable | option | type | default | meaning |', '|---|---|---|---|---|', ...rows].join('\n');
}

/** The markers around a generated table in README.md. */
const markers = (group: SettingRow['group']) => [`<!-- ${group} settings: generated from lib/settings/settings-table.ts (spec/settings/settings-table.spec.ts) -->`, `<!-- /${group} settings -->`] as const;

/** `readme` with each group's table, between its markers, as `settingsMarkdown` writes it (scripts/settings-readme.mts). */
export function readmeWithSettings(readme: string): string {
  return (['job', 'algorithm'] as const).reduce((text, group) => {
    const [open, close] = markers(group);
    const start = text.indexOf(open);
    const end = text.indexOf(close);
    if (start < 0 || end < start) throw new Error(`README.md has no ${group} settings markers (${open} ... ${close})`);
    return `${text.slice(0, start + open.length)}\n${settingsMarkdown(group)}\n${text.slice(end)}`;
  }, readme);
}
