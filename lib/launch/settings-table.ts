/**
 * Every `GX1_*` variable rxccl reads, in one table (NCCL's param.cc is the model): the variables a
 * row stands for, the `SessionOptions` (or tuning) fields that win over them, and what they mean,
 * values and default included. README.md's two variable tables are this table, rendered
 * (`settingsMarkdown`; spec/launch/settings-table.spec.ts fails where they differ), the list of
 * known names that catches a misspelt variable is its variables, and `rxccl doctor` shows each
 * row's effective value and where it came from.
 */

/** One row: variables read together, the options standing for them, what they mean. */
export interface SettingRow {
  /** Which table of README.md lists it: the job's variables, or the algorithm choice's. */
  readonly group: 'job' | 'algorithm';
  readonly variables: readonly string[];
  /** How the row names its variables where not one by one (`GX1_TOPOLOGY_PROBE_{LATENCY,...}_ITERATIONS`). */
  readonly heading?: string;
  /** The options of `openSession()` (or its tuning) that stand for the variables and win over them. */
  readonly options: readonly string[];
  /** What the variables mean: values, default, who reads them (markdown, one line). */
  readonly meaning: string;
}

export const SETTINGS: readonly SettingRow[] = [
  {
    group: 'job',
    variables: ['GX1_COORDINATOR'],
    options: ['coordinator'],
    meaning: '`host:port` of a coordinator that already runs',
  },
  {
    group: 'job',
    variables: ['GX1_UNIQUE_ID'],
    options: ['uniqueId'],
    meaning: 'the job\'s id, 32 hex digits (an identifier, not a credential)',
  },
  {
    group: 'job',
    variables: ['GX1_SECRET', 'GX1_SECRET_FILE'],
    options: ['secret'],
    meaning: 'the job\'s secret (or a file holding it): every connection proves it knows it; `rxccl launch` and `rxccl coordinator` generate one. Under torchrun, Slurm, Open MPI and Kubernetes give every rank the same one (docs/architecture.md, threat model)',
  },
  {
    group: 'job',
    variables: ['GX1_TLS_CERT', 'GX1_TLS_KEY', 'GX1_TLS_CA'],
    options: ['tls'],
    meaning: 'PEM files: every channel over TLS, mutual when a CA is given',
  },
  {
    group: 'job',
    variables: ['GX1_RANK', 'GX1_WORLD_SIZE'],
    options: ['rank', 'worldSize'],
    meaning: 'this rank, and the number of ranks',
  },
  {
    group: 'job',
    variables: ['GX1_LOCAL_RANK', 'GX1_LOCAL_WORLD_SIZE'],
    options: [],
    meaning: 'position on this host (set by `rxccl launch`)',
  },
  {
    group: 'job',
    variables: ['GX1_P2P_RAILS'],
    options: ['rails'],
    meaning: 'point-to-point rails per rank, 1..64 (default 1); on the native data plane, messages over 1 MiB are striped over a data link per rail',
  },
  {
    group: 'job',
    variables: ['GX1_COLLECTIVE_TRANSPORT'],
    options: ['transport'],
    meaning: '`tcp_peer` (default; also `peer`) or `tcp_host_staged` (also `coordinator`, the reference design\'s default). A rank that sets no transport runs its coordinator\'s; one that sets another fails naming both',
  },
  {
    group: 'job',
    variables: ['GX1_TIMEOUT_MS'],
    options: ['timeoutMs'],
    meaning: 'session timeout: connecting, and each point-to-point send or receive until `session.setTimeout(ms)` (default 300000)',
  },
  {
    group: 'job',
    variables: ['GX1_COLLECTIVE_TIMEOUT_MS'],
    options: ['collectiveTimeoutMs'],
    meaning: 'the collective timeout: how long a collective waits for its ranks before it fails naming those missing, on every transport and plane, on every rank and the coordinator rank 0 hosts (`rxccl launch --collective-timeout` sets it; default the session timeout; option `collectiveTimeoutMs` wins; `session.setTimeout(ms)` changes it on every rank)',
  },
  {
    group: 'job',
    variables: ['GX1_FAULT_TOLERANT'],
    options: ['faultTolerant'],
    meaning: '`1` / `true`: the job survives losing a rank (every rank and the coordinator alike; `rxccl launch --keep-going` sets it): see `shrink()`, `retryOnShrink`, `grow()` and `elastic`',
  },
  {
    group: 'job',
    variables: ['GX1_JOIN'],
    options: ['join'],
    meaning: '`1` / `true`: this process joins a fault-tolerant job that already runs: `openSession()` waits until its ranks admit it (`grow()`) and returns its session of the grown job (`rxccl launch --replace` sets it on replacements; `GX1_RANK` and `GX1_WORLD_SIZE` are then ignored)',
  },
  {
    group: 'job',
    variables: ['GX1_COORDINATOR_HOST', 'GX1_COORDINATOR_PORT'],
    options: [],
    meaning: 'under a cluster launcher: where rank 0 hosts the coordinator',
  },
  {
    group: 'job',
    variables: ['GX1_HEARTBEAT_TIMEOUT_MS'],
    options: [],
    meaning: 'the heartbeat lease of the coordinator rank 0 hosts',
  },
  {
    group: 'job',
    variables: ['GX1_P2P_LISTEN_ADDR', 'GX1_P2P_ADVERTISE_ADDR', 'GX1_P2P_RAIL_LISTEN_ADDRS', 'GX1_P2P_RAIL_ADVERTISE_ADDRS'],
    options: ['peerEndpoints'],
    meaning: '`tcp_peer`: where a rank listens for its peers and what they dial, shared or one per rail',
  },
  {
    group: 'job',
    variables: ['GX1_P2P_UNMATCHED_BYTES'],
    options: ['unmatchedBytesLimit'],
    meaning: '`tcp_peer`: bytes of not-yet-received messages one peer may park at a rank per rail before the job fails naming it (default 1073741824; option `unmatchedBytesLimit` wins)',
  },
  {
    group: 'job',
    variables: ['GX1_COORDINATOR_BUSY_POLL_US'],
    options: [],
    meaning: 'microseconds the coordinator (`rxccl launch`, `rxccl coordinator`, a hosting rank 0) keeps its event loop turning after each frame it routes, yielding its core on every turn: back-to-back staged collectives skip a wake-up per hop (`auto`, the default: 500; 0 turns it off)',
  },
  {
    group: 'job',
    variables: ['GX1_SPIN_US'],
    options: ['spinMicros'],
    meaning: 'the native data plane: microseconds a wait for a peer spins before it sleeps. `auto` (default) spins up to 20 ms while peers arrive within a few ms of each other, and down to 50 us when one is late every call (which would otherwise burn a core per waiting rank); a number fixes it, 0 never spins. Option `spinMicros` wins',
  },
  {
    group: 'job',
    variables: ['GX1_BUSY_POLL_US'],
    options: ['busyPollMicros'],
    meaning: 'microseconds a rank keeps polling its sockets after an operation starts instead of sleeping: small collectives skip a wake-up (`auto`, the default: 50 where the host has a core for every process of the job, else 0; option `busyPollMicros` wins)',
  },
  {
    group: 'job',
    variables: ['GX1_SINGLE_COPY'],
    options: ['singleCopy'],
    meaning: 'the native data plane between ranks of one host (the same advertised address, one kernel and network namespace): `auto` (default) lets such a peer read this rank\'s payloads of 256 KiB or more straight from its memory, and this rank read theirs (Linux cross memory attach, one copy instead of TCP\'s two), where both ends take part and the system allows it (checked once per link, a peer proving it is the process at the link\'s other end; otherwise the bytes travel the link as always; under Yama\'s ptrace scope 1, any process of the rank\'s user may read it while its session is open); `off` keeps this rank out of it, both ways. Ranks may differ. Option `singleCopy` wins; docs/architecture.md, "Single copy on one host"',
  },
  {
    group: 'job',
    variables: ['GX1_DATA_PLANE'],
    options: ['dataPlane'],
    meaning: 'tcp_peer: who moves collective data: the native plane (the addon\'s: a C++ thread over data links of its own, running every collective but scatter and all-to-all-v, which go through the coordinator after a header check on those links) or the JS plane (the event loop over the mesh). `auto` (default) offers the native plane to the job, `native` asks for it (refused with TLS or without the addon), `js` offers nothing; TLS or an addon that does not load also offers nothing. Every rank decides alike from the offers: native if every rank offers it, on one host or across hosts; a rank that offers nothing puts the whole job on the JS plane, and a rank asking for `native` there fails every rank at set-up, naming them. Option `dataPlane` wins; docs/architecture.md',
  },
  {
    group: 'job',
    variables: ['GX1_TOPOLOGY_PROBE_BYTES', 'GX1_TOPOLOGY_PROBE_LATENCY_ITERATIONS', 'GX1_TOPOLOGY_PROBE_BANDWIDTH_ITERATIONS', 'GX1_TOPOLOGY_PROBE_WARMUP_ITERATIONS'],
    heading: '`GX1_TOPOLOGY_PROBE_BYTES`, `GX1_TOPOLOGY_PROBE_{LATENCY,BANDWIDTH,WARMUP}_ITERATIONS`',
    options: [],
    meaning: 'how hard `probeTopology()` measures',
  },
  {
    group: 'job',
    variables: ['GX1_DEBUG'],
    options: [],
    meaning: '`off`, `warn` (default), `info` (also the data plane the job runs, and the algorithm and plane each collective takes, the first time) or `trace`: what rxccl prints on stderr (`NODE_DEBUG=rxccl` turns on `trace`)',
  },
  {
    group: 'job',
    variables: ['GX1_FLIGHT_RECORDER', 'GX1_FLIGHT_RECORDER_EVENTS'],
    options: [],
    meaning: 'a directory: keep each rank\'s last events (default 1000) and write them there as JSON on failure, on timeout and on SIGUSR1 (off when unset)',
  },
  {
    group: 'job',
    variables: ['GX1_TIMELINE'],
    options: [],
    meaning: 'a directory: record each rank\'s whole run (up to 100,000 events) and write it there when the session closes, for `rxccl trace --out trace.json chrome DIR` (Chrome\'s trace format: Perfetto, chrome://tracing); docs/observability.md, "Timeline"',
  },
  {
    group: 'algorithm',
    variables: ['GX1_COLLECTIVE_ALGORITHM'],
    options: ['algorithm'],
    meaning: '`auto` (default), `direct` (through the coordinator), `ring` (ring family on either transport), `hierarchical` (all-reduce, all-gather and reduce-scatter over the topology groups; needs them)',
  },
  {
    group: 'algorithm',
    variables: ['GX1_RING_THRESHOLD_BYTES'],
    options: ['ringThresholdBytes'],
    meaning: 'under `auto` on tcp_peer\'s JS plane, tensors from this size per rank use the ring family, or the pairwise algorithms where every rank shares one host and no ring is configured (default 262144); the native plane has bounds of its own',
  },
  {
    group: 'algorithm',
    variables: ['GX1_RING_ORDER'],
    options: ['ringOrder'],
    meaning: 'the ring, every rank once (`0,2,1,3`); default the topology\'s best ring',
  },
  {
    group: 'algorithm',
    variables: ['GX1_RING_CHANNELS'],
    options: ['ringChannels'],
    meaning: 'concurrent rings a ring all-reduce stripes over, 1..64 (default 1)',
  },
  {
    group: 'algorithm',
    variables: ['GX1_TOPOLOGY_LINKS'],
    options: ['topologyLinks'],
    meaning: '`probe` (measure at open, tcp_peer) or `a-b:MBps:ns,...`: the links the ring is chosen from and the planner weighs',
  },
  {
    group: 'algorithm',
    variables: ['GX1_TOPOLOGY_GROUPS'],
    options: ['topologyGroups'],
    meaning: 'ranks sharing fast links (`0,1;2,3`: two hosts of two ranks), or `auto`: the fast domains of declared `GX1_TOPOLOGY_LINKS`, else the hosts the ranks advertise (tcp_peer), else the fast domains of probed links. Unset on the native plane, the hosts the ranks advertise where they hold several ranks. Under `auto` the hierarchical all-reduce, all-gather and reduce-scatter run where the cost model expects them to beat the flat ring (it needs links, declared or `probe`, or groups that are the hosts)',
  },
  {
    group: 'algorithm',
    variables: ['GX1_TOPOLOGY_GROUP_PAYLOAD_BYTES'],
    options: ['groupPayloadBytes'],
    meaning: 'the payload `auto` grouping scores its candidates at (default 16 MiB)',
  },
  {
    group: 'algorithm',
    variables: ['GX1_TOPOLOGY_RAIL_LINKS'],
    options: ['topologyRailLinks'],
    meaning: 'one rail\'s links, `rail@a-b:MBps:ns,...` (rail < `GX1_P2P_RAILS`), added to the topology the planner weighs',
  },
  {
    group: 'algorithm',
    variables: ['GX1_TOPOLOGY_AGGREGATE_LINKS'],
    options: ['topologyAggregateLinks'],
    meaning: '`a-b:MBps,...`: a pair\'s bandwidth with every rail at once (caps striping in the planner)',
  },
  {
    group: 'algorithm',
    variables: ['GX1_RAIL_ORDER'],
    options: ['railOrder'],
    meaning: '`auto` (default: the topology\'s best rails first) or every rail once (`1,0`): the rails the JS plane\'s pieces take in turn, and the native plane\'s stripes',
  },
  {
    group: 'algorithm',
    variables: ['GX1_COLLECTIVE_AUTOTUNE_PROFILE'],
    options: ['autotuneProfile'],
    meaning: 'a profile `rxccl tune` wrote for this job\'s topology: under `auto`, the measured choice per operation and size (a profile of another topology, world size, transport or plane is refused). Give every rank the same file: ranks following different profiles may take paths that do not meet',
  },
  {
    group: 'algorithm',
    variables: ['GX1_DIRECT_BANDWIDTH_MBPS', 'GX1_DIRECT_LATENCY_NS'],
    options: ['directBandwidthMbps', 'directLatencyNs'],
    meaning: 'the staged path\'s figures in `plan()`\'s estimates and the profile\'s fingerprint (default 32000 MB/s, 1000 ns); the table, not the estimate, decides when the staged path runs',
  },
];

