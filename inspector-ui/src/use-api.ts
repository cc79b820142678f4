/** Loads an API answer for a view, again whenever `deps` change. */
import { useEffect, useState } from 'preact/hooks';

export interface Loaded<T> {
  data?: T;
  error?: Error;
  loading: boolean;
}

export function useApi<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<Loaded<T>>({ loading: true });
  useEffect(() => {
    let live = true;
    setState((s) => ({ ...s, loading: true }));
    load().then(
      (data) => live && setState({ data, loading: false }),
      (error: Error) => live && setState({ error, loading: false }),
    );
    return () => {
      live = false;
    };
  }, deps);
  return state;
}
