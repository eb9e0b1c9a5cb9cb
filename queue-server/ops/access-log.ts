/**
 * The access log of the HTTP API, at debug level (event `http`): method, path without its query,
 * status, duration, response bytes, the signing fetcher's id. Nothing else of the request: no header
 * (Authorization, Cookie, X-Petrel-Signature), no query string, no body, so no secret can reach it.
 */
import type { NextFunction, Request, Response } from 'express';
import type { Logger } from '../../shared/logger.js';
import { SIGNATURE_HEADERS } from '../../shared/request-signing.js';

export function accessLog(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    if (!logger.isLevelEnabled('debug')) return next();
    const began = performance.now();
    const path = (req.originalUrl ?? req.url).split('?')[0]!.slice(0, 200);
    const fetcherId = req.headers[SIGNATURE_HEADERS.fetcherId];
    res.once('close', () => {
      const ms = performance.now() - began;
      logger.debug(
        {
          event: 'http',
          method: req.method,
          path,
          status: res.statusCode,
          ms: Math.round(ms * 10) / 10,
          bytes: Number(res.getHeader('content-length') ?? 0),
          ...(typeof fetcherId === 'string' ? { fetcherId: fetcherId.slice(0, 64) } : {}),
          ...(res.writableFinished ? {} : { aborted: true }),
        },
        `${req.method} ${path} ${res.statusCode}`,
      );
    });
    next();
  };
}
