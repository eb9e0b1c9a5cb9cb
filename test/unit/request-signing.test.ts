/**
 * The request-signing scheme (shared/request-signing.ts) as pure functions, and the nonce memory the
 * queue server checks replays against (queue-server/auth/nonce-memory.ts). The known-answer vectors
 * (the Content-Digest and the signature) were computed with openssl (`openssl dgst -sha256`, with
 * `-hmac` for the signature), independently of this code.
 */
import { describe, expect, it } from 'vitest';
import { NonceMemory } from '../../queue-server/auth/nonce-memory.js';
import {
  computeSignature,
  contentDigestOf,
  declaredSha256,
  keyIdOf,
  newInstanceId,
  newNonce,
  readSignatureHeaders,
  SIGNATURE_HEADERS,
  signatureMatches,
  signRequest,
  stringToSign,
  type SignedParts,
} from '../../shared/request-signing.js';

const SECRET = 'test-secret-0123456789';
const BODY = Buffer.from('{"a":1}');
const INSTANCE = 'kq1AAAAAAAAAAAAAAAAAAA';
const PARTS: SignedParts = {
  instance: INSTANCE,
  method: 'POST',
  path: '/api/v1/claim',
  contentType: 'application/json',
  contentEncoding: '',
  contentLength: BODY.length,
  contentDigest: contentDigestOf(BODY),
  timestamp: 1_700_000_000_000,
  nonce: 'AAAAAAAAAAAAAAAAAAAAAA',
  fetcherId: 'fetcher-1',
};

describe('the string to sign and the signature', () => {
  it('joins scheme, instance, method, target, the body\'s fields (type, encoding, length, digest), timestamp, nonce and fetcher id, one per line', () => {
    expect(stringToSign(PARTS)).toBe(
      [
        'PETREL-HMAC-SHA256-2', INSTANCE, 'POST', '/api/v1/claim', 'application/json', '', '7',
        'sha-256=:AVq9f1zFei3ZS3WQ8ErYCEJzkF7jPsXOvq5iJ2qX+GI=:', '1700000000000', 'AAAAAAAAAAAAAAAAAAAAAA', 'fetcher-1',
      ].join('\n'),
    );
  });

  it('declares the body by its RFC 9530 Content-Digest (sha-256, standard base64 between colons)', () => {
    // printf '{"a":1}' | openssl dgst -sha256 -binary | base64
    expect(contentDigestOf(BODY)).toBe('sha-256=:AVq9f1zFei3ZS3WQ8ErYCEJzkF7jPsXOvq5iJ2qX+GI=:');
    expect(declaredSha256(contentDigestOf(BODY))!.toString('hex')).toBe('015abd7f5cc57a2dd94b7590f04ad8084273905ee33ec5cebeae62276a97f862');
    expect(declaredSha256('sha-512=:AVq9f1zFei3ZS3WQ8ErYCEJzkF7jPsXOvq5iJ2qX+GI=:')).toBeNull();
    expect(declaredSha256('sha-256=:AVq9f1zFei3ZS3WQ8ErYCEJzkF7jPsXOvq5iJ2qX+GI=:, md5=:x:')).toBeNull();
  });

  it('is HMAC-SHA-256 under the secret, base64url (the openssl vector)', () => {
    // printf (the string to sign) | openssl dgst -sha256 -hmac test-secret-0123456789 -binary | base64, made url-safe
    expect(computeSignature(SECRET, PARTS)).toBe('r-lXR-bB4PPB44gUZHy4xLY1n9qo1kf3-mJlotnHOCE');
    expect(signatureMatches(SECRET, PARTS, 'r-lXR-bB4PPB44gUZHy4xLY1n9qo1kf3-mJlotnHOCE')).toBe(true);
  });

  it.each([
    ['instance', { instance: 'kq1AAAAAAAAAAAAAAAAAAB' }],
    ['method', { method: 'GET' }],
    ['path', { path: '/api/v1/results' }],
    ['query', { path: '/api/v1/claim?x=1' }],
    ['content type', { contentType: 'text/plain' }],
    ['content encoding', { contentEncoding: 'gzip' }],
    ['content length', { contentLength: 8 }],
    ['body', { contentDigest: contentDigestOf(Buffer.from('{"a":2}')) }],
    ['timestamp', { timestamp: PARTS.timestamp + 1 }],
    ['nonce', { nonce: 'AAAAAAAAAAAAAAAAAAAAAB' }],
    ['fetcher id', { fetcherId: 'fetcher-2' }],
  ])('no longer matches when the %s changes', (_what, change) => {
    const signature = computeSignature(SECRET, PARTS);
    expect(signatureMatches(SECRET, { ...PARTS, ...change }, signature)).toBe(false);
  });

  it('does not match under another secret, or when malformed or truncated', () => {
    const signature = computeSignature(SECRET, PARTS);
    expect(signatureMatches(`${SECRET}x`, PARTS, signature)).toBe(false);
    expect(signatureMatches(SECRET, PARTS, signature.slice(0, -1))).toBe(false);
    expect(signatureMatches(SECRET, PARTS, `${signature}A`)).toBe(false);
    expect(signatureMatches(SECRET, PARTS, `${signature.slice(0, -1)}+`)).toBe(false);
    expect(signatureMatches(SECRET, PARTS, '')).toBe(false);
  });

  it('refuses to sign a field that could smuggle a line break or is malformed', () => {
    expect(() => stringToSign({ ...PARTS, path: '/api/v1/claim\nPOST' })).toThrow(/request target/);
    expect(() => stringToSign({ ...PARTS, path: 'api/v1/claim' })).toThrow(/request target/);
    expect(() => stringToSign({ ...PARTS, fetcherId: 'a\nb' })).toThrow(/fetcher id/);
    expect(() => stringToSign({ ...PARTS, method: 'post' })).toThrow(/method/);
    expect(() => stringToSign({ ...PARTS, nonce: 'short' })).toThrow(/nonce/);
    expect(() => stringToSign({ ...PARTS, timestamp: -1 })).toThrow(/timestamp/);
    expect(() => stringToSign({ ...PARTS, contentDigest: 'abc' })).toThrow(/digest/);
    expect(() => stringToSign({ ...PARTS, contentType: 'application/json\nX: y' })).toThrow(/Content-Type/);
    expect(() => stringToSign({ ...PARTS, contentLength: -1 })).toThrow(/content length/);
    expect(() => stringToSign({ ...PARTS, instance: 'x' })).toThrow(/instance/);
  });
});

