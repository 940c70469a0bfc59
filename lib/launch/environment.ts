import { ConfigurationError } from '../errors.js';
import type { SessionOptions } from '../rank/session-options.js';
import { parseRails } from '../transport/transport-kind.js';

type Environment = Readonly<Record<string, string | undefined>>;

function integer(env: Environment, name: string): number {
  const value = env[name]!;
  if (!/^\s*\d+\s*$/.test(value)) throw new ConfigurationError(`${name} must be a non-negative integer, got ${JSON.stringify(value)}`);
  return Number(value);
}

/**
 * Session options from the `GX1_*` variables that `rxccl launch` sets:
 * `GX1_COORDINATOR` (host:port), `GX1_UNIQUE_ID` (32 hex digits), `GX1_RANK`, `GX1_WORLD_SIZE`,
 * and optionally `GX1_P2P_RAILS`, `GX1_COLLECTIVE_TRANSPORT`, `GX1_TIMEOUT_MS`.
 */
export async function sessionOptionsFromEnvironment(env: Environment): Promise<SessionOptions> {
  const required = ['GX1_COORDINATOR', 'GX1_UNIQUE_ID', 'GX1_RANK', 'GX1_WORLD_SIZE'];
  const missing = required.filter((name) => env[name] === undefined || env[name] === '');
  if (missing.length > 0) {
    const found = required.filter((name) => !missing.includes(name));
    throw new ConfigurationError(
      `cannot open a session from the environment: missing ${missing.join(', ')}` +
        (found.length > 0 ? ` (found ${found.join(', ')})` : '') +
        '; run ranks under `rxccl launch` or pass options to openSession()',
    );
  }
  return {
    coordinator: env.GX1_COORDINATOR!,
    uniqueId: env.GX1_UNIQUE_ID!,
    rank: integer(env, 'GX1_RANK'),
    worldSize: integer(env, 'GX1_WORLD_SIZE'),
    rails: parseRails(env.GX1_P2P_RAILS),
    ...(env.GX1_COLLECTIVE_TRANSPORT !== undefined ? { transport: env.GX1_COLLECTIVE_TRANSPORT } : {}),
    ...(env.GX1_TIMEOUT_MS !== undefined ? { timeoutMs: integer(env, 'GX1_TIMEOUT_MS') } : {}),
  };
}
