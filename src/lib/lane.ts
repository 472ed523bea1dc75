/**
 * A lane: functions run one after another, in the order they were handed in, each starting
 * when the one before it has settled; one failing does not stop the next.
 */
export type Lane = <T>(fn: () => Promise<T>) => Promise<T>;

export function lane(): Lane {
  let tail: Promise<unknown> = Promise.resolve();
  return (fn) => {
    const p = tail.then(fn);
    tail = p.catch(() => {});
    return p;
  };
}
