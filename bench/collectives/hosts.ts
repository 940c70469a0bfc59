/**
 * `rxccl bench --hosts H`: the job's ranks spread over H "hosts", each a Linux network namespace
 * of its own with one IP (a veth pair into one bridge), so every byte between two hosts crosses
 * a veth pair and the bridge as it would a NIC, instead of loopback. Rank r of W lives on host
 * floor(r * H / W): 4 ranks on 2 hosts are ranks 0, 1 on host 0 and 2, 3 on host 1. The
 * coordinator, and the peers' launchers, stay in this namespace and reach the hosts over the
 * bridge. Needs root and iproute2; `rate` shapes every host's egress with tc tbf (this kernel may
 * have no netem: no added delay, so the hosts are as near as loopback in latency).
 */
import { spawnSync } from 'node:child_process';
import { ConfigurationError } from '../../lib/errors.js';

/** Names and addresses of the bench's namespaces (kept apart from ../shared/peers/multihost's pmh*). */
const PREFIX = 'rxb';
const BRIDGE = `${PREFIX}br0`;
const SUBNET = '10.79.0';

export class HostNamespaces {
  /** Where the coordinator listens: the bridge's address in this namespace. */
  readonly coordinatorAddress = `${SUBNET}.254`;
  /** The hosts' network, for launchers that take one (Open MPI's btl_tcp_if_include). */
  readonly subnet = `${SUBNET}.0/24`;
  readonly bridge = BRIDGE;

  /** `count` hosts' names and addresses; `up` builds them. */
  constructor(readonly count: number) {}

  /**
   * Builds `count` hosts (after removing any a crashed run left); throws a ConfigurationError that
   * says what failed where it cannot (not root, no iproute2).
   */
  static up(count: number, rate: string | null = null): HostNamespaces {
    if (!Number.isInteger(count) || count < 1 || count > 200) throw new ConfigurationError(`--hosts must be 1..200, got ${count}`);
    const hosts = new HostNamespaces(count);
    hosts.down();
    try {
      ip('link', 'add', BRIDGE, 'type', 'bridge');
      ip('addr', 'add', `${hosts.coordinatorAddress}/24`, 'dev', BRIDGE);
      ip('link', 'set', BRIDGE, 'up');
      for (let host = 0; host < count; host++) {
        const namespace = hosts.namespace(host);
        ip('netns', 'add', namespace);
        ip('link', 'add', `${PREFIX}v${host}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', namespace);
        ip('link', 'set', `${PREFIX}v${host}`, 'master', BRIDGE, 'up');
        ip('-n', namespace, 'addr', 'add', `${hosts.address(host)}/24`, 'dev', 'eth0');
        ip('-n', namespace, 'link', 'set', 'eth0', 'up');
        ip('-n', namespace, 'link', 'set', 'lo', 'up');
        if (rate !== null) run('ip', ['netns', 'exec', namespace, 'tc', 'qdisc', 'replace', 'dev', 'eth0', 'root', 'tbf', 'rate', rate, 'burst', '1250kb', 'latency', '1ms']);
      }
    } catch (error) {
      hosts.down();
      throw new ConfigurationError(`--hosts ${count}: cannot build the hosts' network namespaces (${(error as Error).message}); it needs root and iproute2`);
    }
    return hosts;
  }

  namespace(host: number): string {
    return `${PREFIX}h${host}`;
  }

  address(host: number): string {
    return `${SUBNET}.${host + 1}`;
  }

  /** A shell expression for the namespace of the rank in `$variable` of `worldSize` (a launcher's rank variable). */
  rankNamespace(variable: string, worldSize: number): string {
    return `${PREFIX}h$(( ${variable} * ${this.count} / ${worldSize} ))`;
  }

  /** The host rank `rank` of `worldSize` lives on. */
  hostOf(rank: number, worldSize: number): number {
    return Math.floor((rank * this.count) / worldSize);
  }

  /** `file args` run inside `host`'s namespace. */
  inHost(host: number, file: string, args: readonly string[]): { file: string; args: string[] } {
    return { file: 'ip', args: ['netns', 'exec', this.namespace(host), file, ...args] };
  }

  /** Removes every namespace of the bench and the bridge (what is not there is fine). */
  down(): void {
    const listed = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout ?? '';
    for (const line of listed.split('\n')) {
      const name = line.split(' ')[0] ?? '';
      if (name.startsWith(`${PREFIX}h`)) spawnSync('ip', ['netns', 'del', name]);
    }
    spawnSync('ip', ['link', 'del', BRIDGE]);
  }
}

function ip(...args: string[]): void {
  run('ip', args);
}

function run(file: string, args: string[]): void {
  const result = spawnSync(file, args, { encoding: 'utf8' });
  if (result.error !== undefined) throw new Error(`${file}: ${result.error.message}`);
  if (result.status !== 0) throw new Error(`${file} ${args.join(' ')}: ${result.stderr.trim() || `status ${result.status}`}`);
}
