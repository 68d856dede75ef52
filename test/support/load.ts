// Traffic for the tests that break the store under load (the embedded server killed, a CloudNativePG primary
// deleted): workers sending requests in a loop until stopped, every answer recorded, and the events whose push
// was acknowledged remembered — the ones that must all be there afterwards.

export interface Answer {
  at: number;
  /** How long the answer took (its head), or the failure. */
  ms: number;
  what: string;
  /** 0: no answer (connection failed, or none within the time-out). */
  status: number;
  retryAfter: string | null;
  contentType: string | null;
  /** Why the answer or its body failed. */
  error?: string;
  /** A 200 whose body was cut off because the store went away mid-list (never a silently short list). */
  cutOff?: boolean;
  /** A refusal's reason: problem+json's `detail` (or /readyz's `reason`). */
  detail?: string;
}

export interface LoadRequest {
  /** What the request is, for the figures (push, list, ...). */
  what: string;
  /** Path and query, appended to the load's base URL. */
  path: string;
  init?: RequestInit;
  /** A push of one event: its source address, remembered when the push is acknowledged. */
  event?: string;
}

export interface Acknowledged {
  /** The pushed event's source address. */
  event: string;
  at: number;
}

export interface Load {
  readonly answers: Answer[];
  /** The pushed events the api-server acknowledged (200 with `inserted: 1`), in order. */
  readonly acknowledged: Acknowledged[];
  stop(): Promise<void>;
}

export interface LoadOptions {
  /** A request without an answer (or a body) for this long is recorded as failed. */
  timeoutMs?: number;
  /** A new connection per request (`connection: close`), as clients that come and go make them. */
  newConnections?: boolean;
}

/**
 * One worker per entry of `requests`, each sending the request its function makes for a running number (shared
 * by all workers, so pushes carry distinct events) until stopped.
 */
export function startLoad(base: string, requests: ((n: number) => LoadRequest)[], { timeoutMs = 5000, newConnections = false }: LoadOptions = {}): Load {
  const answers: Answer[] = [];
  const acknowledged: Acknowledged[] = [];
  let running = true;
  let n = 0;
  async function one(make: (n: number) => LoadRequest): Promise<void> {
    const { what, path, init = {}, event } = make(n++);
    const headers = new Headers(init.headers);
    if (newConnections) headers.set('connection', 'close');
    const sent = Date.now();
    let res: Response;
    try {
      res = await fetch(`${base}${path}`, { ...init, headers, signal: AbortSignal.timeout(timeoutMs) });
    } catch (err) {
      answers.push({ at: Date.now(), ms: Date.now() - sent, what, status: 0, retryAfter: null, contentType: null, error: String((err as Error).cause ?? err) });
      return;
    }
    const answer: Answer = { at: Date.now(), ms: Date.now() - sent, what, status: res.status, retryAfter: res.headers.get('retry-after'), contentType: res.headers.get('content-type') };
    answers.push(answer);
    try {
      const body = await res.text();
      if (event !== undefined && res.status === 200 && (JSON.parse(body) as { inserted: number }).inserted === 1) acknowledged.push({ event, at: Date.now() });
      if (res.status >= 400) {
        const problem = JSON.parse(body) as { detail?: string; reason?: string };
        answer.detail = problem.detail ?? problem.reason;
      }
    } catch (err) {
      answer.error = String((err as Error).cause ?? err);
      answer.cutOff = (err as Error).name !== 'TimeoutError';
    }
  }
  const workers = requests.map(async (make) => {
    while (running) await one(make);
  });
  return {
    answers,
    acknowledged,
    stop: async () => {
      running = false;
      await Promise.all(workers);
    },
  };
}

/** A distinct public source address for the n-th pushed event (11.0.0.0/8). */
export function loadEventSource(n: number): string {
  return `11.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
}

/** A push of one new event (a login attempt from loadEventSource(n)) to the ingest route, as a sensor sends it. */
export function pushOneEvent(n: number, token: string, sensor: string): LoadRequest {
  const src = loadEventSource(n);
  return {
    what: 'push',
    path: '/internal/v1/events?format=native',
    init: {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/x-ndjson' },
      body: JSON.stringify({ ts: new Date(Date.now() - 1000).toISOString(), src_ip: src, dst_port: 22, source: 'honeypot', sensor, username: 'root' }),
    },
    event: src,
  };
}
