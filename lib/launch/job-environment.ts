import { ConfigurationError } from '../errors.js';
import type { CollectiveTransport } from '../transport/transport-kind.js';
import { type Environment, type Settings, settingsOf } from '../settings/read-settings.js';
import { isVariableName } from '../settings/settings-table.js';

export type { Environment };

/** The launchers a rank recognises from its environment. */
export type LauncherName = 'rxccl' | 'torchrun' | 'open-mpi' | 'slurm' | 'kubernetes';

/** Everything a rank learnt about its job from the environment (no side effects yet). */
export interface DiscoveredJob {
  readonly launcher: LauncherName;
  readonly rank: number;
  readonly worldSize: number;
  /** This rank's index among the ranks of its host, where the launcher says. */
  readonly localRank: number | null;
  readonly localWorldSize: number | null;
  /** Where the ranks reach the coordinator. */
  readonly coordinator: { readonly host: string; readonly port: number };
  /** 32 hex digits. */
  readonly uniqueId: string;
  /**
   * Set when no coordinator runs separately: rank 0 hosts one in-process, bound to `bind` on
   * `coordinator.port` (as torchrun's rank 0 hosts its store).
   */
  readonly hostCoordinator: { readonly bind: string } | null;
  readonly rails: number;
  readonly transport: CollectiveTransport;
  /** `GX1_TIMEOUT_MS`: the session timeout (connecting, and each response). */
  readonly timeoutMs: number | undefined;
  /** `GX1_COLLECTIVE_TIMEOUT_MS`: every rank's collective timeout, and that of the coordinator rank 0 hosts. */
  readonly collectiveTimeoutMs: number | undefined;
  /** `GX1_HEARTBEAT_TIMEOUT_MS`: for the coordinator rank 0 hosts. */
  readonly heartbeatTimeoutMs: number | undefined;
}

const SESSION_FROM_ENVIRONMENT = 'cannot open a session from the environment';

/**
 * Reads one launcher's variables and reports what is wrong with them in one error: which
 * variables were found (with their values, so a mix-up is visible) and which are missing. The
 * `GX1_*` ones it takes from the settings of `env`, a launcher's own (`SLURM_PROCID`, `RANK`, ...)
 * from `env`.
 */
export class EnvironmentReader {
  constructor(
    readonly env: Environment,
    /** How the launcher is named in errors, e.g. `torchrun`. */
    readonly launcher: string,
    /**
     * The settings of `env`: by default read here (this process's once for the process, any other
     * environment now), or those the caller read already, so that asking every launcher about one
     * environment reads its settings table once (`discoverJob`).
     */
    readonly settings: Settings = settingsOf(env),
  ) {}

  has(name: string): boolean {
    const value = this.raw(name);
    return value !== undefined && value.trim() !== '';
  }

  text(name: string): string | undefined {
    return this.has(name) ? this.raw(name)!.trim() : undefined;
  }

  /** The variable as set. */
  private raw(name: string): string | undefined {
    return isVariableName(name) ? this.settings[name].text : this.env[name];
  }

  /** Fails naming every missing variable at once, and what was found next to them. */
  require(names: readonly string[], context: readonly string[] = []): void {
    const missing = names.filter((name) => !this.has(name));
    if (missing.length === 0) return;
    const found = [...new Set([...names, ...context])].filter((name) => this.has(name));
    throw this.error(
      `the ${this.launcher} variables are incomplete: missing ${missing.join(', ')}` +
        (found.length > 0 ? `; found ${this.show(found)}` : ''),
    );
  }

  /** A required non-negative integer. */
  integer(name: string): number {
    this.require([name]);
    const value = this.text(name)!;
    if (!/^\d+$/.test(value) || !Number.isSafeInteger(Number(value))) {
      throw this.error(`${name} must be a non-negative integer, got ${JSON.stringify(this.raw(name))}`);
    }
    return Number(value);
  }

  optionalInteger(name: string): number | undefined {
    return this.has(name) ? this.integer(name) : undefined;
  }

  /** A unique id variable: 32 hex digits. */
  uniqueId(name: string): string {
    this.require([name]);
    const value = this.text(name)!;
    if (!/^[0-9a-fA-F]{32}$/.test(value)) throw this.error(`${name} must be 32 hex digits, got ${JSON.stringify(this.raw(name))}`);
    return value.toLowerCase();
  }

  /** `NAME=value, NAME=value` for an error message. */
  show(names: readonly string[]): string {
    return names.map((name) => `${name}=${this.raw(name) ?? ''}`).join(', ');
  }

  error(detail: string): ConfigurationError {
    return new ConfigurationError(`${SESSION_FROM_ENVIRONMENT} (${this.launcher}): ${detail}`);
  }
}

/** The error when no launcher's variables are present at all. */
export function noLauncherError(lookedFor: readonly string[]): ConfigurationError {
  return new ConfigurationError(
    `${SESSION_FROM_ENVIRONMENT}: no launcher variables found (looked for ${lookedFor.join('; ')}); ` +
      'start the ranks with `rxccl launch -n N -- COMMAND`, or pass options to openSession()',
  );
}

/** `host:port`, with an IPv6 host in brackets (as `parseHostPort` reads it back). */
export function hostPort(address: { readonly host: string; readonly port: number }): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}
