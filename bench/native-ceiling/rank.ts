/**
 * One rank of the native-ceiling bench (run.ts starts W of them with `rxccl launch`): one f32 sum
 * all-reduce of CEILING_BYTES whose result is checked, then CEILING_CALLS warm-up calls and as many
 * timed, back to back and in place, either through rxccl (`CEILING_IMPL=rxccl` or `rxccl-native`:
 * `openSession()`, tcp_peer, on the data plane GX1_DATA_PLANE names) or through the prototype addon (`native-block`, `native-spin`: data-plane.cc at
 * CEILING_ADDON) over a mesh of its own on 127.0.0.1, ports CEILING_PORT_BASE + rank (the session
 * is opened all the same, and stays idle). Prints one JSON line: rank, mean µs per call, user and
 * system CPU µs per call.
 */
import { createRequire } from 'node:module';
import net from 'node:net';
import { openSession } from '../../lib/index.js';

interface DataPlane {
  allReduce(fds: number[], rank: number, worldSize: number, bytes: Uint8Array, algorithm: string, wait: string, done: (error: Error | null) => void): void;
}

const env = process.env;
const impl = env.CEILING_IMPL ?? 'rxccl';
const bytes = Number(env.CEILING_BYTES ?? 8);
const calls = Number(env.CEILING_CALLS ?? 1000);
const rank = Number(env.GX1_RANK);
const worldSize = Number(env.GX1_WORLD_SIZE);
const values = new Float32Array(Math.max(1, Math.floor(bytes / 4)));
const tensor = new Uint8Array(values.buffer);

/** Sockets to every other rank, by rank: each dials the ranks below it and says who it is. */
async function connectMesh(base: number): Promise<net.Socket[]> {
  const sockets: net.Socket[] = [];
  await new Promise<void>((resolve, reject) => {
    let missing = worldSize - 1;
    const arrived = (peer: number, socket: net.Socket) => {
      // The prototype's thread reads these sockets from now on: Node must not read them too.
      (socket as unknown as { _handle: { readStop(): void } })._handle.readStop();
      socket.setNoDelay(true);
      sockets[peer] = socket;
      if (--missing === 0) resolve();
    };
    const server = net.createServer((socket) => socket.once('data', (hello) => arrived(hello.readUInt32LE(0), socket)));
    server.on('error', reject);
    server.listen(base + rank, '127.0.0.1', () => {
      for (let peer = 0; peer < rank; peer++) {
        const dial = () => {
          const socket = net.connect(base + peer, '127.0.0.1');
          socket.once('error', () => setTimeout(dial, 20));
          socket.once('connect', () => {
            const hello = Buffer.alloc(4);
            hello.writeUInt32LE(rank);
            socket.write(hello, () => arrived(peer, socket));
          });
        };
        dial();
      }
      if (missing === 0) resolve();
    });
  });
  return sockets;
}

async function nativeCall(): Promise<() => Promise<void>> {
  const plane = createRequire(import.meta.url)(env.CEILING_ADDON!) as DataPlane;
  const sockets = await connectMesh(Number(env.CEILING_PORT_BASE));
  // Every rank's mesh is up before the first call (the last hello may still be on its way).
  await new Promise((resolve) => setTimeout(resolve, 300));
  const fds = Array.from({ length: worldSize }, (_, peer) => (peer === rank ? -1 : (sockets[peer] as unknown as { _handle: { fd: number } })._handle.fd));
  const algorithm = bytes <= 64 * 1024 ? 'all-pairs' : 'pairwise';
  const wait = impl === 'native-spin' ? 'spin' : 'block';
  return () => new Promise<void>((resolve, reject) => plane.allReduce(fds, rank, worldSize, tensor, algorithm, wait, (error) => (error ? reject(error) : resolve())));
}

// Every rank joins the job (the launcher expects it); only rxccl's calls go through the session.
const session = await openSession();
const call = impl.startsWith('rxccl') ? async () => void (await session.allReduce(values, 'sum', { inPlace: true })) : await nativeCall();
// One checked call first, so both sides are known to all-reduce: element i is rank + 1 + i % 7 on
// each rank (a segment in the wrong place shows), their sum on every rank afterwards.
values.forEach((_, index) => (values[index] = rank + 1 + (index % 7)));
await call();
const expected = (index: number) => (worldSize * (worldSize + 1)) / 2 + worldSize * (index % 7);
const wrong = values.findIndex((value, index) => value !== expected(index));
if (wrong >= 0) {
  console.error(`${impl} rank ${rank}: element ${wrong} is ${values[wrong]} after the all-reduce, expected ${expected(wrong)}`);
  process.exit(1);
}
// Zeros stay zeros however often they are summed: every timed call moves the same finite values.
values.fill(0);
for (let i = 0; i < calls; i++) await call();
const cpu = process.cpuUsage();
const started = performance.now();
for (let i = 0; i < calls; i++) await call();
const meanUs = ((performance.now() - started) * 1000) / calls;
const used = process.cpuUsage(cpu);
console.log(JSON.stringify({ rank, meanUs, userUs: used.user / calls, systemUs: used.system / calls }));
// Leaving is a collective of the session: nobody closes its mesh sockets while a peer still uses them.
await session.close();
process.exit(0);
