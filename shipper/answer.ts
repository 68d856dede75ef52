// What the push route's answers mean for a batch, and where its rejected lines are in the file. Pure.
//
// The route (POST /internal/v1/events) answers 200 {lines, accepted, inserted, duplicates, skipped, rejected,
// nonGlobal, errors: [{line, reason}]} with line numbers counted in the body; 400 problem+json when no line
// of the body could be stored (errors named `body line N`) or a parameter is wrong; 401 without a valid
// token; 503 with Retry-After while its database is away.

export interface PushAnswer {
  lines: number;
  accepted: number;
  inserted: number;
  duplicates: number;
  skipped: number;
  rejected: number;
  nonGlobal: number;
  errors: { line: number; reason: string }[];
}

/** Why a push did not go through (the `reason` label of blockfeed_ship_batches_failed_total). */
export const FAILURE_REASONS = ['unreachable', 'timeout', 'unavailable', 'server_error', 'too_large', 'unexpected_answer', 'rejected', 'refused'] as const;
export type FailureReason = (typeof FAILURE_REASONS)[number];

export type PushOutcome =
  /** 200: the server read the whole batch (lines it rejected are listed). */
  | { kind: 'stored'; answer: PushAnswer }
  /** 400 naming only body lines: none of the batch could be stored; those lines will never be. */
  | { kind: 'rejected'; errors: { line: number; reason: string }[]; detail: string }
  /** 413: the body is larger than the server (or a proxy before it) takes. */
  | { kind: 'too_large'; detail: string }
  /** Try the same batch again later (the server is away, busy, or answered something unexpected). */
  | { kind: 'retry'; reason: Exclude<FailureReason, 'rejected' | 'refused' | 'too_large'>; detail: string; retryAfterMs?: number }
  /** 401/403: the token is not the server's. Retrying cannot help. */
  | { kind: 'refused'; status: number; detail: string }
  /** Another 4xx: the server refuses the request itself (a wrong URL, format or sensor). Retrying cannot help. */
  | { kind: 'misconfigured'; status: number; detail: string };

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

function asAnswer(body: unknown): PushAnswer | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const a = body as Record<string, unknown>;
  const counts = ['lines', 'accepted', 'inserted', 'duplicates', 'skipped', 'rejected', 'nonGlobal'] as const;
  if (!counts.every((k) => isCount(a[k])) || !Array.isArray(a.errors)) return undefined;
  const errors = (a.errors as unknown[]).filter(
    (e): e is { line: number; reason: string } => typeof e === 'object' && e !== null && isCount((e as { line?: unknown }).line) && typeof (e as { reason?: unknown }).reason === 'string',
  );
  if (errors.length !== a.errors.length) return undefined;
  return { ...(a as unknown as PushAnswer), errors: errors.map((e) => ({ line: e.line, reason: e.reason })) };
}

interface Problem {
  detail: string;
  errors: { name: string; reason: string }[];
}

function asProblem(text: string): Problem | undefined {
  try {
    const p = JSON.parse(text) as { detail?: unknown; title?: unknown; errors?: unknown };
    const errors = Array.isArray(p.errors)
      ? p.errors.filter((e): e is { name: string; reason: string } => typeof (e as { name?: unknown })?.name === 'string' && typeof (e as { reason?: unknown }).reason === 'string')
      : [];
    const detail = typeof p.detail === 'string' ? p.detail : typeof p.title === 'string' ? p.title : '';
    return { detail, errors };
  } catch {
    return undefined;
  }
}

/** A short, printable excerpt of an answer that is not what the route sends (a proxy's page, say). */
const excerpt = (text: string) => text.replace(/[^\x20-\x7e]+/g, ' ').trim().slice(0, 200);

