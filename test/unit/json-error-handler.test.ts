/**
 * The HTTP API's last middleware (queue-server/api/http-errors.ts): errors answered as JSON; a broken
 * invariant answered 500 without details and logged once, with its stack, through the process's
 * logger in either form, naming the method and path but never the query string.
 */
import express from 'express';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { HttpError, jsonErrorHandler } from '../../queue-server/api/http-errors.js';
import { createLogger, type LogFormat } from '../../shared/logger.js';

function appLoggingTo(format: LogFormat, lines: string[]): express.Express {
  const app = express();
  app.get('/broken', () => {
    throw new Error('invariant broken: frontier size went negative');
  });
  app.get('/refused', () => {
    throw new HttpError(409, 'crawl-running', 'a crawl is running: stop it first');
  });
  app.use(jsonErrorHandler(createLogger({ role: 'queue-server', level: 'info', format, write: (line) => lines.push(line) })));
  return app;
}

describe('the JSON error handler', () => {
  for (const format of ['human', 'json'] as const) {
    it(`answers a broken invariant 500 without details and logs it with its stack (${format})`, async () => {
      const lines: string[] = [];
      const answer = await request(appLoggingTo(format, lines)).get('/broken?token=secret-in-query');
      expect(answer.status).toBe(500);
      expect(answer.body).toEqual({ error: { code: 'internal', message: 'internal error' } });
      expect(JSON.stringify(answer.body)).not.toContain('frontier');
      const text = lines.join('');
      expect(text).toContain('invariant broken: frontier size went negative');
      expect(text).toMatch(/at .*json-error-handler\.test\.ts/);
      expect(text).toContain('GET /broken');
      expect(text).not.toContain('secret-in-query');
      if (format === 'json') {
        const records = lines.join('').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
        expect(records.filter((record) => record.event === 'internal-error')).toHaveLength(1);
        expect(records[0]).toMatchObject({ level: 50, role: 'queue-server', event: 'internal-error', method: 'GET', path: '/broken' });
      }
    });
  }

  it('answers a refusal with its status and code and logs nothing', async () => {
    const lines: string[] = [];
    const answer = await request(appLoggingTo('json', lines)).get('/refused');
    expect(answer.status).toBe(409);
    expect(answer.body).toEqual({ error: { code: 'crawl-running', message: 'a crawl is running: stop it first' } });
    expect(lines).toEqual([]);
  });
});
