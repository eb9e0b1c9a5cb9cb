/**
 * A results post's body, in either form, to the in-memory `ResultsRequest` the crawl applies:
 *  - JSON (application/json; every fetcher before the binary frame, and tools): checked against the
 *    protocol schema (its fast path), captures decoded from base64;
 *  - a binary frame (shared/results-frame.ts, RESULTS_FRAME_TYPE; fetchers whose schedule names a frame
 *    version this queue server reads): its JSON part checked exactly as a JSON post is (the same shape
 *    bounds, the same schema), then its captures and index data decoded and checked with the same bounds.
 * Either way a bad body is a 400 that changes nothing: `invalid-body` (the schema's words), or
 * `invalid-frame` with the frame's own code (`FRAME_TRUNCATED`, `FRAME_BAD_UTF8`, ...) in `frameCode`.
 */
import { resultsFromJson, resultsRequestSchema, type ResultsRequest } from '../../shared/protocol.js';
import { attachResultsParts, FrameError, openResultsFrame } from '../../shared/results-frame.js';
import { HttpError, parseBody } from './http-errors.js';
import { FrameBody, parseBoundedJson } from './request-auth.js';

/** `body` as the signed-request middleware left it (request-auth.ts), `signedFetcherId` the fetcher id it verified. */
export function readResultsBody(body: unknown, signedFetcherId: string | undefined): ResultsRequest {
  if (!(body instanceof FrameBody)) return resultsFromJson(parseBody(resultsRequestSchema, body));
  try {
    const opened = openResultsFrame(body.bytes);
    const json = parseBoundedJson(opened.json, body.jsonBounds);
    const checked = parseBody(resultsRequestSchema, json.value);
    // Step 13 of request-auth.ts, for a body it could not read.
    if (signedFetcherId !== undefined && checked.fetcherId !== signedFetcherId) {
      throw new HttpError(400, 'fetcher-id-mismatch', 'the body\'s fetcherId differs from the signed X-Petrel-Fetcher-Id');
    }
    return attachResultsParts(body.bytes, opened, checked, body.jsonBounds.maxTokens - json.tokens);
  } catch (error) {
    if (error instanceof FrameError) throw new HttpError(400, 'invalid-frame', `results frame refused: ${error.message.slice(0, 400)}`, { details: { frameCode: error.code } });
    throw error;
  }
}