/** README.md's table of `group`'s variables: variable, option, meaning. */
export function settingsMarkdown(group: SettingRow['group']): string {
  const rows = SETTINGS.filter((row) => row.group === group).map((row) => {
    const heading = row.heading ?? row.variables.map((variable) => `\`${variable}\``).join(', ');
    const options = row.options.length === 0 ? '' : row.options.map((option) => `\`${option}\``).join(', ');
    return `| ${heading} | ${options} | ${row.meaning} |`;
  });
  return ['| variable | option | meaning |', '|---|---|---|', ...rows].join('\n');
}

/** The markers around a generated table in README.md. */
const markers = (group: SettingRow['group']) => [`<!-- ${group} settings: generated from lib/launch/settings-table.ts (spec/launch/settings-table.spec.ts) -->`, `<!-- /${group} settings -->`] as const;

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

/** A variable's effective value in `env`, and where it came from (doctor's table). */
export interface EffectiveSetting {
  readonly variable: string;
  /** As set (secrets masked by the caller), or null where the default applies. */
  readonly value: string | null;
  readonly source: 'environment' | 'default';
  /** The options of its row, which win over it where a program gives them. */
  readonly options: readonly string[];
}

/** Every variable of the table with its value in `env` (set and not empty) or its default. */
export function effectiveSettings(env: Readonly<Record<string, string | undefined>>): EffectiveSetting[] {
  return SETTINGS.flatMap((row) =>
    row.variables.map((variable) => {
      const value = env[variable]?.trim();
      const { options } = row;
      return value === undefined || value === '' ? { variable, value: null, source: 'default' as const, options } : { variable, value, source: 'environment' as const, options };
    }),
  );
}
