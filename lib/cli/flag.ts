/** How a command declares one of its flags (parsed by args.ts, valued by flag-value.ts). */

/** `size` is a byte count with an optional K, M or G suffix (powers of 1024), as in nccl-tests. */
export type FlagKind = 'integer' | 'size' | 'string' | 'boolean';

export interface Flag {
  readonly kind: FlagKind;
  /** One-letter alias, e.g. `n` for `-n`. */
  readonly short?: string;
  /** Other long names for the same flag (older spellings that keep working). */
  readonly aliases?: readonly string[];
  /** The value's placeholder in help, e.g. `N`. */
  readonly value?: string;
  readonly help: string;
  readonly required?: boolean;
  /** Smallest accepted number (default 0). */
  readonly min?: number;
  /** Largest accepted number (default: none). */
  readonly max?: number;
  /** The value is a comma-separated list (`-n 2,4`), parsed into an array. */
  readonly list?: boolean;
}
