import { constants, hostname } from 'node:os';
import { Coordinator } from '../coordinator/coordinator.js';
import { failureText } from '../errors.js';
import { processSettings } from '../settings/read-settings.js';
import { coordinatorBusyWindow } from '../launch/coordinator-busy-window.js';
import { hostPort } from '../launch/job-environment.js';
import { UniqueId } from '../protocol/unique-id.js';
import { generateSecret, resolveSecret } from '../transport/job-secret.js';
import { parseHostPort } from '../session/session-options.js';
import { DEFAULT_TRANSPORT, parseTransport, validateWorldSize } from '../transport/transport-kind.js';
import { defineCommand } from './command.js';
import { COORDINATOR_FLAGS } from './session-flags.js';

const STOPPING: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const WILDCARD = new Set(['0.0.0.0', '::']);

export const coordinatorCommand = defineCommand(
  {
    name: 'coordinator',
    brief: 'Run the coordinator of a multi-host job',
    synopsis: '--world-size N [--bind HOST:PORT] [--unique-id HEX] [options]',
    summary: [
      'Runs the coordinator of a multi-host job on its own and prints the line its ranks need:',
      '  GX1_COORDINATOR=host:port GX1_UNIQUE_ID=... GX1_WORLD_SIZE=N GX1_SECRET=...',
      'The secret is generated unless GX1_SECRET or GX1_SECRET_FILE (or --secret-file) gives one;',
      'every connection of the job proves it knows it. Keep the line private.',
      'Give each rank that environment plus its GX1_RANK (or run the ranks under torchrun, srun,',
      'mpirun or a Kubernetes indexed Job, which supply the rank). Exits 0 when every rank has',
      'left, and 1 with the reason when the job fails.',
    ].join('\n'),
    flags: {
      'world-size': { kind: 'integer', value: 'N', min: 1, required: true, help: 'number of ranks' },
      bind: { kind: 'string', value: 'HOST:PORT', help: 'address to listen on (default 0.0.0.0:0: every interface, a free port)' },
      'unique-id': { kind: 'string', value: 'HEX', help: 'the job id, 32 hex digits (default: random)' },
      'secret-file': { kind: 'string', value: 'PATH', help: "file holding the job's secret (default GX1_SECRET, GX1_SECRET_FILE, else generated)" },
      ...COORDINATOR_FLAGS,
    },
  },
  async (values) => {
    const bind = parseBind(values.bind ?? '0.0.0.0:0');
    const settings = processSettings();
    const secretFile = values['secret-file'] ?? settings.GX1_SECRET_FILE.text;
    const given = resolveSecret(undefined, { inline: settings.GX1_SECRET.text, file: secretFile });
    const secret = given ?? new Uint8Array(Buffer.from(generateSecret(), 'utf8'));
    const coordinator = await Coordinator.listen({
      secret,
      host: bind.host,
      port: bind.port,
      uniqueId: values['unique-id'] === undefined ? UniqueId.random() : UniqueId.fromHex(values['unique-id']),
      worldSize: validateWorldSize(values['world-size']),
      ...(values.rails !== undefined ? { rails: values.rails } : {}),
      ...(values.transport !== undefined ? { transport: parseTransport(values.transport, '--transport') } : {}),
      ...(values['collective-timeout'] !== undefined ? { collectiveTimeoutMs: values['collective-timeout'] } : {}),
      ...(values['heartbeat-timeout'] !== undefined ? { heartbeatTimeoutMs: values['heartbeat-timeout'] } : {}),
      busyWindow: coordinatorBusyWindow(settings),
    }, settings);
    // Listening on every interface: the ranks reach it by this machine's name.
    const reachable = { host: WILDCARD.has(coordinator.address.host) ? hostname() : coordinator.address.host, port: coordinator.address.port };
    const line = [
      `GX1_COORDINATOR=${hostPort(reachable)}`,
      `GX1_UNIQUE_ID=${coordinator.uniqueId.toHex()}`,
      `GX1_WORLD_SIZE=${coordinator.worldSize}`,
      // A secret from a file is named by its path; one generated or given inline travels as is.
      given !== null && settings.GX1_SECRET.text === undefined ? `GX1_SECRET_FILE=${secretFile}` : `GX1_SECRET=${Buffer.from(secret).toString('utf8')}`,
      // Ranks must match these too; the defaults need not be spelled out.
      ...(coordinator.rails !== 1 ? [`GX1_P2P_RAILS=${coordinator.rails}`] : []),
      ...(coordinator.transport !== DEFAULT_TRANSPORT ? [`GX1_COLLECTIVE_TRANSPORT=${coordinator.transport}`] : []),
      // The ranks bound the collectives this coordinator does not see (tcp_peer's mesh) alike.
      ...(values['collective-timeout'] !== undefined ? [`GX1_COLLECTIVE_TIMEOUT_MS=${values['collective-timeout']}`] : []),
    ];
    process.stdout.write(`${line.join(' ')}\n`);

    let stoppedBy: NodeJS.Signals | null = null;
    const stop = (signal: NodeJS.Signals) => {
      stoppedBy ??= signal;
      void coordinator.close();
    };
    for (const signal of STOPPING) process.on(signal, stop);
    try {
      // The job, and every job it grew into (its coordinators run in this process too).
      await coordinator.finished;
      process.stderr.write(`rxccl coordinator: job complete: all ${coordinator.worldSize} ranks left\n`);
      return 0;
    } catch (error) {
      if (stoppedBy !== null) {
        process.stderr.write(`rxccl coordinator: stopped by ${stoppedBy}; the ranks still connected were aborted\n`);
        return 128 + constants.signals[stoppedBy];
      }
      process.stderr.write(`rxccl coordinator: job failed: ${failureText(error)}\n`);
      return 1;
    } finally {
      for (const signal of STOPPING) process.off(signal, stop);
    }
  },
);

/** `HOST:PORT`, where port 0 is allowed (the system picks one and the printed line says which). */
function parseBind(value: string): { host: string; port: number } {
  const zero = /^(.*):0$/.exec(value.trim());
  if (zero !== null) return { host: parseHostPort(`${zero[1]}:1`, '--bind').host, port: 0 };
  return parseHostPort(value, '--bind');
}
