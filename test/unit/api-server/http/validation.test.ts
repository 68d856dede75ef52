// Every part of a request a route declares a schema for is validated, and a failure is problem+json.
import Fastify from 'fastify';
import Type from 'typebox';
import { describe, expect, it } from 'vitest';
import { problemAnswers } from '../../../../api-server/http/problem.ts';

async function app() {
  const server = Fastify();
  await server.register(problemAnswers);
  server.post(
    '/things/:id',
    {
      schema: {
        params: Type.Object({ id: Type.Integer({ minimum: 1 }) }),
        querystring: Type.Object({ mode: Type.Enum(['a', 'b'], { default: 'a' }) }, { additionalProperties: false }),
        body: Type.Object({ name: Type.String({ minLength: 2 }) }),
      },
    },
    async (req) => ({ params: req.params, query: req.query, body: req.body }),
  );
  await server.ready();
  return server;
}

describe('request validation', () => {
  it('passes and coerces valid parts', async () => {
    const res = await (await app()).inject({ method: 'POST', url: '/things/7?mode=b', payload: { name: 'ok' } });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ params: { id: 7 }, query: { mode: 'b' }, body: { name: 'ok' } });
  });

  it('refuses a bad body with problem+json naming the field', async () => {
    const res = await (await app()).inject({ method: 'POST', url: '/things/7', payload: { name: 'x' } });
    expect(res.statusCode).toBe(400);
    expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
    expect(res.json()).toMatchObject({ status: 400, errors: [{ name: 'body/name', allowed: 'a string of at least 2 characters' }] });
  });

  it('refuses bad path parameters', async () => {
    const res = await (await app()).inject({ method: 'POST', url: '/things/0', payload: { name: 'ok' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({ errors: [{ name: 'params/id', allowed: 'an integer >= 1' }] });
  });

  it('refuses a bad query string with every problem and what is allowed', async () => {
    const res = await (await app()).inject({ method: 'POST', url: '/things/7?mode=c&x=1', payload: { name: 'ok' } });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      title: 'Invalid query parameter',
      errors: [
        { name: 'mode', reason: 'unknown value "c"', allowed: 'one of: a, b' },
        { name: 'x', reason: 'unknown parameter' },
      ],
    });
  });
});
