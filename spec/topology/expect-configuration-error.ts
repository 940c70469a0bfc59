import { expect } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';

/** Runs `action`, expecting a ConfigurationError (code INVALID_CONFIGURATION) with exactly `message`. */
export function expectConfigurationError(action: () => unknown, message: string): void {
  let thrown: unknown;
  try {
    action();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(ConfigurationError);
  expect((thrown as ConfigurationError).code).toBe('INVALID_CONFIGURATION');
  expect((thrown as ConfigurationError).message).toBe(message);
}
