import { concatMap, type ObservableInput, type OperatorFunction, share } from 'rxjs';

/**
 * The shape of every collective operator: one collective per input value, submitted in order
 * (the next waits for the previous), exactly once however many subscribers the result has (the
 * result is shared). A failed collective errors the stream with the session's failure.
 */
export function perValue<T, R>(submit: (value: T) => ObservableInput<R>): OperatorFunction<T, R> {
  return (source) => source.pipe(concatMap((value) => submit(value)), share());
}