describe('signRequest', () => {
  const sign = () => signRequest({ secret: SECRET, instance: INSTANCE, method: 'POST', path: '/api/v1/claim', body: BODY, contentType: 'application/json', fetcherId: 'fetcher-1', now: PARTS.timestamp });

  it('gives headers a server can read back and verify, with a fresh 128-bit nonce each time', () => {
    const first = sign();
    const second = sign();
    expect(first[SIGNATURE_HEADERS.nonce]).not.toBe(second[SIGNATURE_HEADERS.nonce]);
    expect(Buffer.from(first[SIGNATURE_HEADERS.nonce]!, 'base64url')).toHaveLength(16);
    expect(first['content-type']).toBe('application/json');
    expect(first[SIGNATURE_HEADERS.contentDigest]).toBe(contentDigestOf(BODY));
    const read = readSignatureHeaders(first);
    if ('problem' in read) throw new Error(read.problem);
    expect(read).toMatchObject({ timestamp: PARTS.timestamp, fetcherId: 'fetcher-1', keyId: keyIdOf(SECRET), instance: INSTANCE, contentDigest: contentDigestOf(BODY) });
    const parts = { ...PARTS, nonce: read.nonce };
    expect(signatureMatches(SECRET, parts, read.signature)).toBe(true);
    // The secret itself is in no header.
    expect(Object.values(first).join('\n')).not.toContain(SECRET);
  });

  it('signs a GET without a body: no Content-Digest, length 0', () => {
    const headers = signRequest({ secret: SECRET, instance: INSTANCE, method: 'GET', path: '/api/status', fetcherId: 'p', now: 1 });
    expect(headers[SIGNATURE_HEADERS.contentDigest]).toBeUndefined();
    const read = readSignatureHeaders(headers);
    if ('problem' in read) throw new Error(read.problem);
    const parts: SignedParts = { instance: INSTANCE, method: 'GET', path: '/api/status', contentType: '', contentEncoding: '', contentLength: 0, contentDigest: '', timestamp: 1, nonce: read.nonce, fetcherId: 'p' };
    expect(signatureMatches(SECRET, parts, read.signature)).toBe(true);
  });

  it('names the secret by a key id that reveals nothing of it and differs between secrets', () => {
    expect(keyIdOf(SECRET)).toMatch(/^[0-9a-f]{16}$/);
    expect(keyIdOf(SECRET)).toBe(keyIdOf(SECRET));
    expect(keyIdOf(`${SECRET}x`)).not.toBe(keyIdOf(SECRET));
  });

  it('draws nonces and instance ids without repeats', () => {
    const nonces = new Set(Array.from({ length: 10_000 }, () => newNonce()));
    expect(nonces.size).toBe(10_000);
    const instances = new Set(Array.from({ length: 10_000 }, () => newInstanceId()));
    expect(instances.size).toBe(10_000);
  });
});

