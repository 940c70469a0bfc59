import { connect as tlsConnect } from 'node:tls';

/**
 * Whether `host:port` is a TLS listener: asked by a plain-TCP rank whose connection ended before
 * the coordinator said a word of GX1, as a TLS listener ends it (it waits for a ClientHello the
 * rank never sends). One TLS handshake on a connection of its own, no certificate: a TLS listener
 * completes it, or refuses it with a TLS alert (it requires a certificate); anything else (plain
 * GX1 bytes, a close, a timeout) is not TLS.
 */
export function speaksTls(host: string, port: number, timeoutMs: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tlsConnect({ host, port, rejectUnauthorized: false, checkServerIdentity: () => undefined });
    const done = (tls: boolean) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(tls);
    };
    const timer = setTimeout(() => done(false), Math.max(0, timeoutMs));
    socket.once('secureConnect', () => done(true));
    socket.once('error', (error: NodeJS.ErrnoException) => done(/ALERT/.test(error.code ?? '')));
  });
}
