/** What a command prints for an error it stops on: a message for people, or an internal error named as a bug. */
import { describe, expect, it } from 'vitest';
import { describeError } from '../../cli/options.js';
import { ClusterError } from '../../queue-server/cluster/membership.js';

describe('describeError', () => {
  it('shows a plain Error and a refusal to join a cluster as they are written, and a broken invariant as a bug', () => {
    expect(describeError(new Error('the data directory is in use'))).toEqual({ message: 'the data directory is in use', internal: false });
    const refusal = new ClusterError('cluster-partitions', 'the cluster "default" has 2 partitions, not --partitions 3');
    expect(describeError(refusal)).toEqual({ message: 'the cluster "default" has 2 partitions, not --partitions 3', internal: false });
    const bug = describeError(new TypeError('x is undefined'));
    expect(bug.internal).toBe(true);
    expect(bug.message).toMatch(/^internal error \(TypeError, x is undefined\): a bug in Petrel/);
  });
});