/** Retry-After as milliseconds from `now`: delta-seconds or an HTTP date; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+$/.test(text)) return Number(text) * 1000;
  const at = Date.parse(text);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

/** What an HTTP answer to a push means (`headers`: its Retry-After and Location). */
export function classifyAnswer(status: number, headers: { retryAfter: string | null; location: string | null }, text: string, now: number): PushOutcome {
  const retryAfter = headers.retryAfter;
  if (status === 200) {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON: below */
    }
    const answer = asAnswer(body);
    return answer ? { kind: 'stored', answer } : { kind: 'retry', reason: 'unexpected_answer', detail: `200 without the route's counts: ${excerpt(text)}` };
  }
  const problem = asProblem(text);
  const detail = problem?.detail || excerpt(text) || `HTTP ${status}`;
  if (status === 401 || status === 403) return { kind: 'refused', status, detail };
  if (status === 413) return { kind: 'too_large', detail };
  if (status === 400 && problem && problem.errors.length > 0) {
    const lines = problem.errors.map((e) => ({ line: Number(/^body line (\d+)$/.exec(e.name)?.[1]), reason: e.reason }));
    if (lines.every((e) => Number.isInteger(e.line) && e.line > 0)) return { kind: 'rejected', errors: lines, detail };
  }
  if (status === 429 || status === 503) return { kind: 'retry', reason: 'unavailable', detail, retryAfterMs: retryAfterMs(retryAfter, now) };
  if (status >= 500) return { kind: 'retry', reason: 'server_error', detail: `${status}: ${detail}`, retryAfterMs: retryAfterMs(retryAfter, now) };
  if (status >= 400) return { kind: 'misconfigured', status, detail };
  // A redirect is not followed: it would turn the POST into a GET, or carry the token somewhere else.
  if (status >= 300 && status < 400) return { kind: 'misconfigured', status, detail: `redirected to ${excerpt(headers.location ?? '(no Location)')}: give that URL` };
  return { kind: 'retry', reason: 'unexpected_answer', detail: `HTTP ${status}: ${excerpt(text)}` };
}

/** Where a batch came from: its file, the file line of its first line, and the header lines sent ahead of it. */
export interface BatchPlace {
  name: string;
  firstLine: number;
  lines: number;
  headerLines: number;
}

/**
 * A rejected body line as `file:line: reason`, or undefined for a line of the header sent ahead of the batch
 * (its own rejection was reported with the batch that held the file's first line).
 */
export function rejectionMessage(place: BatchPlace, bodyLine: number, reason: string): string | undefined {
  const line = bodyLine - place.headerLines;
  if (line < 1 || line > place.lines) return undefined;
  return `${place.name}:${place.firstLine + line - 1}: ${reason}`;
}

/** Back-off before retry `attempt` (0 = the first retry): exponential from 500 ms to 30 s, with jitter, never sooner than Retry-After. */
export function retryDelayMs(attempt: number, random: number, retryAfter?: number): number {
  const ceiling = Math.min(30_000, 500 * 2 ** Math.min(attempt, 16));
  // "equal jitter": at least half the ceiling, so that a retry never follows at once
  const jittered = Math.round(ceiling / 2 + (random * ceiling) / 2);
  return Math.max(jittered, Math.min(retryAfter ?? 0, 300_000));
}

/**
 * What the answer to an empty push says about access. The route checks the token first and then refuses an
 * empty body naming `body` (400), so an empty push tells a good token from a bad one and stores nothing.
 */
export function accessFromProbe(status: number, text: string): { kind: 'granted' } | { kind: 'refused'; status: number; detail: string } | { kind: 'unknown'; detail: string } {
  const problem = asProblem(text);
  const detail = problem?.detail || excerpt(text) || `HTTP ${status}`;
  if (status === 400 && problem && problem.errors.length > 0 && problem.errors.every((e) => e.name === 'body')) return { kind: 'granted' };
  if (status >= 300 && status < 500 && status !== 408 && status !== 429) return { kind: 'refused', status, detail };
  return { kind: 'unknown', detail: `${status}: ${detail}` };
}
