/**
 * The IxJS type that `session.messages()` returns. Any IxJS declaration pulls in all of IxJS's,
 * and those name the DOM's `StreamPipeOptions`, which a Node.js project compiled without lib
 * "dom" lacks: with `skipLibCheck: false` its build would fail on IxJS's files. Declared here
 * exactly as lib.dom.d.ts declares it, so it merges with the DOM's where that is present.
 */
declare global {
  interface StreamPipeOptions {
    preventAbort?: boolean;
    preventCancel?: boolean;
    preventClose?: boolean;
    signal?: AbortSignal;
  }
}

export type { AsyncIterableX } from 'ix/asynciterable/asynciterablex';
