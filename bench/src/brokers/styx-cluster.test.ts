import { describe, expect, it } from 'vitest';
import type { ClusterJson, ClusterMemberJson } from './styx-cluster.ts';
import { clusterProblem, formationProblem } from './styx-cluster.ts';

const NAMES = ['n1', 'n2', 'n3'];

function member(name: string, over: Partial<ClusterMemberJson> = {}): ClusterMemberJson {
  return { name, running: true, metadata_role: 'voter', ...over };
}

function view(self: string, members: ClusterMemberJson[], leader: string | null = 'id-1'): ClusterJson {
  return { self: { name: self }, metadata_leader: leader === null ? null : { id: leader }, members };
}

const formed = (self: string): ClusterJson =>
  view(
    self,
    NAMES.map((n) => member(n)),
  );

describe('formationProblem', () => {
  it('finds none once every node is a running voter and a leader is known', () => {
    expect(formationProblem(formed('n1'), NAMES)).toBeUndefined();
  });

  it('names a node not listed yet', () => {
    expect(formationProblem(view('n1', [member('n1'), member('n2')]), NAMES)).toContain('n3');
  });

  it('names a member not running', () => {
    const answer = view('n1', [member('n1'), member('n2', { running: false }), member('n3')]);
    expect(formationProblem(answer, NAMES)).toContain('n2 not running');
  });

  it('waits for learners to be promoted', () => {
    const answer = view('n1', [member('n1'), member('n2'), member('n3', { metadata_role: 'learner' })]);
    expect(formationProblem(answer, NAMES)).toContain('2 of 3 metadata voters');
  });

  it('wants at most 5 voters: a sixth member stays a learner', () => {
    const six = ['n1', 'n2', 'n3', 'n4', 'n5', 'n6'];
    const members = six.map((n) => member(n, n === 'n6' ? { metadata_role: 'learner' } : {}));
    expect(formationProblem(view('n1', members), six)).toBeUndefined();
  });

  it('wants a metadata leader', () => {
    expect(
      formationProblem(
        view(
          'n1',
          NAMES.map((n) => member(n)),
          null,
        ),
        NAMES,
      ),
    ).toContain('no metadata leader');
  });
});

describe('clusterProblem', () => {
  it('finds none when every view is formed with the same leader', () => {
    expect(clusterProblem(NAMES.map(formed), NAMES)).toBeUndefined();
  });

  it('reports the first view that is not formed', () => {
    const late = view('n3', [member('n1'), member('n3')]);
    expect(clusterProblem([formed('n1'), formed('n2'), late], NAMES)).toContain('n3 does not list n2');
  });

  it('reports views that disagree on the leader', () => {
    const other = view(
      'n2',
      NAMES.map((n) => member(n)),
      'id-2',
    );
    expect(clusterProblem([formed('n1'), other, formed('n3')], NAMES)).toContain(
      'different metadata leaders',
    );
  });
});
