/**
 * One process of the network-namespace test (spec/transport/netns.spec.ts), run inside a
 * namespace with `ip netns exec`. `coordinator HOST WORLD RAILS UNIQUE_ID` prints the bound port
 * and lives until the job ends; `rank` opens a tcp_peer session from the GX1_* environment,
 * exchanges a message with the other rank on every rail and all-reduces a small and a large
 * tensor, printing one JSON line of what it saw (and which algorithm and plane each collective took).
 */
import { Coordinator } from '../../lib/coordinator/coordinator.js';
import { openSession } from '../../lib/launch/open-session.js';
import { meshLocalAddress } from './mesh-sockets.js';

const [mode, ...args] = process.argv.slice(2);
if (mode === 'coordinator') {
  const [host, worldSize, rails, uniqueId] = args as [string, string, string, string];
  const coordinator = await Coordinator.listen({ host, port: 0, uniqueId, worldSize: Number(worldSize), rails: Number(rails), transport: 'tcp_peer', collectiveTimeoutMs: 10_000 });
  console.log(JSON.stringify({ port: coordinator.address.port }));
  await coordinator.done;
} else {
  const session = await openSession();
  const peer = 1 - session.rank;
  const received: number[][] = [];
  for (let rail = 0; rail < session.rails; rail++) {
    const [, message] = await Promise.all([
      session.send(peer, 100 + rail, Float64Array.of(session.rank, rail), { rail }),
      session.receive(peer, 100 + rail, { dtype: 'f64', count: 2 }, { rail }),
    ]);
    received.push(Array.from(message as Float64Array));
  }
  // Which local address each rail's link uses, to prove the rail went over its own network.
  const localAddresses = Array.from({ length: session.rails }, (_, rail) => meshLocalAddress(session, peer, rail));
  const collectives: string[] = [];
  session.events$.subscribe((event) => {
    if (event.type === 'collective-finished') collectives.push(`${event.collective} ${event.algorithm} on ${event.plane}`);
  });
  const sums: number[] = [];
  for (const count of [2, 1 << 18, 1 << 21]) {
    const sum = await session.allReduce(new Float32Array(count).fill(session.rank + 1));
    sums.push(sum.every((value) => value === 3) ? 3 : NaN);
  }
  await session.barrier();
  await session.close();
  console.log(JSON.stringify({ rank: session.rank, received, localAddresses, sums, collectives }));
}
