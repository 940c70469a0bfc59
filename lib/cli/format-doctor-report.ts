import type { DoctorReport } from './doctor-report.js';

/** A labelled line of the report. */
const row = (label: string, value: string) => `  ${label.padEnd(13)} ${value}`;

/** `rxccl doctor`'s readable report: a line per fact, grouped as the JSON is. */
export function formatDoctorReport(report: DoctorReport): string {
  const { node, host, kernels, resultPool, dataPlane, singleCopy, sharedMemory, network } = report;
  const lines = [
    `rxccl ${report.rxccl.version} (${report.rxccl.root})`,
    row('node', `${node.version}, ${node.platform}-${node.arch}, N-API ${node.napi}`),
    row('host', `${host.hostname}, ${host.cpus} CPUs (${host.availableParallelism} available)${host.cpuModel === null ? '' : `, ${host.cpuModel}`}, ${gibibytes(host.memoryBytes)} memory`),
    '',
    'kernels',
    kernels.native
      ? row('addon', `loaded from ${kernels.addon} (${kernels.origin === 'prebuild' ? 'prebuilt' : 'built here'})`)
      : row('addon', `NOT loaded: ${kernels.error}; collectives run on the TypeScript reference kernels (slow)`),
    ...(kernels.native ? [row('simd', kernels.simd!), row('threads', `${kernels.threads} per large kernel`)] : []),
    row('result pool', `${resultPool.keptBytes === null ? 'none (no addon)' : `${resultPool.keptBytes} bytes kept`}; results from ${resultPool.fromBytes / 1024} KiB; transparent huge pages ${resultPool.transparentHugePages ?? 'not reported'}`),
    row('data plane', `${dataPlane.native ? 'native' : 'js'}${dataPlane.setting === null ? '' : ` (${dataPlane.setting})`}: ${dataPlane.reason}`),
    row('single copy', `${verdictWord(singleCopy.allowed)}: ${singleCopy.reason}`),
    row('', `GX1_SINGLE_COPY ${singleCopy.setting ?? 'invalid'}, Yama ptrace_scope ${singleCopy.yamaPtraceScope ?? 'none'}, seccomp ${singleCopy.seccomp ?? 'not reported'}`),
    row('shared memory', `${verdictWord(sharedMemory.allowed)}: ${sharedMemory.reason}`),
    row('', `GX1_SHARED_MEMORY ${sharedMemory.setting ?? 'invalid'}, kernel ${sharedMemory.kernel}, ${describeDevShm(sharedMemory.devShm)}`),
    '',
    'network',
    ...network.interfaces.map((entry, index) => row(index === 0 ? 'interfaces' : '', `${entry.name.padEnd(10)} ${entry.cidr ?? entry.address}${entry.internal ? ' (internal)' : ''}`)),
    row('job', network.job === null ? 'none in this environment (`rxccl launch -n N` runs one on loopback)' : describeJob(network.job)),
    row('route', `to ${network.route.toward}: ${network.route.error ?? `from ${network.route.address} on ${network.route.interface ?? 'an unnamed interface'}`}`),
    row('transport', `${network.transport ?? 'invalid'}, ${network.rails ?? 'invalid'} rail(s), rail order ${network.railOrder ?? 'invalid'}`),
    row('peers listen', network.listen.length === 0 ? 'invalid' : `${network.listen.join(', ')} (port 0: chosen at start)`),
    row('advertise', network.advertise.length === 0 ? 'the bound address' : network.advertise.join(', ')),
    '',
    'environment',
    ...(Object.keys(report.environment).length === 0 ? [row('', 'no GX1_* or RXCCL_* variables')] : Object.entries(report.environment).map(([name, value]) => `  ${name}=${value}`)),
    ...settingLines(report.settings),
    ...report.unknownVariables.map(({ name, meant }) => `  ${name} is not an rxccl setting${meant === null ? '' : ` (did you mean ${meant}?)`}`),
    ...(report.problems.length === 0 ? [] : ['', 'problems', ...report.problems.map((problem) => `  ${problem}`)]),
    '',
  ];
  return lines.join('\n');
}

function describeJob(job: NonNullable<DoctorReport['network']['job']>): string {
  const local = job.localRank === null ? '' : ` (local rank ${job.localRank})`;
  return `rank ${job.rank}${local} of ${job.worldSize} under ${job.launcher}, coordinator ${job.coordinator}${job.hostsCoordinator ? ' (rank 0 hosts it)' : ''}`;
}

const verdictWord = (allowed: boolean | null) => (allowed === null ? 'unknown' : allowed ? 'allowed' : 'not allowed');

function describeDevShm(devShm: DoctorReport['sharedMemory']['devShm']): string {
  if (devShm === null) return '/dev/shm absent (not needed)';
  return `${devShm.path} ${devShm.writable ? 'writable' : 'not writable'}, ${mebibytes(devShm.bytes)} (${mebibytes(devShm.freeBytes)} free; not needed)`;
}

function mebibytes(bytes: number): string {
  return `${Math.floor(bytes / 2 ** 20)} MiB`;
}

function gibibytes(bytes: number): string {
  return `${(bytes / 2 ** 30).toFixed(1)} GiB`;
}

/** The settings taken from the environment, each with the options that would win over it; the rest in one line. */
function settingLines(settings: DoctorReport['settings']): string[] {
  const set = settings.filter((setting) => setting.source === 'environment');
  const options = (names: readonly string[]) => (names.length === 0 ? '' : `; option ${names.join(', ')} wins`);
  return [
    ...set.map((setting) => row(setting === set[0] ? 'settings' : '', `${setting.variable} = ${setting.value} (environment${options(setting.options)})`)),
    row(set.length === 0 ? 'settings' : '', `the other ${settings.length - set.length} GX1_* settings: their defaults (README.md's variable tables)`),
  ];
}
