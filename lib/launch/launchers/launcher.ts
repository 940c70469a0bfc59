import type { DiscoveredJob, EnvironmentReader, LauncherName } from '../job-environment.js';

/** One launcher whose variables a rank can read its place in the job from. */
export interface Launcher {
  readonly name: LauncherName;
  /** How the launcher is named to people, e.g. `Open MPI`. */
  readonly title: string;
  /** How to start ranks with it, for error messages. */
  readonly hint: string;
  /** Whether its variables are present at all (then they must be complete). */
  present(reader: EnvironmentReader): boolean;
  discover(reader: EnvironmentReader): DiscoveredJob;
}
