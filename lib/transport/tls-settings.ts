import { readFileSync } from 'node:fs';
import { connect as netConnect, createServer as createNetServer, type Server, type Socket } from 'node:net';
import { connect as tlsConnect, createServer as createTlsServer } from 'node:tls';
import { ConfigurationError } from '../errors.js';
import type { Admission } from './admission.js';
import type { OnReadOption } from './direct-reads.js';

/**
 * Optional TLS for every channel of a job (coordinator channels and mesh links): each side
 * presents the job's certificate; with a CA, each side also requires the other's certificate to
 * be signed by it (mutual TLS; host names are not checked: the CA vouches for membership).
 * Without a CA, TLS only hides the traffic from passive listeners (docs/architecture.md, threat
 * model). Options win over `GX1_TLS_CERT`, `GX1_TLS_KEY`, `GX1_TLS_CA` (PEM file paths).
 */
export interface TlsSettings {
  readonly cert: Buffer;
  readonly key: Buffer;
  readonly ca: Buffer | null;
}

/** PEM text or bytes, as `tls.createSecureContext` takes them. */
export interface TlsOptions {
  readonly cert: string | Uint8Array;
  readonly key: string | Uint8Array;
  readonly ca?: string | Uint8Array;
}

/** The PEM files `GX1_TLS_CERT`, `GX1_TLS_KEY` and `GX1_TLS_CA` name, as set (the settings' texts). */
export interface TlsVariables {
  readonly cert: string | undefined;
  readonly key: string | undefined;
  readonly ca: string | undefined;
}

export function resolveTls(option: TlsOptions | undefined, variables: TlsVariables): TlsSettings | null {
  if (option !== undefined) {
    return { cert: Buffer.from(option.cert), key: Buffer.from(option.key), ca: option.ca === undefined ? null : Buffer.from(option.ca) };
  }
  const [cert, key, ca] = [pemFile('GX1_TLS_CERT', variables.cert), pemFile('GX1_TLS_KEY', variables.key), pemFile('GX1_TLS_CA', variables.ca)];
  if (cert === null && key === null) {
    if (ca !== null) throw new ConfigurationError('GX1_TLS_CA is set without GX1_TLS_CERT and GX1_TLS_KEY: every side presents the job certificate');
    return null;
  }
  if (cert === null || key === null) throw new ConfigurationError(`${cert === null ? 'GX1_TLS_CERT' : 'GX1_TLS_KEY'} is missing: TLS needs both a certificate and its key`);
  return { cert, key, ca };
}

function pemFile(name: string, path: string | undefined): Buffer | null {
  if (path === undefined || path === '') return null;
  try {
    return readFileSync(path);
  } catch (error) {
    throw new ConfigurationError(`cannot read ${name} ${JSON.stringify(path)}: ${(error as Error).message}`, { cause: error });
  }
}

function secureOptions(tls: TlsSettings) {
  const verify = tls.ca !== null;
  return { cert: tls.cert, key: tls.key, ...(verify ? { ca: tls.ca! } : {}), rejectUnauthorized: verify };
}

/**
 * A listener, plain or TLS; `onConnection` sees each connection once it can carry frames (after
 * the TLS handshake, which must finish within `handshakeTimeoutMs`). Every connection counts in
 * `admission` from its TCP accept until the acceptor says it authenticated.
 */
export function createListener(tls: TlsSettings | null, handshakeTimeoutMs: number, admission: Admission, onConnection: (socket: Socket) => void): Server {
  if (tls === null) {
    return createNetServer({ noDelay: true }, (socket) => {
      admission.admit(socket);
      admission.handOver(socket);
      onConnection(socket);
    });
  }
  const server = createTlsServer({ ...secureOptions(tls), requestCert: tls.ca !== null, handshakeTimeout: handshakeTimeoutMs }, (socket) => {
    admission.handOver(socket);
    onConnection(socket);
  });
  // The raw connection, before its TLS handshake (the TLS server's own listener runs first).
  server.on('connection', (raw: Socket) => admission.admit(raw));
  // A failed or timed-out TLS handshake: with a listener here Node leaves the socket open, so a
  // silent stranger would hold its descriptor forever.
  server.on('tlsClientError', (_error, socket) => socket.destroy());
  return server;
}

/**
 * Dials `host:port`, plain or TLS; resolves once frames can flow, rejects with the socket's error
 * or, after `timeoutMs`, with `timedOut()` (the socket destroyed either way). `onread` reads the
 * socket into memory of the caller's choosing (`DirectReads`).
 */
export function dialSocket(host: string, port: number, tls: TlsSettings | null, timeoutMs: number, timedOut: () => Error, onread?: OnReadOption): Promise<Socket> {
  return new Promise<Socket>((resolve, reject) => {
    const read = onread === undefined ? {} : { onread };
    const socket =
      tls === null
        ? netConnect({ host, port, noDelay: true, ...read })
        : tlsConnect({ host, port, ...secureOptions(tls), checkServerIdentity: () => undefined, ...read });
    const fail = (error: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(error);
    };
    const timer = setTimeout(() => fail(timedOut()), Math.max(0, timeoutMs));
    socket.once(tls === null ? 'connect' : 'secureConnect', () => {
      clearTimeout(timer);
      socket.off('error', fail);
      resolve(socket);
    });
    socket.once('error', fail);
  });
}