describe('readSignatureHeaders', () => {
  const good = signRequest({ secret: SECRET, instance: INSTANCE, method: 'POST', path: '/x', body: BODY, fetcherId: 'f-1', now: 1 });

  it.each([
    ['no signature', SIGNATURE_HEADERS.signature, undefined, /unsigned request/],
    ['a short signature', SIGNATURE_HEADERS.signature, 'abc', /X-Petrel-Signature/],
    ['no timestamp', SIGNATURE_HEADERS.timestamp, undefined, /X-Petrel-Timestamp/],
    ['a timestamp in seconds with a fraction', SIGNATURE_HEADERS.timestamp, '1.5', /X-Petrel-Timestamp/],
    ['a short nonce', SIGNATURE_HEADERS.nonce, 'abc', /X-Petrel-Nonce/],
    ['a fetcher id with a space', SIGNATURE_HEADERS.fetcherId, 'a b', /X-Petrel-Fetcher-Id/],
    ['a malformed key id', SIGNATURE_HEADERS.keyId, 'xyz', /X-Petrel-Key-Id/],
    ['a malformed instance', SIGNATURE_HEADERS.instance, 'xyz', /X-Petrel-Instance/],
    ['a digest of another algorithm', SIGNATURE_HEADERS.contentDigest, 'md5=:AAAA:', /Content-Digest/],
  ])('explains %s', (_what, header, value, problem) => {
    const headers: Record<string, string | undefined> = { ...good, [header]: value };
    const read = readSignatureHeaders(headers);
    expect('problem' in read && read.problem).toMatch(problem);
  });

  it('takes a missing key id or instance as none', () => {
    const { [SIGNATURE_HEADERS.keyId]: _omitted, [SIGNATURE_HEADERS.instance]: _instance, ...rest } = good;
    expect(readSignatureHeaders(rest)).toMatchObject({ keyId: null, instance: null });
  });
});

describe('nonce memory', () => {
  const WINDOW = 300_000;

  it('remembers a nonce and calls it again a replay', () => {
    const memory = new NonceMemory({ windowMs: WINDOW, capacity: 10 });
    expect(memory.remember('n1', 1_000_000, 1_000_000)).toBe('remembered');
    expect(memory.seen('n1', 1_000_000)).toBe(true);
    expect(memory.remember('n1', 1_000_000, 1_000_500)).toBe('replayed');
    expect(memory.remember('n2', 1_000_000, 1_000_500)).toBe('remembered');
    expect(memory.size).toBe(2);
  });

  it('keeps a nonce as long as its timestamp is accepted, and forgets it after', () => {
    const memory = new NonceMemory({ windowMs: WINDOW, capacity: 10, bucketMs: 30_000 });
    const t = 1_000_000;
    memory.remember('n', t, t);
    // Still within the window of its timestamp: remembered.
    expect(memory.remember('n', t, t + WINDOW)).toBe('replayed');
    // Far past it (the timestamp check refuses such a request anyway): the memory is freed.
    memory.forgetExpired(t + WINDOW + 30_000);
    expect(memory.size).toBe(0);
  });

  it('never forgets a nonce whose timestamp could still be accepted, whatever the bucket boundaries', () => {
    const memory = new NonceMemory({ windowMs: 1000, capacity: 1000, bucketMs: 300 });
    for (let t = 0; t < 3000; t += 7) {
      memory.remember(`n${t}`, t, t);
      for (let back = 0; back <= 1000; back += 97) {
        const stamp = t - back;
        if (stamp >= 0 && stamp % 7 === 0) expect(memory.seen(`n${stamp}`, stamp), `t=${t} stamp=${stamp}`).toBe(true);
      }
    }
  });

  it('answers full at capacity without storing, and has room again once old nonces expire', () => {
    const memory = new NonceMemory({ windowMs: 1000, capacity: 3, bucketMs: 100 });
    for (const n of ['a', 'b', 'c']) expect(memory.remember(n, 0, 0)).toBe('remembered');
    expect(memory.remember('d', 0, 10)).toBe('full');
    expect(memory.seen('d', 0)).toBe(false);
    // A replay is still a replay when memory is full.
    expect(memory.remember('a', 0, 10)).toBe('replayed');
    expect(memory.remember('d', 1200, 1200)).toBe('remembered');
    expect(memory.size).toBe(1);
  });
});
