import { parseTransport, validateWorldSize } from '../transport/transport-kind.js';
import { UsageError } from './usage-error.js';
import { defineCommand } from './command.js';
import { runLocalJob } from './run-local-job.js';
import { COORDINATOR_FLAGS } from './session-flags.js';

export const launchCommand = defineCommand(
  {
    name: 'launch',
    brief: 'Run N ranks of COMMAND on this host',
    synopsis: '-n N [options] -- COMMAND [ARGS...]',
    summary: [
      'Runs N copies of COMMAND as the ranks of one job on this host. A coordinator listens on',
      'loopback in this process; each rank gets GX1_COORDINATOR, GX1_UNIQUE_ID, GX1_RANK,',
      'GX1_WORLD_SIZE, GX1_LOCAL_RANK, GX1_LOCAL_WORLD_SIZE, GX1_P2P_RAILS and',
      'GX1_COLLECTIVE_TRANSPORT and a fresh GX1_SECRET (every connection proves it knows it), so',
      'openSession() needs no options. Output lines are prefixed',
      'with "[rank N] ". Exits 0 when every rank exits 0; when one fails, the others are ended',
      'and the exit status is 1, naming the failing rank. With --keep-going the job is',
      'fault-tolerant (GX1_FAULT_TOLERANT=1): a rank that dies (a signal, a lost connection or',
      'lease) is lost and the others go on (and may shrink() their communicators); a rank that',
      'exits with an error code still fails the job. With --replace N a replacement process',
      '(GX1_JOIN=1, lines prefixed "[replacement K] ") starts for each rank that dies, up to N;',
      'the ranks admit it at a step boundary with grow() (the elastic operator does).',
    ].join('\n'),
    trailing: 'COMMAND',
    flags: {
      ranks: { kind: 'integer', short: 'n', value: 'N', min: 1, required: true, help: 'number of ranks' },
      'keep-going': { kind: 'boolean', help: 'a rank that dies is lost, the others go on (a fault-tolerant job; see shrink())' },
      replace: {
        kind: 'integer',
        value: 'N',
        min: 1,
        help: 'with --keep-going: start a replacement (GX1_JOIN=1) for each rank that dies, up to N; the ranks admit it with grow() (see elastic)',
      },
      ...COORDINATOR_FLAGS,
    },
  },
  async (values, rest) => {
    const [command, ...args] = rest;
    if (command === undefined) throw new UsageError('missing the COMMAND to run (rxccl launch -n N -- COMMAND [ARGS...])');
    if (values.replace !== undefined && values['keep-going'] !== true) throw new UsageError('--replace needs --keep-going: only a fault-tolerant job goes on while a replacement joins');
    const { status } = await runLocalJob('launch', {
      worldSize: validateWorldSize(values.ranks),
      command,
      args,
      ...(values.rails !== undefined ? { rails: values.rails } : {}),
      ...(values.transport !== undefined ? { transport: parseTransport(values.transport, '--transport') } : {}),
      ...(values['collective-timeout'] !== undefined ? { collectiveTimeoutMs: values['collective-timeout'] } : {}),
      ...(values['heartbeat-timeout'] !== undefined ? { heartbeatTimeoutMs: values['heartbeat-timeout'] } : {}),
      ...(values['keep-going'] === true ? { keepGoing: true } : {}),
      ...(values.replace !== undefined ? { replacements: values.replace } : {}),
    });
    return status;
  },
);
