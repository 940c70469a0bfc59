import { availableParallelism } from 'node:os';
import type { SocketAddressText } from '../transport/peer-endpoint-config.js';
import { isLoopbackHost } from '../transport/loopback-host.js';
import { MAX_BUSY_POLL_MICROS, type MicrosSetting, resolveMicros } from '../settings/micros-setting.js';

/**
 * How long a rank polls its sockets, after an operation starts, before its event loop sleeps
 * (see `EventLoopHold`). 50 us covers a small collective's round trip when the peers are awake,
 * so the answer is seen without the wake-up of a sleeping thread, and costs a long wait nothing
 * after it.
 */
export const DEFAULT_BUSY_POLL_MICROS = 50;

/** A window in microseconds, or `auto`: the default where this host has a core for every process of the job, else 0. */
export type BusyPollSetting = MicrosSetting;

/** The `busyPollMicros` option, else `GX1_BUSY_POLL_US` (`variable`, as the settings read it; `auto` where unset; read only without the option). */
export function resolveBusyPoll(option: MicrosSetting | undefined, variable: { readonly value: MicrosSetting }): BusyPollSetting {
  return resolveMicros(option, 'busyPollMicros', variable, MAX_BUSY_POLL_MICROS);
}

/**
 * The window a rank uses. `auto` polls only where every process of the job on this host has a
 * core of its own: with more processes than cores a polling rank takes the core the rank it
 * waits for needs (4 ranks on 2 cores polled for milliseconds in the prototypes), as MPI yields
 * when oversubscribed. `processesOnHost` null (not known) counts as oversubscribed.
 */
export function busyPollMicros(setting: BusyPollSetting, processesOnHost: number | null, cores = availableParallelism()): number {
  if (setting !== 'auto') return setting;
  return processesOnHost !== null && processesOnHost <= cores ? DEFAULT_BUSY_POLL_MICROS : 0;
}

/**
 * tcp_peer: the ranks that advertise the same host as `rank` on rail 0 (the coordinator mostly
 * sleeps). Hosts are compared as advertised text, so distinct loopback addresses count as distinct
 * hosts: a job on one machine can stand for several that way (the algorithm-selection spec puts a
 * rank on 127.0.0.2).
 */
export function meshProcessesOnHost(table: readonly (readonly SocketAddressText[])[], rank: number): number {
  const own = table[rank]![0]!.host;
  return table.filter((endpoints) => endpoints[0]!.host === own).length;
}

/** tcp_host_staged: every rank and the coordinator, which relays every collective, when it is on loopback; else not known. */
export function stagedProcessesOnHost(coordinatorHost: string, worldSize: number): number | null {
  return isLoopbackHost(coordinatorHost) ? worldSize + 1 : null;
}
