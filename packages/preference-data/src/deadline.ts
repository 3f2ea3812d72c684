/**
 * Bounding how long a user's asynchronous function may take. A Promise that never settles would
 * otherwise leave nothing in Node's event loop, and the process would exit (code 13, unsettled
 * top-level await) without a word; the pending timer is what keeps it alive until the error.
 */
import { timerDelayMs } from "@pbrl/core-tensor";

/** Checks a timeout in seconds as the config states it: a finite number > 0, or null for no limit. */
export function checkTimeoutS(value: number | null, field: string): number | null {
  if (value === null) return null;
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new RangeError(`${field} must be a finite number of seconds > 0, or null for no limit; got ${String(value)}`);
  }
  return value;
}

/**
 * `work`, unless it takes longer than `timeoutS` (then `onTimeout()` is the rejection) or
 * `signal` aborts first (then its reason is). The timer and the abort listener are removed as
 * soon as anything settles, so a finished call holds nothing open.
 */
export function settleWithin<T>(work: PromiseLike<T>, timeoutS: number | null, onTimeout: () => Error, signal?: AbortSignal): Promise<T> {
  if (timeoutS === null && signal === undefined) return Promise.resolve(work);
  return new Promise<T>((resolve, reject) => {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const release = (): void => {
      if (timer !== undefined) clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    };
    const onAbort = (): void => {
      release();
      reject(signal!.reason);
    };
    if (signal?.aborted === true) return onAbort();
    signal?.addEventListener("abort", onAbort, { once: true });
    if (timeoutS !== null) {
      timer = setTimeout(() => {
        release();
        reject(onTimeout());
      }, timerDelayMs(timeoutS));
    }
    work.then(
      (value) => {
        release();
        resolve(value);
      },
      (err: unknown) => {
        release();
        reject(err);
      },
    );
  });
}
