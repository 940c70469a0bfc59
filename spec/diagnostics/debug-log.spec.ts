/** Debug output: GX1_DEBUG levels and NODE_DEBUG=rxccl, what each level says, never a payload byte. */
import { spawnSync } from 'node:child_process';
import { Subject } from 'rxjs';
import { describe, expect, it } from 'vitest';
import type { CoordinatorEvent } from '../../lib/coordinator/coordinator-events.js';
import { coordinatorEventLogger } from '../../lib/coordinator/log-coordinator-events.js';
import { DebugLog } from '../../lib/diagnostics/debug-log.js';
import type { SessionEvent } from '../../lib/session/events.js';
import { logSessionEvents } from '../../lib/session/log-session-events.js';
import { ROOT, runRxccl, tsNode } from '../cli/rxccl-process.js';

/** A log at `level` that collects its lines. */
function capture(level: 'off' | 'warn' | 'info' | 'trace') {
  const lines: string[] = [];
  return { log: new DebugLog(level, (at, message) => lines.push(`${at} ${message}`)), lines };
}

describe('DebugLog', () => {
  it('takes its level from GX1_DEBUG, warn by default, and NODE_DEBUG=rxccl turns on everything', () => {
    const stderr: string[] = [];
    const read = (env: Record<string, string>) => DebugLog.fromEnvironment(env, (text) => stderr.push(text)).level;
    expect(read({})).toBe('warn');
    expect(read({ GX1_DEBUG: 'INFO' })).toBe('info');
    expect(read({ GX1_DEBUG: 'off' })).toBe('off');
    expect(read({ NODE_DEBUG: 'net,rxccl' })).toBe('trace');
    expect(read({ NODE_DEBUG: 'rxccl', GX1_DEBUG: 'warn' })).toBe('warn');
    expect(read({ NODE_DEBUG: 'rxccl2' })).toBe('warn');
    expect(stderr).toEqual([]);
    expect(read({ GX1_DEBUG: 'loud' })).toBe('warn');
    expect(stderr).toEqual([`rxccl[${process.pid}] WARN GX1_DEBUG=loud is not one of off|warn|info|trace; using warn\n`]);
  });

  it('writes through util.debuglog under NODE_DEBUG=rxccl (RXCCL pid: LEVEL message)', () => {
    const program = "const { debugLog } = await import('./lib/diagnostics/debug-log.ts'); debugLog.trace('hello');";
    const stderr = (env: NodeJS.ProcessEnv) =>
      spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', program], { cwd: ROOT, env: { ...process.env, GX1_DEBUG: '', ...env }, encoding: 'utf8' }).stderr;
    expect(stderr({ NODE_DEBUG: 'rxccl' })).toMatch(/^RXCCL \d+: TRACE hello\n$/);
    expect(stderr({ NODE_DEBUG: '' })).toBe('');
  });

  it('writes each line at or below its level as rxccl[pid] LEVEL message', () => {
    const stderr: string[] = [];
    const log = DebugLog.fromEnvironment({ GX1_DEBUG: 'info' }, (text) => stderr.push(text));
    log.warn('a');
    log.info('b');
    log.trace('c');
    expect(stderr).toEqual([`rxccl[${process.pid}] WARN a\n`, `rxccl[${process.pid}] INFO b\n`]);
  });

  it('logs coordinator events at their levels, and has no logger when off', () => {
    const warn = capture('warn');
    const info = capture('info');
    const loggers = [coordinatorEventLogger(warn.log)!, coordinatorEventLogger(info.log)!];
    expect(coordinatorEventLogger(capture('off').log)).toBeNull();
    const events: CoordinatorEvent[] = [
      { type: 'ranks-not-joined', missing: [2, 3], waitedMs: 10_000 },
      { type: 'rank-joined', rank: 1, channel: 'rail 0' },
      { type: 'p2p-matched', rail: 0, source: 1, destination: 0, tag: 7n, bytes: 32 },
    ];
    for (const event of events) for (const logger of loggers) logger.write(event);
    expect(warn.lines).toEqual(['warn coordinator: ranks [2,3] have not joined after 10000 ms']);
    expect(info.lines).toEqual(['warn coordinator: ranks [2,3] have not joined after 10000 ms', 'info coordinator: rank 1 joined (rail 0)']);
    // Per-operation events are built only for a log that writes them.
    expect(loggers.map((logger) => logger.logs('collective-completed'))).toEqual([false, false]);
    expect(coordinatorEventLogger(capture('trace').log)!.logs('collective-completed')).toBe(true);
  });

  it('subscribes to session events only from info on (they are built only when observed)', () => {
    const events = new Subject<SessionEvent>();
    expect(logSessionEvents(events, 0, capture('warn').log)).toBeNull();
    const trace = capture('trace');
    logSessionEvents(events, 3, trace.log);
    expect(events.observed).toBe(true);
    events.next({ type: 'collective-finished', sequence: 4, collective: 'allReduce', algorithm: 'ring', plane: 'js', bytes: 4096, durationMs: 1.5 });
    expect(trace.lines).toEqual(['trace rank 3: collective sequence 4 allReduce (ring, js) 4096 bytes in 1.500 ms']);
  });
});

describe('a job run with GX1_DEBUG=trace', () => {
  it('prints connections, joins, each collective with sequence, op, bytes, algorithm and time, and no payload', async () => {
    // Staged through the coordinator, so that it traces every collective and message too.
    const result = await runRxccl(['launch', '-n', '2', '--transport', 'tcp_host_staged', '--', ...tsNode('spec/diagnostics/fixtures/traced-job.ts')], { GX1_DEBUG: 'trace' });
    expect(result.code).toBe(0);
    const log = result.stderr;
    expect(log).toMatch(/\[rank 1\] rxccl\[\d+\] INFO rank 1 of 2 joined through coordinator 127\.0\.0\.1:\d+ \(tcp_host_staged, 1 rails, busy-poll \d+ us\) in [\d.]+ ms/);
    expect(log).toMatch(/rxccl\[\d+\] INFO coordinator: rank 0 joined \(collective\)/);
    expect(log).toMatch(/INFO coordinator: every rank joined \(rail 0\)/);
    expect(log).toMatch(/\[rank 0\] rxccl\[\d+\] TRACE rank 0: collective sequence 0 allReduce \(staged, coordinator\) 256 bytes in [\d.]+ ms/);
    expect(log).toMatch(/TRACE rank 1: collective sequence 1 broadcast \(staged, coordinator\) 64 bytes in [\d.]+ ms/);
    expect(log).toMatch(/TRACE coordinator: collective sequence 0 AllReduce 512 bytes in [\d.]+ ms/);
    expect(log).toMatch(/TRACE coordinator: point-to-point rank 0 -> rank 1 tag 11 rail 0: 32 bytes/);
    expect(log).toMatch(/TRACE rank 1: received 32 bytes from rank 0 tag 11 rail 0 in [\d.]+ ms/);
    expect(log).toMatch(/INFO coordinator: every rank left/);
    // Which algorithm and plane each collective takes, named once.
    expect(log).toMatch(/INFO rank 0 allReduce of 256 bytes runs staged on the coordinator plane/);
    // The payload pattern in any notation a formatter might use.
    const pattern = 0x5eedc0de;
    for (const text of [String(pattern), pattern.toString(16), 'de c0 ed 5e', 'dec0ed5e']) expect(log.toLowerCase()).not.toContain(text);
  }, 60_000);
});
