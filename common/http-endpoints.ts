// The small HTTP endpoints the long-running commands other than `serve` open beside their work (the
// controller's metrics and probes, the shipper's metrics): how their bind address is written, and a
// listener that turns "address in use" into one clear line.
import { createServer, type RequestListener, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { UserError } from './errors.ts';
import type { Logger } from './logging.ts';

export interface BindAddress {
  host: string;
  port: number;
}

/** ":8080" = every interface, "127.0.0.1:0" = loopback on a free port, "[::1]:9464" = IPv6, "0" = off. */
export function parseBindAddress(text: string, flag: string): BindAddress | undefined {
  if (text === '0') return undefined;
  const m = /^(.*):(\d{1,5})$/.exec(text);
  if (!m || Number(m[2]) > 65535) throw new UserError(`${flag} must look like :8080 or 127.0.0.1:8080 (or 0 to disable), got "${text}"`);
  return { host: m[1] === '' ? '0.0.0.0' : m[1]!.replace(/^\[|\]$/g, ''), port: Number(m[2]) };
}

/** Starts `handler` on `bind`; logs `${what} listening` with the address it got. */
export async function listen(handler: RequestListener, bind: BindAddress, what: string, log: Logger): Promise<Server> {
  const server = createServer(handler);
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new UserError(`${what} address ${bind.host}:${bind.port} is in use`) : err),
    );
    server.listen(bind.port, bind.host, resolve);
  });
  const address = server.address();
  log.info({ address: typeof address === 'object' && address ? `${address.address}:${address.port}` : address }, `${what} listening`);
  return server;
}

/** GET /metrics from `registry`; everything else 404. */
export function metricsHandler(registry: Registry): RequestListener {
  return (req, res) => {
    if (req.url === '/metrics') {
      registry.metrics().then(
        (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
        (err: unknown) => res.writeHead(500).end(String(err)),
      );
    } else res.writeHead(404).end();
  };
}
