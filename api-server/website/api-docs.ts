// The API documentation page, rendered from the server's own /openapi.json (fetched in-process once), so it
// documents exactly the parameters the API validates, in the wording its 400 answers use.
import type { FastifyInstance } from 'fastify';
import { describeAllowed, type JsonSchemaLike } from '../schema-text.ts';
import type { Locale } from './i18n.ts';
import { sendPage } from './pages.ts';
import type { SiteDeps } from './site.ts';

/** The part of an OpenAPI 3.1 document the page reads. */
export interface OpenApiDocument {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, OpenApiOperation>>;
}

interface OpenApiOperation {
  summary?: string;
  tags?: string[];
  parameters?: { name: string; in: string; description?: string; schema?: JsonSchemaLike & { default?: unknown } }[];
  security?: Record<string, string[]>[];
}

export interface Operation {
  method: string;
  path: string;
  summary: string;
  anchor: string;
  credential: string;
  parameters: { name: string; allowed: string; default: string; description: string }[];
}

/** One API of the document (an OpenAPI tag: the token API, the key API), in the page's language. */
export interface ApiGroup {
  tag: string;
  heading: string;
  about: string;
  operations: Operation[];
}

/** The operations grouped by tag, in the document's order. Pure. */
export function apiReference(doc: OpenApiDocument, locale: Locale): ApiGroup[] {
  const groups = new Map<string, Operation[]>();
  const { t } = locale;
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      const security = op.security ?? [];
      const schemes = [...new Set(security.flatMap((s) => Object.keys(s)))].map((s) => t.docs.security[s] ?? s).join(' · ');
      const optional = security.length === 0 || security.some((s) => Object.keys(s).length === 0);
      const operation: Operation = {
        method: method.toUpperCase(),
        path,
        summary: op.summary ?? '',
        anchor: `${method}-${path}`.replace(/[^a-z0-9]+/gi, '-').replace(/^-|-$/g, ''),
        credential: !schemes ? t.docs.securityNone : optional ? t.docs.optional(schemes) : t.docs.required(schemes),
        parameters: (op.parameters ?? [])
          .filter((p) => p.in === 'query')
          .map((p) => ({
            name: p.name,
            allowed: describeAllowed(p.schema ?? {}),
            default: p.schema?.default === undefined ? t.docs.none : String(p.schema.default as string | number),
            description: p.description ?? p.schema?.description ?? '',
          })),
      };
      const tag = op.tags?.[0] ?? '';
      groups.set(tag, [...(groups.get(tag) ?? []), operation]);
    }
  }
  return [...groups].map(([tag, operations]) => ({ tag, heading: t.docs.apis[tag]?.heading ?? tag, about: t.docs.apis[tag]?.about ?? '', operations }));
}

export async function apiDocsPage(app: FastifyInstance, _deps: SiteDeps): Promise<void> {
  let document: Promise<OpenApiDocument> | undefined;
  const openApi = () =>
    (document ??= app.inject({ method: 'GET', url: '/openapi.json' }).then((res) => {
      if (res.statusCode !== 200) throw new Error(`/openapi.json answered ${res.statusCode}`);
      return res.json<OpenApiDocument>();
    })).catch((err: Error) => {
      document = undefined;
      throw err;
    });

  app.get('/docs', async (req, reply) => {
    const doc = await openApi();
    const { locale } = req.visit;
    return sendPage(reply, 'docs', req.visit, { title: locale.t.docs.title }, { info: doc.info, groups: apiReference(doc, locale) });
  });
}
